/**
 * Hostile and careless input against the compiled binary (production mode, real limits): nesting,
 * sizes, Content-Type, query parameters of every route, huge headers and URLs. Every answer is the
 * spec's envelope with the right code and an X-Request-Id; nothing is 5xx, nothing stalls the server.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { readFileSync } from 'node:fs'
import { runBinary, spawnServer, tempDir } from './harness'
import { TEST_DIALECT, clusterEnv } from './cluster-env'

let base: string
let pid: number
let stop: () => Promise<void>
let pub: string
let key: string
let appId: string
let feedbackId: string
/** The CLI and the server share one database: the data dir's SQLite file, or in PostgreSQL mode a fresh database. */
let dbEnv: Record<string, string> = {}

async function cli(dataDir: string, args: string[]) {
  const r = await runBinary([...args, '--data-dir', dataDir, '--json'], dbEnv)
  if (r.code !== 0) throw new Error(r.stderr)
  return JSON.parse(r.stdout)
}

beforeAll(async () => {
  const dataDir = tempDir()
  if (TEST_DIALECT === 'pg') dbEnv = await clusterEnv()
  const org = await cli(dataDir, ['org', 'create', '--name', 'Hostile'])
  key = (await cli(dataDir, ['key', 'create', '--org', org.id])).key
  const app = await cli(dataDir, ['app', 'create', '--org', org.id, '--name', 'Target'])
  pub = app.publicKey
  appId = app.id
  // NODE_ENV must not switch the binary out of production mode.
  const server = await spawnServer(dataDir, { ...dbEnv, FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000', NODE_ENV: 'development' })
  base = server.url
  pid = server.proc.pid
  stop = server.stop
  const r = await post('/v1/feedback', pub, JSON.stringify({ text: 'A report to query' }))
  feedbackId = ((await r.json()) as { id: string }).id
})
afterAll(() => stop())

function post(path: string, auth: string, body: string | Uint8Array | ReadableStream, headers: Record<string, string> = {}, method = 'POST') {
  return fetch(base + path, { method, headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json', ...headers }, body })
}

async function expectEnvelope(res: Response, status: number, code: string) {
  const text = await res.text()
  expect({ status: res.status, text: text.slice(0, 300) }).toEqual({ status, text: expect.stringContaining(`"code":"${code}"`) })
  expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f]{24}$/)
  return JSON.parse(text)
}

const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024
const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth)

describe('deep nesting is refused before validation, on every JSON route', () => {
  const routes: [string, string, () => string, string, (inner: string) => string][] = [
    ['POST', '/v1/feedback', () => pub, 'metadata', (n) => `{"text":"x","metadata":{"a":${n}}}`],
    ['POST', '/v1/feedback', () => pub, 'componentTarget.meta', (n) => `{"text":"x","componentTarget":{"name":"b","meta":{"a":${n}}}}`],
    ['POST', '/v1/feedback/upload-url', () => pub, 'upload-url', (n) => `{"contentType":"image/png","byteSize":1,"kind":"screenshot","filename":${n}}`],
    ['POST', '/v1/tokens/mint?appId=APP', () => key, 'mint ctx', (n) => `{"sub":"u","ctx":{"a":${n}}}`],
    ['PATCH', '/v1/feedback/FID', () => key, 'PATCH', (n) => `{"status":${n}}`],
    ['POST', '/v1/feedback/FID/merge', () => key, 'merge', (n) => `{"leadId":${n}}`],
    // Raw-body routes (the host's signature covers the bytes): refused before the signature is checked.
    ['POST', '/v1/git-hooks/APP', () => key, 'git-host delivery', (n) => `{"a":${n}}`],
    ['POST', '/v1/tracker-hooks/APP', () => key, 'tracker delivery', (n) => `{"a":${n}}`],
  ]
  for (const [method, path, auth, name, body] of routes) {
    for (const depth of [65, 20_000, 100_000]) {
      test(`${name}: ${depth} levels → 400 invalid_body`, async () => {
        const url = path.replace('APP', appId).replace('FID', feedbackId)
        const res = await post(url, auth(), body(nested(depth)), {}, method)
        const env = await expectEnvelope(res, 400, 'invalid_body')
        expect(env.error.details.issues[0].message).toContain('nested deeper than 64')
      })
    }
  }

  test('64 levels are fine where the schema allows them; the server stayed small and answers at once', async () => {
    const ok = await post('/v1/feedback', pub, `{"text":"deep but legal","metadata":{"a":${nested(60)}}}`)
    expect(ok.status).toBe(201)
    expect(rssMb()).toBeLessThan(400)
    expect((await fetch(`${base}/healthz`)).status).toBe(200)
  })
})

describe('sizes and Content-Type', () => {
  test('a 7 MB componentTarget.meta is refused like metadata', async () => {
    const res = await post('/v1/feedback', pub, JSON.stringify({ text: 'x', componentTarget: { name: 'b', meta: { blob: 'x'.repeat(7_000_000) } } }))
    const env = await expectEnvelope(res, 400, 'invalid_body')
    expect(env.error.details.issues[0].path).toBe('/componentTarget/meta')
  })

  test('bbox values out of range are refused', async () => {
    const res = await post('/v1/feedback', pub, JSON.stringify({ text: 'x', componentTarget: { name: 'b', bbox: { x: 0, y: 0, w: 1e300, h: 1 } } }))
    await expectEnvelope(res, 400, 'invalid_body')
  })

  test('a body over 8 MB: 413 from Content-Length, and from a chunked body as it streams in', async () => {
    const big = new Uint8Array(9 * 1024 * 1024).fill(0x20)
    await expectEnvelope(await post('/v1/feedback', pub, big), 413, 'payload_too_large')
    const chunked = new ReadableStream({
      start(c) {
        for (let i = 0; i < 9; i++) c.enqueue(new Uint8Array(1024 * 1024).fill(0x20))
        c.close()
      },
    })
    await expectEnvelope(await post('/v1/feedback', pub, chunked), 413, 'payload_too_large')
  })

  test('a body over Bun\'s own 16 MB cap still gets the envelope', async () => {
    const huge = new Uint8Array(20 * 1024 * 1024).fill(0x20)
    await expectEnvelope(await post('/v1/feedback', pub, huge), 413, 'payload_too_large')
  })

  for (const ct of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonp', '']) {
    test(`Content-Type "${ct}" → 400 invalid_body`, async () => {
      const res = await fetch(`${base}/v1/feedback`, { method: 'POST', headers: ct ? { authorization: `Bearer ${pub}`, 'content-type': ct } : { authorization: `Bearer ${pub}` }, body: '{"text":"hi"}' })
      const env = await expectEnvelope(res, 400, 'invalid_body')
      expect(JSON.stringify(env.error.details)).toContain('Content-Type')
    })
  }

  test('charset parameter is fine; malformed JSON and invalid UTF-8 are invalid_body', async () => {
    expect((await post('/v1/feedback', pub, '{"text":"hi"}', { 'content-type': 'application/json; charset=utf-8' })).status).toBe(201)
    await expectEnvelope(await post('/v1/feedback', pub, '{"text":'), 400, 'invalid_body')
    await expectEnvelope(await post('/v1/feedback', pub, new Uint8Array([0x7b, 0x22, 0x74, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d])), 400, 'invalid_body')
  })

  test('a compressed body is refused naming Content-Encoding, not as malformed JSON; identity is fine', async () => {
    const gz = Bun.gzipSync(new TextEncoder().encode('{"text":"compressed"}'))
    const env = await expectEnvelope(await post('/v1/feedback', pub, gz, { 'content-encoding': 'gzip' }), 400, 'invalid_body')
    expect(env.error.details.issues).toEqual([{ path: 'header:Content-Encoding', message: 'Content-Encoding gzip is not accepted: send the body uncompressed' }])
    expect((await post('/v1/feedback', pub, '{"text":"plain"}', { 'content-encoding': 'identity' })).status).toBe(201)
  })

  test('a number no double holds is refused where it sits (metadata kept it as null: data the client never sent)', async () => {
    for (const [raw, path] of [
      ['{"text":"x","metadata":{"n":1e309}}', '/metadata/n'],
      ['{"text":"x","metadata":{"deep":[1,{"m":-1e400}]}}', '/metadata/deep/1/m'],
      [`{"text":"x","metadata":{"digits":${'9'.repeat(400)}}}`, '/metadata/digits'],
    ] as const) {
      const env = await expectEnvelope(await post('/v1/feedback', pub, raw), 400, 'invalid_body')
      expect(env.error.details.issues).toEqual([{ path, message: 'a number too large for a double (at most about 1.8e308)' }])
    }
    // The largest doubles, a tiny exponent and the same characters in a string are fine, and kept as sent.
    const ok = await post('/v1/feedback', pub, '{"text":"see e999 and 1e309 in the text","metadata":{"big":1.7e308,"small":1e-400,"s":"1e309"}}')
    expect(ok.status).toBe(201)
    const id = ((await ok.json()) as { id: string }).id
    const item = (await (await fetch(`${base}/v1/feedback/${id}`, { headers: { authorization: `Bearer ${key}` } })).json()) as { submissionMeta: unknown }
    expect(item.submissionMeta).toEqual({ big: 1.7e308, small: 0, s: '1e309' })
  })
})

describe('headers and URLs', () => {
  test('a 100 KB header → 431 headers_too_large with the envelope', async () => {
    await expectEnvelope(await fetch(`${base}/v1/apps`, { headers: { authorization: `Bearer ${key}`, 'x-junk': 'a'.repeat(100_000) } }), 431, 'headers_too_large')
  })

  test('a 70 KB URL → 414 url_too_long with the envelope', async () => {
    await expectEnvelope(await fetch(`${base}/v1/feedback?junk=${'a'.repeat(70_000)}`, { headers: { authorization: `Bearer ${key}` } }), 414, 'url_too_long')
  })

  test('raw socket: the same holds for a client that is not fetch', async () => {
    const reply = await new Promise<string>((resolve) => {
      const s = connect(Number(new URL(base).port), '127.0.0.1', () => s.end(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Junk: ${'b'.repeat(50_000)}\r\n\r\n`))
      let buf = ''
      s.on('data', (d) => (buf += d))
      s.on('close', () => resolve(buf))
    })
    expect(reply).toStartWith('HTTP/1.1 431')
    expect(reply).toContain('"code":"headers_too_large"')
  })
})

describe('__proto__ as a member', () => {
  test('is an unknown field on every body, the mint included (no schema default rebuilds the body)', async () => {
    const post = (path: string, raw: string) => fetch(`${base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: raw })
    for (const [path, raw] of [
      [`/v1/tokens/mint?appId=${appId}`, '{"sub":"u","__proto__":{"x":1}}'],
      [`/v1/tokens/mint?appId=${appId}`, '{"sub":"u","expiresInSeconds":60,"__proto__":{"x":1}}'],
      [`/v1/tokens/mint?appId=${appId}`, '{"sub":"u","constructor":{"x":1}}'],
    ]) {
      const env = await expectEnvelope(await post(path, raw), 400, 'invalid_body')
      expect(JSON.stringify(env.error.details.issues)).toMatch(/__proto__|constructor/)
    }
  })

  test('stays an unknown field when the body holds an unpaired surrogate (the body is rebuilt then)', async () => {
    // The rebuild (unpaired surrogates → U+FFFD) used to assign `out["__proto__"]`, which made the member
    // the body's prototype: strict validation no longer saw it, and its members were read as fields.
    for (const [path, auth, raw] of [
      ['/v1/feedback', pub, '{"text":"a \\ud800 b","__proto__":{"severity":"high"}}'],
      ['/v1/feedback', pub, '{"text":"a \\ud800 b","__proto__":{"bogus":1}}'],
      [`/v1/tokens/mint?appId=${appId}`, key, '{"sub":"u","ctx":{"plan":"\\ud800"},"__proto__":{"expiresInSeconds":600}}'],
    ]) {
      const env = await expectEnvelope(await post(path, auth, raw), 400, 'invalid_body')
      expect(JSON.stringify(env.error.details.issues)).toContain('__proto__')
    }
  })

  test('is kept as a member of free-form metadata, through the surrogate rebuild and the sanitizer', async () => {
    for (const raw of ['{"text":"proto meta","metadata":{"__proto__":{"plan":"pro"},"b":1}}', '{"text":"proto meta \\ud800","metadata":{"__proto__":{"plan":"pro"},"b":"\\ud800"}}']) {
      const r = await post('/v1/feedback', pub, raw)
      expect(r.status).toBe(201)
      const { id } = (await r.json()) as { id: string }
      let text = ''
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; await Bun.sleep(50)) {
        text = await (await fetch(`${base}/v1/feedback/${id}`, { headers: { authorization: `Bearer ${key}` } })).text()
        if (!text.includes('"received"') && !text.includes('"sanitizing"')) break
      }
      const meta = JSON.parse(text).submissionMeta
      expect(Object.hasOwn(meta, '__proto__')).toBe(true)
      expect(JSON.stringify(meta)).toStartWith('{"__proto__":{"plan":"pro"},"b":')
    }
  })
})

describe('a field that takes one of a few values', () => {
  test('names them, null included, however the schema nests them', async () => {
    const env = await expectEnvelope(await post('/v1/feedback', pub, JSON.stringify({ text: 'x', severity: 'critical' })), 400, 'invalid_body')
    expect(env.error.details.issues).toEqual([{ path: '/severity', message: 'severity must be one of: "low", "medium", "high", null' }])
    const list = await expectEnvelope(await fetch(`${base}/v1/feedback?includeDuplicates=yes`, { headers: { authorization: `Bearer ${key}` } }), 400, 'invalid_body')
    expect(JSON.stringify(list.error.details.issues)).not.toContain("'boolean', 'boolean'")
  })

  test('left out, it is "is missing" like any other field, at every depth', async () => {
    const upload = await expectEnvelope(await post('/v1/feedback/upload-url', pub, JSON.stringify({ contentType: 'image/png', byteSize: 5 })), 400, 'invalid_body')
    expect(upload.error.details.issues).toEqual([{ path: '/kind', message: "Property 'kind' is missing" }])
    const logs = await expectEnvelope(await post('/v1/feedback', pub, JSON.stringify({ text: 'a', consoleLogs: [{ message: 'm', ts: 1 }] })), 400, 'invalid_body')
    expect(logs.error.details.issues).toEqual([{ path: '/consoleLogs/0/level', message: "Property 'consoleLogs.0.level' is missing" }])
    const text = await expectEnvelope(await post('/v1/feedback', pub, JSON.stringify({ severity: 'low' })), 400, 'invalid_body')
    expect(text.error.details.issues).toEqual([{ path: '/text', message: "Property 'text' is missing" }])
  })
})

describe('a query parameter given twice', () => {
  test('credentials are judged first; a route that reads no query ignores one, repeated or not', async () => {
    const twice = `appId=${'a'.repeat(24)}&appId=${'b'.repeat(24)}`
    expect((await fetch(`${base}/v1/feedback?${twice}`)).status).toBe(401)
    const junk = await fetch(`${base}/v1/feedback/${feedbackId}?x=1&x=2`, { headers: { authorization: `Bearer ${key}` } })
    expect(junk.status).toBe(200)
    const mint = await fetch(`${base}/v1/tokens/mint?${twice}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ sub: 'u1' }) })
    const env = await expectEnvelope(mint, 400, 'invalid_body')
    expect(env.error.details.issues).toEqual([{ path: '/appId', message: 'must be given once' }])
  })
})

describe('every query parameter of every route: 400 invalid_body with details.issues', () => {
  const INTS = ['0', '-0', '-5', '1.5', 'Infinity', '1e9', '100000', ' ', '', 'abc', '0x10']
  const cases: [string, string][] = [
    ...INTS.map((v) => [`/v1/feedback`, `limit=${encodeURIComponent(v)}`] as [string, string]),
    ['/v1/feedback', 'limit=10&limit=20'],
    ...['0', '51', '-1', '2.5', '1e2', ' '].map((v) => ['/v1/feedback/FID/similar', `limit=${encodeURIComponent(v)}`] as [string, string]),
    ['/v1/feedback', 'cursor=xyz'],
    ['/v1/feedback', `cursor=${'A'.repeat(24)}`],
    ['/v1/feedback', 'appId=123'],
    ['/v1/feedback', 'status=done'],
    ['/v1/feedback', 'status='],
    ['/v1/feedback', 'includeDuplicates=maybe'],
    ['/v1/feedback', 'includeDuplicates=1'],
    ['/v1/feedback', 'sort=asc'],
    ...['after=-1', 'after=1.5', 'limit=0', 'limit=1000', 'limit=1e2'].map((q) => ['/v1/events', q] as [string, string]),
    // A declared parameter given twice is refused, whichever its type (not the last value read silently).
    ['/v1/feedback', `appId=${'a'.repeat(24)}&appId=${'b'.repeat(24)}`],
    ['/v1/feedback', 'status=received&status=queued'],
    ['/v1/feedback', `cursor=${'a'.repeat(24)}&cursor=${'b'.repeat(24)}`],
    ['/v1/events', 'types=feedback.received&types=feedback.received'],
  ]
  for (const [path, query] of cases) {
    test(`${path}?${query}`, async () => {
      const res = await fetch(`${base}${path.replace('FID', feedbackId)}?${query}`, { headers: { authorization: `Bearer ${key}` } })
      const env = await expectEnvelope(res, 400, 'invalid_body')
      expect(Array.isArray(env.error.details.issues)).toBe(true)
      expect(env.error.details.issues.length).toBeGreaterThan(0)
      // The issue's path names the parameter (docs/api.md), out-of-range numbers too.
      expect(env.error.details.issues.map((i: { path: string }) => i.path)).toContain(`/${query.split('=')[0]}`)
    })
  }

  test('mint: appId missing or malformed is invalid_body; the bounds that pass still work', async () => {
    for (const q of ['', '?appId=xyz', '?appId=']) {
      await expectEnvelope(await post(`/v1/tokens/mint${q}`, key, '{"sub":"u"}'), 400, 'invalid_body')
    }
    for (const q of ['limit=1', 'limit=100', 'includeDuplicates=true', 'includeDuplicates=false']) {
      expect((await fetch(`${base}/v1/feedback?${q}`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200)
    }
    expect((await fetch(`${base}/v1/feedback/${feedbackId}/similar?limit=50`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200)
  })
})

describe('uploads are not held to the 8 MB JSON limit', () => {
  test('a 12 MB screenshot with a Content-Length uploads to the embedded store', async () => {
    const size = 12 * 1024 * 1024
    const issued = await post('/v1/feedback/upload-url', pub, JSON.stringify({ contentType: 'image/png', byteSize: size, kind: 'screenshot' }))
    expect(issued.status).toBe(200)
    const up = (await issued.json()) as { url: string; headers: Record<string, string>; key: string }
    const put = await fetch(up.url, { method: 'PUT', headers: up.headers, body: new Uint8Array(size).fill(7) })
    expect(put.status).toBe(200)
    const sub = await post('/v1/feedback', pub, JSON.stringify({ text: 'big screenshot', attachments: [{ key: up.key, kind: 'screenshot', contentType: 'image/png', byteSize: size }] }))
    expect(sub.status).toBe(201)
  })
})
