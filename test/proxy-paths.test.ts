/**
 * One path, one spelling: the compiled binary answers a route only under its canonical path, so the
 * shipped proxy rules that keep /metrics private (packaging/nginx.conf, packaging/Caddyfile) cover every
 * request that would reach it. Requests go over raw sockets, byte for byte as written here (fetch would
 * normalise them first), through a real nginx and a real Caddy started on loopback ports.
 *
 * The proxies allow /metrics to 127.0.0.1 only (nginx) or to nobody (Caddy); the "stranger" connects
 * from 127.0.0.2, which is loopback too but not 127.0.0.1.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { freePort, ROOT, spawnServer, tempDir } from './harness'
import { ensureBinary } from './helpers-lifecycle'

interface RawReply {
  status: number
  body: string
}

/** One HTTP/1.1 request written as is, from `localAddress`. */
function rawGet(port: number, target: string, host: string, localAddress = '127.0.0.1'): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress }, () => socket.write(`GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`))
    const chunks: Buffer[] = []
    socket.setTimeout(10_000, () => socket.destroy(new Error(`no answer to GET ${target} in 10 s`)))
    socket.on('data', (d: Buffer) => chunks.push(d))
    socket.on('error', reject)
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('latin1')
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)
      resolve({ status, body: text.slice(text.indexOf('\r\n\r\n') + 4) })
    })
  })
}

const isMetrics = (r: RawReply) => r.status === 200 && r.body.includes('# HELP fixloop_')

/** Spellings Bun resolves to /metrics itself (RFC 3986 dot segments, absolute form): the route answers. */
const SAME_PATH = ['/metrics', '/metrics?x=1', '/./metrics', '/x/../metrics', '/%2e/metrics', '/x/%2E%2E/metrics', '/.%2e/metrics', 'http://elsewhere.example/metrics']

/** Other spellings of the path: none reaches the route. */
const OTHER_SPELLINGS = [
  '/metrics/',
  '/metrics/.',
  '/metrics/%2e',
  '/metrics//',
  '//metrics',
  '///metrics',
  '/metrics%2F',
  '/metrics%2f',
  '/%2Fmetrics',
  '/%6detrics',
  '/m%65trics',
  '/METRICS',
  '/Metrics',
  '/metrics;a',
  '/metrics.',
  '/metrics%20',
  '/metrics%00',
  '/metrics#x',
  '/%5cmetrics',
  '/x%5c..%5cmetrics',
  '/x/..%2fmetrics',
  '/a%2f..%2fmetrics',
  '/metrics/../metrics/',
  '/x//../metrics',
]

/** Raw backslashes: Bun reads them as "/", so /x\..\metrics IS /metrics to fixloop; a proxy must refuse them. */
const BACKSLASHES = ['/x\\..\\metrics', '/x/..\\metrics', '/x\\../metrics', '/metrics\\', '/\\metrics', '/metrics\\.']

/** Other routes lose their trailing-slash twin as well. */
const OTHER_ROUTES: [string, number][] = [
  ['/healthz', 200],
  ['/healthz/', 404],
  ['/readyz/', 404],
  ['/openapi.json/', 404],
  ['/docs', 200],
  ['/docs/', 404],
  ['/v1/feedback/', 404],
  ['/admin', 200],
]

let server: Awaited<ReturnType<typeof spawnServer>>
let port: number
let host: string

beforeAll(async () => {
  ensureBinary()
  server = await spawnServer(tempDir())
  port = Number(new URL(server.url).port)
  host = `127.0.0.1:${port}`
})
afterAll(() => server?.stop())

