/**
 * Delivery of the widget by the compiled binary: size budgets (loader ≤ 8 KB gzip, everything ≤ 40 KB
 * gzip), ES2019 syntax, cache and cross-origin headers of /widget.js and the hashed UI file, and
 * `fixloop serve --demo` serving a strict-CSP demo page where the widget works.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { transform } from 'esbuild'
import { BINARY, ROOT, call, eventually, freePort, spawnServer, tempDir } from './harness'
import { ensureBinary } from './helpers-lifecycle'
import { launchBrowser } from './browser'
import { widget } from './widget-fixture'

const DIST = join(ROOT, 'widget', 'dist')
let server: Awaited<ReturnType<typeof spawnServer>>
let dataDir: string

beforeAll(async () => {
  ensureBinary()
  dataDir = tempDir('fixloop-widget-delivery-')
  server = await spawnServer(dataDir)
})
afterAll(async () => {
  await server?.stop()
  rmSync(dataDir, { recursive: true, force: true })
})

const uiFile = () => JSON.parse(readFileSync(join(DIST, 'manifest.json'), 'utf8')).uiFile as string
const replayFile = () => JSON.parse(readFileSync(join(DIST, 'manifest.json'), 'utf8')).replayFile as string

const localeFiles = () => JSON.parse(readFileSync(join(DIST, 'locales.json'), 'utf8')) as Record<string, string>

test('size budgets: loader ≤ 8 KB gzip, loader + UI (screenshot renderer included) + the largest locale table ≤ 40 KB gzip', () => {
  const loader = gzipSync(readFileSync(join(DIST, 'widget.js')), { level: 9 }).length
  const ui = gzipSync(readFileSync(join(DIST, 'ui.js')), { level: 9 }).length
  const table = Math.max(...Object.values(localeFiles()).map((json) => gzipSync(json, { level: 9 }).length))
  console.log(`widget.js ${loader} B gzip, UI ${ui} B gzip, largest locale table ${table} B gzip, total ${loader + ui + table} B gzip`)
  expect(loader).toBeLessThanOrEqual(8 * 1024)
  expect(loader + ui + table).toBeLessThanOrEqual(40 * 1024)
  // The UI really carries the DOM renderer (not left out to meet the budget).
  expect(readFileSync(join(DIST, 'ui.js'), 'utf8')).toContain('foreignObject')
})

test('both files are ES2019: esbuild lowering them to es2019 changes nothing about their syntax level', async () => {
  for (const file of ['widget.js', 'ui.js']) {
    const code = readFileSync(join(DIST, file), 'utf8')
    // Fails if the code had syntax esbuild cannot express in ES2019 (e.g. BigInt literals).
    await transform(code, { target: 'es2019' })
    expect(code).not.toMatch(/\?\?|\?\.[\w$(\[]|\|\|=|&&=/)
  }
})

test('GET /widget.js from the binary: JS content type, short cache + ETag, cross-origin readable', async () => {
  const r = await fetch(`${server.url}/widget.js`, { headers: { origin: 'https://customer.example' } })
  expect(r.status).toBe(200)
  expect(r.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
  expect(r.headers.get('cache-control')).toBe('public, max-age=300, stale-while-revalidate=86400')
  expect(r.headers.get('cross-origin-resource-policy')).toBe('cross-origin')
  expect(r.headers.get('access-control-allow-origin')).toBe('*')
  expect(r.headers.get('x-content-type-options')).toBe('nosniff')
  const body = await r.text()
  expect(body).toBe(readFileSync(join(DIST, 'widget.js'), 'utf8'))
  expect(body).toContain(uiFile())
  const etag = r.headers.get('etag')!
  const again = await fetch(`${server.url}/widget.js`, { headers: { 'if-none-match': etag } })
  expect(again.status).toBe(304)
  // A 304 carries the Cache-Control a 200 would (RFC 9110 15.4.5), as /favicon.ico's does: the 5 minutes
  // start again from the revalidation, for a cache that reads them from the 304.
  expect(again.headers.get('cache-control')).toBe('public, max-age=300, stale-while-revalidate=86400')
  expect(again.headers.get('etag')).toBe(etag)
  // If-None-Match compares weakly and may list several tags or "*" (RFC 9110 13.1.2): nginx's gzip turns the
  // ETag weak (W/"…"), and the browser behind it revalidates with that; each was a full 200 every time.
  for (const header of [`W/${etag}`, `"other", ${etag}`, `"other",W/${etag}`, '*']) {
    expect([header, (await fetch(`${server.url}/widget.js`, { headers: { 'if-none-match': header } })).status]).toEqual([header, 304])
  }
  for (const header of ['"other"', `${etag.slice(0, -2)}"`, 'W/"other", "x"']) {
    expect([header, (await fetch(`${server.url}/widget.js`, { headers: { 'if-none-match': header } })).status]).toEqual([header, 200])
  }
})

test('GET /widget/<hash>.js is immutable; any other name is 404 with the envelope', async () => {
  const r = await fetch(`${server.url}/widget/${uiFile()}`)
  expect(r.status).toBe(200)
  expect(r.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
  expect(r.headers.get('cross-origin-resource-policy')).toBe('cross-origin')
  const hash = uiFile().match(/^ui-([0-9a-f]{16})\.js$/)![1]
  expect(new Bun.CryptoHasher('sha256').update(await r.text()).digest('hex').startsWith(hash)).toBe(true)
  for (const name of ['ui-0000000000000000.js', '..%2Fwidget.js', 'x'.repeat(3000)]) {
    const bad = await call(server.url, 'GET', `/widget/${name}`)
    expect(bad.status).toBe(404)
    expect(bad.body.error.code).toBe('not_found')
  }
  const junk = await call(server.url, 'GET', '/widget.js?v=1&x[]=2&y=%00')
  expect(junk.status).toBe(200)
})

test('GET /widget/locale-<tag>-<hash>.json: each table as immutable, cross-origin JSON; other names are 404', async () => {
  const files = localeFiles()
  expect(Object.keys(files)).toHaveLength(23)
  for (const [name, json] of Object.entries(files)) {
    const r = await fetch(`${server.url}/widget/${name}`, { headers: { origin: 'https://customer.example' } })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8')
    expect(r.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    expect(r.headers.get('access-control-allow-origin')).toBe('*')
    expect(r.headers.get('cross-origin-resource-policy')).toBe('cross-origin')
    expect(await r.text()).toBe(json)
  }
  const hash = Object.keys(files)[0].match(/-([0-9a-f]{16})\.json$/)![1]
  for (const name of ['locale-de-0000000000000000.json', `locale-en-${hash}.json`, `locale-xx-${hash}.json`, `locale-DE-${hash}.json`, '__proto__', 'constructor', 'hasOwnProperty', 'locales.json', 'manifest.json']) {
    const bad = await call(server.url, 'GET', `/widget/${name}`)
    expect(bad.status).toBe(404)
    expect(bad.body.error.code).toBe('not_found')
  }
})

test('GET /widget/<replay-hash>.js serves the session recorder, immutable, named by its content hash', async () => {
  const r = await fetch(`${server.url}/widget/${replayFile()}`)
  expect(r.status).toBe(200)
  expect(r.headers.get('content-type')).toContain('text/javascript')
  expect(r.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
  const hash = replayFile().match(/^replay-([0-9a-f]{16})\.js$/)![1]
  expect(new Bun.CryptoHasher('sha256').update(await r.text()).digest('hex').startsWith(hash)).toBe(true)
  // The loader knows the name (it loads the chunk only when the App has replay on).
  expect(await (await fetch(`${server.url}/widget.js`)).text()).toContain(replayFile())
  const bad = await call(server.url, 'GET', '/widget/replay-0000000000000000.js')
  expect(bad.status).toBe(404)
})

test('/openapi.json documents the widget routes', async () => {
  const spec = (await call(server.url, 'GET', '/openapi.json')).body
  expect(spec.paths['/widget.js'].get).toBeDefined()
  expect(spec.paths['/widget/{file}'].get.responses['404']).toBeDefined()
})

test('fixloop serve --demo: creates the demo App, prints how to read reports, serves a strict-CSP page where the widget sends', async () => {
  const dir = tempDir('fixloop-demo-')
  const port = await freePort()
  const proc = Bun.spawn([BINARY, 'serve', '--demo', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dir], {
    env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn' },
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const browser = await launchBrowser()
  try {
    const reader = proc.stdout.getReader()
    let out = ''
    await eventually(async () => {
      const { value } = await reader.read()
      out += new TextDecoder().decode(value)
      return out.includes('curl')
    }, 15_000)
    const base = `http://127.0.0.1:${port}`
    expect(out).toContain(`Demo page: ${base}/demo`)
    const sk = out.match(/Bearer (sk_[A-Za-z0-9_-]+)/)![1]
    const html = await fetch(`${base}/demo`)
    expect(html.headers.get('content-security-policy')).toMatch(/script-src 'nonce-[^']+'; style-src 'self'/)
    const page = await browser.newPage()
    const violations: string[] = []
    await page.exposeFunction('reportViolation', (v: string) => violations.push(v))
    await page.addInitScript(() => document.addEventListener('securitypolicyviolation', (e: any) => (window as any).reportViolation(e.violatedDirective)))
    await page.goto(`${base}/demo`)
    const w = widget(page)
    await page.click('#pay-button')
    // The demo page is on fixloop's own origin: its failing request is still summarised.
    const failing = page.waitForResponse((r) => r.url().includes('/v1/does-not-exist'))
    await page.click('#fail-fetch')
    await failing
    await w.launcher.click()
    await w.text.fill('Demo report')
    await page.locator('fixloop-widget canvas').waitFor({ state: 'visible' })
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
    expect(violations).toEqual([])
    const list = await call(base, 'GET', '/v1/feedback', { auth: sk })
    expect(list.body.data.map((r: any) => r.text)).toEqual(['Demo report'])
    const item = await call(base, 'GET', `/v1/feedback/${list.body.data[0].id}`, { auth: sk })
    expect(item.body.consoleLogs.some((l: any) => l.message.includes('card declined'))).toBe(true)
    const network = item.body.submissionMeta.network.map((n: any) => `${n.method} ${n.url} ${n.status}`)
    expect(network).toEqual([`GET ${base}/v1/does-not-exist?secret= 404`])
  } finally {
    await browser.close()
    proc.kill('SIGTERM')
    await proc.exited
    rmSync(dir, { recursive: true, force: true })
  }
})

test('the build fails when a budget is exceeded', async () => {
  const r = Bun.spawnSync(['bun', 'widget/build.ts'], { cwd: ROOT, env: { ...process.env, FIXLOOP_WIDGET_BUDGET_SCALE: '0.1' }, stdout: 'pipe', stderr: 'pipe' })
  expect(r.exitCode).toBe(1)
  expect(r.stderr.toString()).toContain('widget over budget')
  expect(r.stdout.toString()).toMatch(/widget\.js\s+[\d.]+ KB raw, [\d.]+ KB gzip/)
})

test('the build fails when the replay chunk alone is over its budget, and prints its size', async () => {
  const r = Bun.spawnSync(['bun', 'widget/build.ts'], { cwd: ROOT, env: { ...process.env, FIXLOOP_WIDGET_REPLAY_BUDGET_SCALE: '0.1' }, stdout: 'pipe', stderr: 'pipe' })
  expect(r.exitCode).toBe(1)
  expect(r.stderr.toString()).toMatch(/widget over budget \(nothing written\): replay [\d.]+ KB > 4\.0 KB$/m)
  expect(r.stdout.toString()).toMatch(/replay-[0-9a-f]{16}\.js\s+[\d.]+ KB raw, [\d.]+ KB gzip \(budget 4\.0 KB/)
})
