/**
 * The dashboard's session cookie in real Chromium against the compiled binary: `fixloop_admin` over plain
 * http (the default http://127.0.0.1:8080), `__Host-fixloop_admin` (Secure) when the dashboard is served
 * over https; and a second session cookie planted by someone else (here: the attacker's own valid session,
 * set for a longer path so that Chromium sends it first) never signs the victim in as the attacker.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { BROWSER_SKIP, launchBrowser } from './browser'
import { call, runBinary, tempDir } from './harness'
import { spawnWithStdout, writePasswordFile, type SpawnedServer } from './dashboard-helpers'

const VICTIM = 'victim@example.com'
const ATTACKER = 'attacker@example.com'
const PASSWORD = 'correct horse battery'

interface Setup {
  dir: string
  server: SpawnedServer
  /** The attacker's own session token (a valid one: they signed in to their own account). */
  attackerToken: string
}

async function setUp(env: Record<string, string>): Promise<Setup> {
  const dir = tempDir('fixloop-cookie-')
  const server = await spawnWithStdout(dir, env)
  const file = writePasswordFile(dir, 'pw', PASSWORD)
  for (const email of [VICTIM, ATTACKER]) {
    const r = await runBinary(['admin', 'create', '--email', email, '--password-file', file, '--data-dir', dir, '--json'], { FIXLOOP_LOG_LEVEL: 'silent' })
    expect(r.code).toBe(0)
  }
  const signIn = await call(server.url, 'POST', '/admin/api/session', { body: { email: ATTACKER, password: PASSWORD } })
  expect(signIn.status).toBe(200)
  const attackerToken = /=([^;]+);/.exec(signIn.headers.get('set-cookie')!)![1]
  return { dir, server, attackerToken }
}

/** Signs in from the page itself, so Chromium's own cookie rules decide what is kept. */
async function signInFromPage(page: Page, base: string): Promise<number> {
  await page.goto(base + '/admin')
  return page.evaluate(async (body) => (await fetch('/admin/api/session', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).status, { email: VICTIM, password: PASSWORD })
}

/** GET /admin/api/session from the page: who the browser's cookies make us. */
interface WhoAmI {
  status: number
  body: { email?: string; error?: { code: string; details?: { ambiguousCookie?: boolean } } }
}

function whoAmI(page: Page): Promise<WhoAmI> {
  return page.evaluate(async () => {
    const r = await fetch('/admin/api/session')
    return { status: r.status, body: (await r.json()) as WhoAmI['body'] }
  })
}

/** The attacker's session token, planted under `name` for /admin (longer than the real cookie's /, so sent first). */
async function plant(context: BrowserContext, base: string, name: string, token: string, secure: boolean): Promise<void> {
  await context.addCookies([{ name, value: token, domain: new URL(base).hostname, path: '/admin', httpOnly: true, secure, sameSite: 'Lax' }])
}

let browser: Browser

beforeAll(async () => {
  if (!BROWSER_SKIP) browser = await launchBrowser()
})
afterAll(() => browser?.close())

describe.skipIf(!!BROWSER_SKIP)('plain http (the default)', () => {
  let s: Setup
  beforeAll(async () => {
    s = await setUp({})
  })
  afterAll(async () => {
    await s?.server.stop()
    if (s) rmSync(s.dir, { recursive: true, force: true })
  })

  test('the cookie is fixloop_admin, HttpOnly, SameSite=Lax, not Secure; Chromium keeps it and signs in', async () => {
    const context = await browser.newContext()
    try {
      const page = await context.newPage()
      expect(await signInFromPage(page, s.server.url)).toBe(200)
      const cookies = await context.cookies()
      expect(cookies.map((c) => c.name)).toEqual(['fixloop_admin'])
      expect(cookies[0]).toMatchObject({ path: '/', httpOnly: true, secure: false, sameSite: 'Lax' })
      expect((await whoAmI(page)).body.email).toBe(VICTIM)
    } finally {
      await context.close()
    }
  })

  test('a second, planted session cookie is refused: never the attacker, and the page says why', async () => {
    const context = await browser.newContext()
    try {
      const page = await context.newPage()
      expect(await signInFromPage(page, s.server.url)).toBe(200)
      await plant(context, s.server.url, 'fixloop_admin', s.attackerToken, false)
      const me = await whoAmI(page)
      expect([me.status, me.body.error?.code, me.body.error?.details?.ambiguousCookie]).toEqual([401, 'not_signed_in', true])
      await page.goto(s.server.url + '/admin')
      await page.getByRole('alert').waitFor()
      expect(await page.getByRole('alert').textContent()).toContain('Two session cookies')
      expect(await page.content()).not.toContain(ATTACKER)
      // The /v1 routes a session may call refuse two cookies the same way.
      await context.addCookies([{ name: 'fixloop_admin', value: s.attackerToken, domain: '127.0.0.1', path: '/v1', httpOnly: true, sameSite: 'Lax' }])
      const v1 = await page.evaluate(async () => (await fetch('/v1/feedback', { headers: { 'x-fixloop-org': '0'.repeat(24) } })).status)
      expect(v1).toBe(401)
    } finally {
      await context.close()
    }
  })
})

describe.skipIf(!!BROWSER_SKIP)('served over https (FIXLOOP_PUBLIC_URL https)', () => {
  let s: Setup
  beforeAll(async () => {
    s = await setUp({ FIXLOOP_PUBLIC_URL: 'https://fixloop.example' })
  })
  afterAll(async () => {
    await s?.server.stop()
    if (s) rmSync(s.dir, { recursive: true, force: true })
  })

  test('the cookie is __Host-fixloop_admin, Secure, Path=/, no Domain; Chromium keeps it and signs in', async () => {
    const r = await call(s.server.url, 'POST', '/admin/api/session', { body: { email: VICTIM, password: PASSWORD } })
    expect(r.headers.get('set-cookie')).toMatch(/^__Host-fixloop_admin=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+; Secure$/)
    const context = await browser.newContext()
    try {
      const page = await context.newPage()
      // Chromium treats loopback as a secure context, so it keeps a Secure cookie over http://127.0.0.1.
      expect(await signInFromPage(page, s.server.url)).toBe(200)
      const cookies = await context.cookies()
      expect(cookies.map((c) => c.name)).toEqual(['__Host-fixloop_admin'])
      expect(cookies[0]).toMatchObject({ path: '/', httpOnly: true, secure: true, sameSite: 'Lax' })
      expect((await whoAmI(page)).body.email).toBe(VICTIM)
    } finally {
      await context.close()
    }
  })

  test('a planted fixloop_admin (no prefix) is ignored: the victim stays themselves', async () => {
    const context = await browser.newContext()
    try {
      const page = await context.newPage()
      expect(await signInFromPage(page, s.server.url)).toBe(200)
      await plant(context, s.server.url, 'fixloop_admin', s.attackerToken, true)
      expect((await context.cookies()).length).toBe(2)
      expect((await whoAmI(page)).body.email).toBe(VICTIM)
      await page.goto(s.server.url + '/admin')
      await page.getByRole('heading', { name: 'Orgs' }).waitFor()
      expect(await page.content()).not.toContain(ATTACKER)
    } finally {
      await context.close()
    }
  })

  test('without its own cookie the planted one signs in nobody', async () => {
    const context = await browser.newContext()
    try {
      const page = await context.newPage()
      await page.goto(s.server.url + '/admin')
      await plant(context, s.server.url, 'fixloop_admin', s.attackerToken, true)
      expect((await whoAmI(page)).status).toBe(401)
    } finally {
      await context.close()
    }
  })
})
