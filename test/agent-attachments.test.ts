/**
 * The agent sees what the reporter saw (CONTRACT "The agent sees the report"): end to end with real
 * uploads (embedded store on SQLite; S3, s3rver, on PostgreSQL), real clustering, real git and the real
 * sandbox. A fixture agent (test/fixtures/agents/see-attachments.sh) lists FIXLOOP_ATTACHMENTS_DIR, hashes
 * the files, tries to change the folder and hands its evidence back through the pushed branch, with a copy
 * of its task file: the report's and its duplicates' images are there, byte for byte, in order, bounded,
 * read-only; the task lists them with their report and component and carries the replay's timeline.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { createHash, randomBytes } from 'node:crypto'
import { deflateSync, gzipSync } from 'node:zlib'
import { call, eventually, seedTenant, startTestServer, tempDir, type Tenant, type TestServer } from './harness'
import { startGitHostStub, type GitHostStub } from './git-host-stub'
import { makeBareRepo, readFileAtBranch } from './git-fixtures'
import { Logger } from '../src/core/logger'
import { dbRow, dbRun } from './sqlite-of'
import { MEDIA_MAX_BYTES, MEDIA_MAX_FILES } from '../src/agent/report-media'

const AGENTS = join(import.meta.dir, 'fixtures', 'agents')
const TOKEN = 'ghp_' + 'M4nB7vC1xZ9lK3jH6gF2dS8aP5oI0uY7tR2e'
const REPO_FILES = { 'src/app.js': 'export function total(items) {\n  return items.reduce((a, b) => a + b.price, 0)\n}\n', 'README.md': '# shop\n' }

/** A real PNG (RGBA, 8 bits): signature, IHDR, one IDAT of the (filter byte + pixels) rows, IEND. */
function png(width: number, height: number, pixels: (x: number, y: number) => number[]): Uint8Array {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    return c >>> 0
  })
  const crc = (b: Buffer) => {
    let c = 0xffffffff
    for (const x of b) c = crcTable[(c ^ x) & 0xff]! ^ (c >>> 8)
    return (c ^ 0xffffffff) >>> 0
  }
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data])
    const out = Buffer.alloc(12 + data.length)
    out.writeUInt32BE(data.length, 0)
    body.copy(out, 4)
    out.writeUInt32BE(crc(body), 8 + data.length)
    return out
  }
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr.set([8, 6, 0, 0, 0], 8)
  const raw = Buffer.alloc(height * (1 + width * 4))
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) raw.set(pixels(x, y), y * (1 + width * 4) + 1 + x * 4)
  return new Uint8Array(Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw, { level: 0 })), chunk('IEND', Buffer.alloc(0))]))
}
/** A 1x1 GIF89a. */
const GIF = new Uint8Array(Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64'))
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex')
/** The fixture prints hashes in groups of 8. */
const grouped = (hex: string) => hex.replace(/(.{8})/g, '$1 ').trim()

interface Setup {
  srv: TestServer
  t: Tenant
  stub: GitHostStub
  bare: string
  logs: string[]
}

async function setup(): Promise<Setup> {
  const bare = makeBareRepo(tempDir('fixloop-repo-'), REPO_FILES, 'main', 'shop')
  const stub = await startGitHostStub({ kind: 'github', token: TOKEN, repos: [{ owner: 'acme', name: 'shop', barePath: bare }] })
  const logs: string[] = []
  const srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000', FIXLOOP_AGENT_SANDBOX_PATHS: AGENTS }, { log: new Logger('info', (line) => logs.push(line)) })
  const t = await seedTenant(srv.admin, { processingMode: 'manual' })
  await srv.services.connections.connect(t.orgId, t.appId, { gitUrl: bare, host: 'github', hostApiUrl: stub.apiUrl, hostRepo: 'acme/shop', hostToken: TOKEN, agent: 'command', agentCommand: `sh ${JSON.stringify(join(AGENTS, 'see-attachments.sh'))}`, timeoutSeconds: 60 })
  return { srv, t, stub, bare, logs }
}

/** upload-url → PUT: the key of the uploaded object. */
async function upload(s: Setup, bytes: Uint8Array, contentType: string, kind: string): Promise<string> {
  const up = await call(s.srv.url, 'POST', '/v1/feedback/upload-url', { auth: s.t.pub, body: { contentType, byteSize: bytes.length, kind, filename: 'f' } })
  expect(up.status).toBe(200)
  const put = await fetch(up.body.url, { method: 'PUT', headers: up.body.headers, body: bytes })
  expect(put.status).toBe(200)
  return up.body.key
}

type Att = { key: string; kind: string; contentType: string; byteSize: number; width?: number; height?: number }
const att = async (s: Setup, bytes: Uint8Array, contentType: string, kind: string, size?: { width: number; height: number }): Promise<Att> => ({ key: await upload(s, bytes, contentType, kind), kind, contentType, byteSize: bytes.length, ...size })

/** Submits a report and waits until the worker has sanitized it (and clustered it: `awaiting_manual`, or a duplicate). */
async function submit(s: Setup, body: Record<string, unknown>): Promise<string> {
  const r = await call(s.srv.url, 'POST', '/v1/feedback', { auth: s.t.pub, body })
  expect(r.status).toBe(201)
  const id = r.body.id as string
  await eventually(async () => {
    const g = (await call(s.srv.url, 'GET', `/v1/feedback/${id}`, { auth: s.t.key })).body
    return g.status === 'awaiting_manual' || g.duplicateOfId ? g : undefined
  }, 20_000)
  return id
}

/** Queues the report and waits for its run; the agent's evidence and task as pushed. */
async function run(s: Setup, id: string) {
  expect((await call(s.srv.url, 'PATCH', `/v1/feedback/${id}`, { auth: s.t.key, body: { status: 'queued' } })).status).toBe(200)
  await eventually(async () => ['pr_opened', 'failed'].includes((await call(s.srv.url, 'GET', `/v1/feedback/${id}`, { auth: s.t.key })).body.status), 60_000)
  await s.srv.runner.idle()
  const r = (await call(s.srv.url, 'GET', `/v1/agent-runs/${id}`, { auth: s.t.key })).body
  expect(r.status).toBe('succeeded')
  return { run: r, evidence: readFileAtBranch(s.bare, r.branch, 'evidence.txt')!, task: readFileAtBranch(s.bare, r.branch, 'task-copy.md')! }
}

const files = (evidence: string) => [...evidence.matchAll(/^file (\S+) mode=(\d+) size=(\d+) sha256=([0-9a-f ]+)$/gm)].map((m) => ({ name: m[1]!, mode: m[2]!, size: Number(m[3]), sha: m[4]!.trim() }))

/** Every change the fixture tries is refused, and the folder is as fixloop made it. */
function expectReadOnly(evidence: string, nonEmpty: boolean) {
  expect(evidence).toMatch(/^dir=\/fixloop\/attachments$/m)
  expect(evidence).toMatch(/^dir-mode=555$/m)
  for (const op of ['create', 'touch', 'mkdir', 'chmod-dir', ...(nonEmpty ? ['overwrite', 'append', 'chmod', 'rename', 'delete'] : [])]) expect(evidence).toMatch(new RegExp(`^${op} refused$`, 'm'))
  expect(evidence).not.toMatch(/ ok$/m)
  expect(evidence).not.toMatch(/planted|touched|renamed|sub\b/)
}

describe('the agent sees the report', () => {
  let s: Setup
  beforeAll(async () => {
    s = await setup()
  })
  afterAll(async () => {
    await s.srv.close()
    await s.stub.stop()
    rmSync(dirname(s.bare), { recursive: true, force: true })
  })

  test('the report’s and its duplicates’ images, byte for byte, newest duplicate first, read-only; the task lists them and the replay’s timeline', async () => {
    // A recording as the widget will store it (gzip {"v":1,"events"}). The `replay` kind is not in the API
    // yet: it is submitted as a JSON attachment, then made a `replay` in the report's row.
    const replay = gzipSync(
      JSON.stringify({
        v: 1,
        events: [
          { type: 4, data: { href: 'https://shop.example/cart?session=abc', width: 1280, height: 720 }, timestamp: 1000 },
          { type: 2, data: { node: { type: 0, id: 1, childNodes: [{ type: 2, id: 2, tagName: 'html', attributes: {}, childNodes: [{ type: 2, id: 3, tagName: 'button', attributes: { 'data-testid': 'remove-item' }, childNodes: [{ type: 3, id: 4, textContent: 'Remove' }] }] }] } }, timestamp: 1010 },
          { type: 3, data: { source: 5, text: 'typed-secret-value', isChecked: false, id: 3 }, timestamp: 1500 },
          { type: 3, data: { source: 2, type: 2, id: 3, x: 1, y: 1 }, timestamp: 3300 },
          { type: 5, data: { tag: 'fixloop.network', payload: { method: 'DELETE', url: 'https://shop.example/api/cart/7?token=abc', status: 500, durationMs: 87 } }, timestamp: 3400 },
          { type: 5, data: { tag: 'fixloop.console', payload: { level: 'error', message: 'TypeError: items[0] is undefined' } }, timestamp: 3450 },
          { type: 5, data: { tag: 'fixloop.report', payload: {} }, timestamp: 9000 },
        ],
      }),
    )
    const ownShot = png(16, 9, (x, y) => [x * 15, y * 28, 200, 255])
    const dupShotOld = png(8, 8, () => [255, 0, 0, 255])
    const dupShotNew = png(8, 8, () => [0, 0, 255, 255])
    const text = 'The cart total shows NaN after removing the last item from the basket.'
    const lead = await submit(s, {
      text,
      url: 'https://shop.example/cart?session=abc',
      componentTarget: { name: 'CartTotal', meta: { selector: '#cart .total' }, bbox: { x: 10, y: 20, w: 300, h: 40 } },
      attachments: [
        await att(s, ownShot, 'image/png', 'screenshot', { width: 16, height: 9 }),
        await att(s, GIF, 'image/gif', 'attachment'),
        await att(s, new TextEncoder().encode('a log file'), 'text/plain', 'attachment'),
        // Declared a PNG screenshot, but HTML: never copied.
        await att(s, new TextEncoder().encode('<html><script>alert(1)</script></html>'), 'image/png', 'screenshot'),
        await att(s, new Uint8Array(replay), 'application/json', 'attachment'),
      ],
    })
    const older = await submit(s, { text: `Hi, ${text} Thanks`, attachments: [await att(s, dupShotOld, 'image/png', 'screenshot')], componentTarget: { name: 'CartPage' } })
    const newer = await submit(s, { text: `${text} Please fix`, attachments: [await att(s, dupShotNew, 'image/png', 'screenshot')] })
    for (const d of [older, newer]) expect((await call(s.srv.url, 'GET', `/v1/feedback/${d}`, { auth: s.t.key })).body.duplicateOfId).toBe(lead)

    const row = await dbRow<{ attachments: string }>(s.srv.ctx, 'SELECT attachments FROM feedback WHERE id = ?', [lead])
    const list = JSON.parse(row!.attachments) as Att[]
    expect(list[4]!.byteSize).toBe(replay.length)
    list[4] = { ...list[4]!, kind: 'replay' }
    await dbRun(s.srv.ctx, 'UPDATE feedback SET attachments = ? WHERE id = ?', [JSON.stringify(list), lead])

    const { evidence, task } = await run(s, lead)
    const seen = files(evidence)
    expect(seen.map((f) => f.name)).toEqual(['01-report-screenshot.png', '02-report-image-attachment.gif', `03-duplicate-${newer}-screenshot.png`, `04-duplicate-${older}-screenshot.png`])
    expect(seen.map((f) => f.sha)).toEqual([ownShot, GIF, dupShotNew, dupShotOld].map((b) => grouped(sha(b))))
    expect(seen.map((f) => f.mode)).toEqual(['444', '444', '444', '444'])
    expectReadOnly(evidence, true)
    expect(evidence).toContain('still-there 01-report-screenshot.png')
    expect(s.logs.filter((l) => /could not read|not a readable recording/.test(l))).toEqual([])

    // The task names each file with its report, kind, type, size and component; never their bytes.
    expect(task).toContain('$FIXLOOP_ATTACHMENTS_DIR')
    expect(task).toContain(`01-report-screenshot.png: this report, screenshot, image/png, ${ownShot.length} bytes, 16x9 px, component "CartTotal", details {"selector":"#cart .total"}, bounding box x=10 y=20 w=300 h=40 (CSS pixels)`)
    expect(task).toContain(`02-report-image-attachment.gif: this report, image attachment, image/gif, ${GIF.length} bytes`)
    expect(task).toContain(`03-duplicate-${newer}-screenshot.png: duplicate ${newer}, screenshot, image/png, ${dupShotNew.length} bytes\n`)
    expect(task).toContain(`04-duplicate-${older}-screenshot.png: duplicate ${older}, screenshot, image/png, ${dupShotOld.length} bytes, component "CartPage"`)
    expect(task).toContain('(1 more image of the cluster left out') // the HTML "PNG"
    expect(task).toContain('Attachments (not included): attachment 3 (text/plain); screenshot 4 (image/png); replay 5 (application/json)')
    expect(task).toContain(
      [
        'Replay timeline of this report (mm:ss.s from the recording\'s start; what the reporter did, never what they typed):',
        '  00:00.0  navigated to https://shop.example/cart?…',
        '  00:02.3  clicked button[data-testid="remove-item"]',
        '  00:02.4  request failed: DELETE https://shop.example/api/cart/7?… → 500 in 87 ms',
        '  00:02.4  console error: TypeError: items[0] is undefined',
        '  00:08.0  the report was sent (the feedback form opened here)',
      ].join('\n'),
    )
    for (const never of ['typed-secret-value', 'token=abc', 'session=abc', 'alert(1)', 'Remove\n']) expect(task).not.toContain(never)
    expect(task.length).toBeLessThan(6000)
    // The folder went with the workspace.
    expect(readdirSync(s.srv.runner.workspaceDir)).toEqual([])
  })

  test(`bounded: at most ${MEDIA_MAX_FILES} files and ${MEDIA_MAX_BYTES / 1024 / 1024} MB; the rest is counted as left out`, async () => {
    // Three 8 MB screenshots (random pixels, stored uncompressed): the third would pass 20 MB.
    const big = () => {
      const noise = randomBytes(1024 * 2048 * 4)
      return png(1024, 2048, (x, y) => [...noise.subarray((y * 1024 + x) * 4, (y * 1024 + x) * 4 + 4)])
    }
    const bigs = [big(), big(), big()]
    const smalls = Array.from({ length: 7 }, (_, i) => png(4, 4, () => [i * 30, 0, 0, 255]))
    const id = await submit(s, {
      text: 'The checkout page flickers when the shipping method changes twice in a row.',
      attachments: [...(await Promise.all(bigs.map((b) => att(s, b, 'image/png', 'screenshot')))), ...(await Promise.all(smalls.map((b) => att(s, b, 'image/png', 'screenshot'))))],
    })
    const { evidence, task } = await run(s, id)
    const seen = files(evidence)
    expect(seen).toHaveLength(MEDIA_MAX_FILES)
    expect(seen.reduce((n, f) => n + f.size, 0)).toBeLessThanOrEqual(MEDIA_MAX_BYTES)
    // The first two large ones fit, the third does not; then six of the seven small ones.
    expect(seen.map((f) => f.sha)).toEqual([bigs[0]!, bigs[1]!, ...smalls.slice(0, 6)].map((b) => grouped(sha(b))))
    expect(task).toContain('(2 more images of the cluster left out: at most 8 files and 20 MB are copied, only real PNG, JPEG, WebP and GIF images)')
    expectReadOnly(evidence, true)
  })

  test('a duplicate not yet sanitized (or in the spam folder) shows nothing: only what the dashboard serves as sanitized goes in', async () => {
    const text = 'The wishlist heart icon stays grey after adding an item to the wishlist.'
    const ownShot = png(4, 4, () => [0, 255, 0, 255])
    const lead = await submit(s, { text, attachments: [await att(s, ownShot, 'image/png', 'screenshot')] })
    const pending = await submit(s, { text: `Hi, ${text} Thanks`, attachments: [await att(s, png(4, 4, () => [9, 9, 9, 255]), 'image/png', 'screenshot')] })
    const spam = await submit(s, { text: `${text} Please fix`, attachments: [await att(s, png(4, 4, () => [7, 7, 7, 255]), 'image/png', 'screenshot')] })
    for (const d of [pending, spam]) expect((await call(s.srv.url, 'GET', `/v1/feedback/${d}`, { auth: s.t.key })).body.duplicateOfId).toBe(lead)
    await dbRun(s.srv.ctx, 'UPDATE feedback SET redactions = NULL WHERE id = ?', [pending])
    await dbRun(s.srv.ctx, 'UPDATE feedback SET spam_marked_at = 1 WHERE id = ?', [spam])
    const { evidence } = await run(s, lead)
    expect(files(evidence).map((f) => [f.name, f.sha])).toEqual([['01-report-screenshot.png', grouped(sha(ownShot))]])
  })

  test('a report with no images: the variable is still set, the folder empty and read-only, the task says nothing of it', async () => {
    const id = await submit(s, { text: 'The newsletter signup button does nothing on mobile Safari.' })
    const { evidence, task } = await run(s, id)
    expect(files(evidence)).toEqual([])
    expect(evidence).toMatch(/^after: $/m)
    expectReadOnly(evidence, false)
    expect(task).not.toContain('FIXLOOP_ATTACHMENTS_DIR')
    expect(task).not.toContain('Replay timeline')
  })
})