describe('the compiled binary', () => {
  test.each(SAME_PATH)('%s is /metrics', async (target) => {
    expect(isMetrics(await rawGet(port, target, host))).toBe(true)
  })

  test.each(OTHER_SPELLINGS)('%s is 404 route_not_found', async (target) => {
    const r = await rawGet(port, target, host)
    expect(r.status).toBe(404)
    expect(JSON.parse(r.body).error.code).toBe('route_not_found')
  })

  test.each(OTHER_ROUTES)('%s answers %d', async (target, status) => {
    expect((await rawGet(port, target, host)).status).toBe(status)
  })

  test('a short Host does not move where the path starts (Host: ab, GET /cd/metrics was /metrics)', async () => {
    for (const [h, target] of [['ab', '/cd/metrics'], ['a', '/c/metrics'], ['a.b', '/cd/metrics'], ['ab', '/xy/healthz']]) {
      const r = await rawGet(port, target, h)
      expect(r.status).toBe(404)
    }
    expect(isMetrics(await rawGet(port, '/metrics', 'ab'))).toBe(true)
  })

  test('a Host that is not a host name is 400 invalid_argument, never routed', async () => {
    for (const h of ['a/b', 'a b', 'a?b', 'a#b', 'a\\b', 'x/../y']) {
      for (const target of ['/metrics', '/cd/metrics', '/abcdefghij/metrics']) {
        const r = await rawGet(port, target, h)
        expect(r.status).toBe(400)
        expect(JSON.parse(r.body).error.code).toBe('invalid_argument')
      }
    }
  })
})

/** Every spelling a stranger could try through a proxy, with a few Host values. */
const ATTEMPTS: [string, string][] = [...SAME_PATH, ...OTHER_SPELLINGS, ...BACKSLASHES].flatMap((t) => [
  [t, 'feedback.example.com'] as [string, string],
  [t, 'ab'] as [string, string],
])
ATTEMPTS.push(['/cd/metrics', 'ab'], ['/c/metrics', 'a'], ['/cd/metrics', 'a.b'])

function findBinary(name: string): string | undefined {
  return [Bun.which(name), `/usr/sbin/${name}`, `/usr/bin/${name}`].find((p): p is string => !!p && existsSync(p))
}

async function waitForPort(p: number, proc: Subprocess, what: string): Promise<void> {
  const deadline = Date.now() + 15_000
  for (;;) {
    try {
      await rawGet(p, '/healthz', 'feedback.example.com')
      return
    } catch {
      // not listening yet
    }
    if (proc.exitCode !== null) throw new Error(`${what} exited with ${proc.exitCode}`)
    if (Date.now() > deadline) throw new Error(`${what} did not listen in 15 s`)
    await Bun.sleep(50)
  }
}

async function strangerNeverGetsMetrics(proxyPort: number): Promise<void> {
  const leaks: string[] = []
  for (const [target, h] of ATTEMPTS) {
    const r = await rawGet(proxyPort, target, h, '127.0.0.2')
    if (isMetrics(r) || r.status === 0 || r.status >= 500) leaks.push(`${h} ${target} -> ${r.status}`)
  }
  expect(leaks).toEqual([])
}

const NGINX = findBinary('nginx')
const NGINX_SKIP = NGINX ? undefined : 'nginx not found: apt-get install nginx (.ci/run does) to test packaging/nginx.conf'
if (NGINX_SKIP) console.warn(`nginx test skipped: ${NGINX_SKIP}`)

/**
 * packaging/nginx.conf as shipped, its TLS server block only, with the TLS lines taken out (the location
 * rules are what is tested), a loopback port, and fixloop's port; wrapped in a minimal main config.
 */
function nginxConfig(dir: string, listenPort: number, upstreamPort: number): string {
  const shipped = readFileSync(join(ROOT, 'packaging', 'nginx.conf'), 'utf8')
  const tlsServer = shipped.slice(shipped.indexOf('server {', shipped.indexOf('server {') + 1))
  expect(tlsServer).toContain('location = /metrics')
  const server = tlsServer
    .replace('listen 443 ssl;', `listen 127.0.0.1:${listenPort};`)
    .split('\n')
    .filter((l) => !/^\s*(ssl_|http2 )/.test(l))
    .join('\n')
    .replaceAll('127.0.0.1:8080', `127.0.0.1:${upstreamPort}`)
  const tmp = join(dir, 'tmp')
  mkdirSync(tmp)
  return `master_process off;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${tmp}/body; proxy_temp_path ${tmp}/proxy; fastcgi_temp_path ${tmp}/fastcgi; uwsgi_temp_path ${tmp}/uwsgi; scgi_temp_path ${tmp}/scgi;
${server}
}
`
}

