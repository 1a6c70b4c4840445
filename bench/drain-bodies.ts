/**
 * The report bodies of the drain benches (bench/drain-worker.ts embedded, bench/pg-drain.ts PostgreSQL):
 * bench/widget.lua's 64 widget bodies (a burst of one broken checkout: a few huge clusters), or the
 * labelled corpora's reports (`corpusBodies`: long varied text, paraphrase clusters, many singletons).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { prng } from '../test/sanitize-fixtures'
import type { Corpus } from '../test/fixtures/corpus'

const severities = ['low', 'medium', 'high']
const pages = ['/cart', '/checkout', '/p/red-shoes', '/search?q=lamp', '/account/orders', '/login']
/** bench/widget.lua's 64 bodies, byte for byte in content. */
export const bodies = Array.from({ length: 64 }, (_, k) => {
  const i = k + 1
  const ts = 1763880000000 + i * 1000
  return JSON.stringify({
    text:
      `The checkout button does nothing when I click it after adding two items to the cart (report ${i}). ` +
      'I tried twice on Firefox and once on my phone; the spinner keeps turning and the order never goes through.',
    url: `https://shop.example${pages[i % pages.length]}`,
    severity: severities[i % 3],
    viewport: { w: 1440, h: 900, dpr: 2 },
    consoleLogs: [
      { level: 'log', message: 'app booted in 412ms', ts },
      { level: 'info', message: 'cart loaded: 2 items', ts: ts + 10 },
      { level: 'warn', message: 'slow network: /api/cart took 2300ms', ts: ts + 20 },
      { level: 'error', message: "TypeError: Cannot read properties of undefined (reading 'total')", ts: ts + 30 },
      { level: 'error', message: 'POST /api/checkout 500 Internal Server Error', ts: ts + 40 },
    ],
    metadata: { release: '2026.11.3', locale: 'de-DE', plan: 'pro', cartItems: 2 },
  })
})

/** The corpora's reports as widget bodies (DRAIN_CORPUS=1), shuffled once with a fixed seed. */
export function corpusBodies(n: number): string[] {
  const rand = prng(11)
  const reports = ['dedup-corpus.json', 'real-corpus.json']
    .flatMap((f) => (JSON.parse(readFileSync(join(import.meta.dir, '..', 'test', 'fixtures', f), 'utf8')) as Corpus).apps.flatMap((a) => a.reports))
    .sort(() => rand() - 0.5)
  return Array.from({ length: n }, (_, k) => {
    const r = reports[k % reports.length]
    const pass = Math.floor(k / reports.length)
    const ts = 1763880000000 + k * 1000
    return JSON.stringify({
      text: (pass === 0 ? r.text : `${r.text}\nSeen again by user ${pass} on ${pages[pass % pages.length]}.`).slice(0, 20_000),
      url: r.url ?? `https://shop.example${pages[k % pages.length]}`,
      severity: severities[k % 3],
      viewport: { w: 1440, h: 900, dpr: 2 },
      ...(r.consoleError ? { consoleLogs: [{ level: 'error', message: r.consoleError, ts }] } : {}),
      ...(r.component ? { componentTarget: { name: r.component } } : {}),
    })
  })
}
