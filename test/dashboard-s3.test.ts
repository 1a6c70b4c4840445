/**
 * The report page when blobs live in S3/MinIO, in Chromium against the compiled binary with a real
 * S3-protocol server (s3rver on loopback): attachment URLs are presigned against FIXLOOP_S3_ENDPOINT, so
 * the page's Content-Security-Policy must let the screenshot (<img>) and the replay (fetch) come from that
 * origin and from no other. Before the policy named it, Chromium refused both (img-src / connect-src
 * 'self'): the screenshot was a broken image and the player said the replay could not be loaded.
 * The bucket's CORS rule lets the dashboard's origin GET (docs/operations.md, docs/uploads.md).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import type { Browser, Page } from 'playwright-core'
import S3rver from 's3rver'
import { BROWSER_SKIP, signInByKeyboard, launchBrowserEarly } from './browser'
import { call, eventually, runBinary, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { axeViolations, screenshots, settle, spawnWithStdout, submitReport, writePasswordFile, type SpawnedServer } from './dashboard-helpers'

const EMAIL = 's3-dash@example.com'
const PASSWORD = 's3 dashboard password 42'
const BUCKET = 'fixloop-dash'
/** A 1×1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64')
/** The bucket lets any origin GET (the dashboard's replay fetch) and PUT (the widget's uploads). */
const CORS = `<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod><AllowedMethod>PUT</AllowedMethod><AllowedHeader>*</AllowedHeader><MaxAgeSeconds>600</MaxAgeSeconds></CORSRule></CORSConfiguration>`

/** A small recording as rrweb 2 writes it: meta, then a full snapshot of a page with one paragraph. */
function recording(): unknown[] {
  const t0 = 1_767_000_000_000
  const el = (id: number, tagName: string, childNodes: unknown[] = []) => ({ type: 2, tagName, attributes: {}, childNodes, id })
  return [
    { type: 4, data: { href: 'https://shop.example/cart', width: 800, height: 600 }, timestamp: t0 },
    {
      type: 2,
      data: {
        node: { type: 0, id: 1, childNodes: [el(2, 'html', [el(3, 'head'), el(4, 'body', [el(5, 'p', [{ type: 3, textContent: 'Basket of quinces', id: 6 }])])])] },
        initialOffset: { left: 0, top: 0 },
      },
      timestamp: t0 + 10,
    },
    { type: 5, data: { tag: 'fixloop.report', payload: {} }, timestamp: t0 + 2000 },
  ]
}

const skip = Boolean(BROWSER_SKIP)
let dir: string
let s3: S3rver
let s3Origin: string
let server: SpawnedServer
let browser: Browser
let early: ReturnType<typeof launchBrowserEarly> | undefined
let page: Page
let tenant: Awaited<ReturnType<typeof cliTenant>>
let reportId: string
const violations: string[] = []

/** Uploads `bytes` through the upload flow (presigned PUT straight to the bucket); the key. */
async function upload(bytes: Uint8Array, contentType: string, kind: string, filename: string): Promise<string> {
  const presign = await call(server.url, 'POST', '/v1/feedback/upload-url', { auth: tenant.pub, body: { contentType, byteSize: bytes.length, kind, filename } })
  expect(presign.status).toBe(200)
  expect(new URL(presign.body.url).origin).toBe(s3Origin)
  expect((await fetch(presign.body.url, { method: 'PUT', headers: presign.body.headers, body: bytes })).status).toBeLessThan(300)
  return presign.body.key
}

