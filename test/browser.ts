/** Launches Debian's Chromium through playwright-core (no browser download), headless, for page tests. */
import { chromium, type Browser } from 'playwright-core'
import { existsSync } from 'node:fs'

export const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p))

export async function launchBrowser(): Promise<Browser> {
  if (!CHROMIUM) throw new Error('Chromium not found: apt-get install chromium (.ci/run does this)')
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
}