describe.skipIf(!!NGINX_SKIP)('packaging/nginx.conf in front of the binary', () => {
  let proc: Subprocess
  let proxyPort: number

  beforeAll(async () => {
    const dir = tempDir('fixloop-nginx-')
    proxyPort = await freePort()
    writeFileSync(join(dir, 'nginx.conf'), nginxConfig(dir, proxyPort, port))
    proc = Bun.spawn([NGINX!, '-p', dir, '-c', join(dir, 'nginx.conf')], { stdout: 'ignore', stderr: 'inherit' })
    await waitForPort(proxyPort, proc, 'nginx')
  })
  afterAll(async () => {
    proc?.kill('SIGTERM')
    await proc?.exited
  })

  test('the scraper on 127.0.0.1 gets /metrics through the proxy', async () => {
    expect(isMetrics(await rawGet(proxyPort, '/metrics', 'feedback.example.com', '127.0.0.1'))).toBe(true)
  })

  test('no spelling of /metrics reaches it from another address', async () => {
    await strangerNeverGetsMetrics(proxyPort)
  })

  test('a raw backslash in the path is refused by the proxy (400); in the query it is not', async () => {
    expect((await rawGet(proxyPort, '/x\\..\\healthz', 'feedback.example.com', '127.0.0.2')).status).toBe(400)
    expect((await rawGet(proxyPort, '/healthz?q=a\\b', 'feedback.example.com', '127.0.0.2')).status).toBe(200)
  })
})

const CADDY = findBinary('caddy')
const CADDY_SKIP = CADDY ? undefined : 'caddy not found: apt-get install caddy (.ci/run does) to test packaging/Caddyfile'
if (CADDY_SKIP) console.warn(`Caddy test skipped: ${CADDY_SKIP}`)

/** packaging/Caddyfile as shipped, served over plain http on a loopback port, proxying to fixloop's port. */
function caddyfile(listenPort: number, upstreamPort: number): string {
  const shipped = readFileSync(join(ROOT, 'packaging', 'Caddyfile'), 'utf8')
  expect(shipped).toContain('feedback.example.com {')
  const site = shipped.replace('feedback.example.com {', `http://:${listenPort} {\n\tbind 127.0.0.1`).replaceAll('127.0.0.1:8080', `127.0.0.1:${upstreamPort}`)
  return `{\n\tadmin off\n\tauto_https off\n}\n${site}`
}

describe.skipIf(!!CADDY_SKIP)('packaging/Caddyfile in front of the binary', () => {
  let proc: Subprocess
  let proxyPort: number

  beforeAll(async () => {
    const dir = tempDir('fixloop-caddy-')
    proxyPort = await freePort()
    writeFileSync(join(dir, 'Caddyfile'), caddyfile(proxyPort, port))
    proc = Bun.spawn([CADDY!, 'run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'], {
      env: { PATH: process.env.PATH ?? '', HOME: dir, XDG_DATA_HOME: join(dir, 'data'), XDG_CONFIG_HOME: join(dir, 'config') },
      stdout: 'ignore',
      stderr: 'ignore',
    })
    await waitForPort(proxyPort, proc, 'caddy')
  })
  afterAll(async () => {
    proc?.kill('SIGTERM')
    await proc?.exited
  })

  test('the proxy passes other routes', async () => {
    expect((await rawGet(proxyPort, '/healthz', 'feedback.example.com', '127.0.0.2')).status).toBe(200)
  })

  test('no spelling of /metrics reaches it', async () => {
    await strangerNeverGetsMetrics(proxyPort)
  })
})