beforeAll(async () => {
  if (skip) return
  early = launchBrowserEarly()
  ensureBinary()
  dir = tempDir('fixloop-dash-s3-')
  const corsFile = join(dir, 'cors.xml')
  writeFileSync(corsFile, CORS)
  s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: join(dir, 's3'), configureBuckets: [{ name: BUCKET, configs: [CORS] }] })
  const { port } = (await s3.run()) as { port: number }
  s3Origin = `http://127.0.0.1:${port}`
  const env = { FIXLOOP_S3_ENDPOINT: s3Origin, FIXLOOP_S3_BUCKET: BUCKET, FIXLOOP_S3_ACCESS_KEY: 'S3RVER', FIXLOOP_S3_SECRET_KEY: 'S3RVER', FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' }
  tenant = await cliTenant(dir, ['--replay', 'inputs', '--replay-seconds', '30'])
  expect((await runBinary(['admin', 'create', '--email', EMAIL, '--password-file', writePasswordFile(dir, 'pw', PASSWORD), '--data-dir', dir])).code).toBe(0)
  server = await spawnWithStdout(dir, env)
  const shot = await upload(PNG, 'image/png', 'screenshot', 'shot.png')
  const replayBytes = new Uint8Array(gzipSync(JSON.stringify({ v: 1, events: recording() })))
  const replay = await upload(replayBytes, 'application/gzip', 'replay', 'replay.json.gz')
  reportId = await submitReport(server.url, tenant.pub, 'The basket shows no quinces after checkout', {
    attachments: [
      { key: shot, kind: 'screenshot', contentType: 'image/png', byteSize: PNG.length },
      { key: replay, kind: 'replay', contentType: 'application/gzip', byteSize: replayBytes.length },
    ],
  })
  // The server scrubs the replay before it lists a URL for it.
  await eventually(async () => {
    const item = (await call(server.url, 'GET', `/v1/feedback/${reportId}`, { auth: tenant.key })).body
    return item.attachments.find((a: { kind: string; url?: string }) => a.kind === 'replay' && a.url)
  }, 20_000)
  browser = await early.ready
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage()
  // A resource the policy refuses is reported on the console ("Refused to load …", "violates … Content Security Policy").
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) violations.push(m.text())
  })
  await signInByKeyboard(page, server.url, EMAIL, PASSWORD)
})

afterAll(async () => {
  await early?.close()
  await server?.stop()
  await s3?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe.skipIf(skip)('the report page with blobs in S3', () => {
  test('the page policy names the bucket origin for images and fetches, and nothing else new', async () => {
    const res = await fetch(`${server.url}/admin`)
    const csp = res.headers.get('content-security-policy')!
    const directive = (name: string) => csp.split(';').map((d) => d.trim()).find((d) => d.startsWith(name + ' '))
    expect(directive('img-src')).toBe(`img-src 'self' ${s3Origin} data: blob:`)
    expect(directive('connect-src')).toBe(`connect-src 'self' ${s3Origin}`)
    expect(directive('script-src')).not.toContain(s3Origin)
    expect(directive('frame-src')).toBe("frame-src 'self'")
  })

  test('the screenshot loads from the bucket and the replay plays from it, with no policy violation', async () => {
    await page.goto(`${server.url}/admin/o/${tenant.orgId}/r/${reportId}`)
    await page.getByRole('heading', { name: 'Screenshots' }).waitFor()
    const img = page.getByRole('img', { name: 'Screenshot 1' })
    expect(new URL((await img.getAttribute('src'))!).origin).toBe(s3Origin)
    await page.waitForFunction(() => {
      const i = document.querySelector('img.shot') as unknown as { complete: boolean; naturalWidth: number } | null
      return !!i && i.complete && i.naturalWidth === 1
    }, undefined, { timeout: 10_000 })
    await page.getByRole('heading', { name: 'Session replay' }).waitFor()
    await page.getByRole('button', { name: 'Play', exact: true }).and(page.locator(':enabled')).waitFor({ timeout: 20_000 })
    const frame = page.frameLocator('iframe.replay-frame').frameLocator('iframe')
    await frame.getByText('Basket of quinces').waitFor({ timeout: 10_000 })
    expect(violations).toEqual([])
    await settle(page)
    expect(await axeViolations(page)).toEqual([])
    expect(await screenshots(page, 'report-s3')).toEqual([])
  })
})
