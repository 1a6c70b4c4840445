/**
 * The SMTP address guard (docs/email.md "Which SMTP hosts are allowed"), on a real server with
 * FIXLOOP_SMTP_ALLOW_PRIVATE off: private, loopback, link-local and metadata hosts (and names resolving to
 * them) are refused when the settings are saved and again before every connection (test mail and
 * reporter mails), the refusal connects nowhere (a real TCP listener counts connections) and says the same
 * whatever is behind the address, so the test mail is no port-probing oracle. Runs on PostgreSQL too with
 * FIXLOOP_TEST_DIALECT=pg. The existing mail tests show the knob on: their SMTP server on 127.0.0.1 works.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import net from 'node:net'
import tls from 'node:tls'
import { startSmtpSink } from './smtp-sink'
import { mailerPass, tempDir } from './harness'
import { call, eventually, freePort, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { feedbackRowIn, forceStatusIn } from './helpers-lifecycle'
import { userToken } from './helpers-auth'
import { type SmtpRow } from '../src/modules/mail/repo'
import { smtpGuardRefusal } from '../src/modules/mail/smtp-guard'
import { MailError, sendVia } from '../src/modules/mail/transport'

let server: TestServer
let t: Tenant
let listener: net.Server
let listenerPort: number
let connections = 0

beforeAll(async () => {
  server = await startTestServer()
  t = await seedTenant(server.admin, { name: 'Guarded' })
  // A real listener on loopback: whatever the guard lets through would show up here.
  listener = net.createServer((socket) => {
    connections++
    socket.end('220 probe.internal ESMTP\r\n')
  })
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve))
  listenerPort = (listener.address() as net.AddressInfo).port
})
afterAll(async () => {
  await new Promise((resolve) => listener?.close(resolve))
  await server?.close()
})

const smtpOf = (host: string, port = 25) => ({ host, port, tls: 'none', from: 'noreply@shop.example' })

/** Stores settings past the PUT check: what a name that resolved to a public address yesterday looks like today. */
async function storeDirectly(host: string, port: number) {
  const row: SmtpRow = { app_id: t.appId, org_id: t.orgId, host, port, tls_mode: 'none', username: null, password_sealed: null, from_address: 'noreply@shop.example', updated_at: Date.now() }
  await server.ctx.store.mail.putSmtp(row, [])
}

const PRIVATE_HOSTS = [
  '127.0.0.1',
  '10.0.0.5',
  '10.1',
  '172.16.3.4',
  '192.168.1.1',
  '100.64.0.1',
  '169.254.169.254',
  '0.0.0.0',
  '[::1]',
  '[::]',
  '[0:0:0:0:0:0:0:1]',
  '[::ffff:127.0.0.1]',
  '[::ffff:a9fe:a9fe]',
  '[fd00:ec2::254]',
  '[fe80::1]',
  '[64:ff9b::7f00:1]',
  'localhost',
  '2130706433',
  '0x7f.1',
  '0x7f000001',
  '0177.0.0.1',
  '127.1',
]

describe('FIXLOOP_SMTP_ALLOW_PRIVATE off', () => {
  test.each(PRIVATE_HOSTS)('PUT with host %s is 400 invalid_body naming the rule and the knob; nothing is stored', async (host) => {
    const r = await call(server.url, 'PUT', `/v1/apps/${t.appId}/smtp`, { auth: t.key, body: smtpOf(host) })
    expect(r.status).toBe(400)
    expect(r.body.error.code).toBe('invalid_body')
    const issue = r.body.error.details.issues[0]
    expect(issue.path).toBe('/host')
    expect(issue.message).toContain('SMTP address guard')
    expect(issue.message).toContain('FIXLOOP_SMTP_ALLOW_PRIVATE=1')
    expect((await call(server.url, 'GET', `/v1/apps/${t.appId}/smtp`, { auth: t.key })).status).toBe(404)
  })

  test('a test mail to stored private settings is refused before any connection, with one answer whatever listens there', async () => {
    const closedPort = await freePort()
    const answers = new Set<string>()
    for (const [host, port] of [
      ['127.0.0.1', listenerPort],
      ['127.0.0.1', closedPort],
      ['localhost', listenerPort],
      ['[::1]', listenerPort],
      ['2130706433', listenerPort],
      ['169.254.169.254', 25],
      ['10.0.0.5', 25],
    ] as const) {
      await storeDirectly(host, port)
      const r = await call(server.url, 'POST', `/v1/apps/${t.appId}/smtp/test`, { auth: t.key, body: { to: 'ops@shop.example' } })
      expect(r.status).toBe(200)
      expect(r.body).toEqual({ sent: false, to: 'o***@shop.example', error: smtpGuardRefusal() })
      answers.add(r.text)
    }
    expect(answers.size).toBe(1) // an open port, a closed one and a metadata address look alike
    expect(connections).toBe(0)
  })

  test("a reporter's mail to a host that now resolves privately is a failed attempt with the reason, retried on the backoff, never connected", async () => {
    await storeDirectly('localhost', listenerPort)
    // Private mode: the address is vouched for (a public one would wait for its confirmation first).
    const token = await userToken(t.secret, t.appId, 'u-ann', { ctx: { email: 'ann@example.com' } })
    const r = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'Checkout button dead', notifyEmail: true }, headers: { 'X-Service-User-Token': token } })
    expect(r.status).toBe(201)
    const id = r.body.id as string
    await eventually(async () => (await feedbackRowIn(server.ctx, id)).redactions !== null)
    await forceStatusIn(server.ctx, id, 'pr_opened')
    await server.services.lifecycle.move(id, 'resolved', { by: 'system', from: 'pr_opened' })
    await mailerPass(server)
    const n = await call(server.url, 'GET', `/v1/feedback/${id}/notification`, { auth: t.key })
    expect(n.status).toBe(200)
    expect(n.body).toMatchObject({ state: 'pending', attempts: 1, lastError: smtpGuardRefusal() })
    expect(Date.parse(n.body.nextAttemptAt)).toBeGreaterThan(Date.now() + 20_000)
    expect(connections).toBe(0)
  })

  test('fuzz: the host field (huge, unicode, IPv6 forms, numeric IPv4 forms, trailing dot) gets the envelope, is never stored, never a 5xx', async () => {
    const hosts: unknown[] = [
      'h'.repeat(100_000),
      'a'.repeat(255),
      `${'a'.repeat(63)}.`.repeat(5),
      '',
      ' ',
      '\u0000',
      'localhost.',
      '127.0.0.1.',
      'mäil.example',
      'ｌｏｃａｌｈｏｓｔ',
      '127。0。0。1',
      '١٢٧.٠.٠.١',
      '\u202elocalhost',
      '::1',
      '[::1',
      '[::1]:25',
      '[::1%lo]',
      '[fe80::1%25eth0]',
      '[0000:0000:0000:0000:0000:0000:0000:0001]',
      '[::ffff:7f00:1]',
      '[::127.0.0.1]',
      '[2002:7f00:1::1]',
      '0x7f.0x0.0x0.0x1',
      '017700000001',
      '0x7F.1',
      '127.0.0.1:25',
      'user@127.0.0.1',
      'http://127.0.0.1/',
      '127.0.0.1\r\nRCPT TO:<x@y>',
      12345,
      null,
      ['127.0.0.1'],
      { host: '127.0.0.1' },
    ]
    for (const host of hosts) {
      const r = await call(server.url, 'PUT', `/v1/apps/${t.appId}/smtp`, { auth: t.key, body: { ...smtpOf('x'), host } })
      expect(`${JSON.stringify(host).slice(0, 60)} ${r.status}`).toBe(`${JSON.stringify(host).slice(0, 60)} 400`)
      expect(r.body.error.code).toBe('invalid_body')
    }
    // Junk query parameters change nothing.
    const q = await call(server.url, 'PUT', `/v1/apps/${t.appId}/smtp?host=8.8.8.8&allowPrivate=1`, { auth: t.key, body: smtpOf('127.0.0.1') })
    expect(q.status).toBe(400)
    expect(connections).toBe(0)
  })
})

describe('FIXLOOP_SMTP_ALLOW_PRIVATE=1 (a local relay)', () => {
  let relayServer: TestServer
  let app: Tenant
  beforeAll(async () => {
    relayServer = await startTestServer({ FIXLOOP_SMTP_ALLOW_PRIVATE: '1' })
    app = await seedTenant(relayServer.admin, { name: 'Relay' }, 'RelayOrg')
  })
  afterAll(async () => {
    await relayServer?.close()
  })

  test('a name resolving to loopback is saved and the test mail reaches the relay there', async () => {
    const sink = await startSmtpSink(0)
    try {
      const put = await call(relayServer.url, 'PUT', `/v1/apps/${app.appId}/smtp`, { auth: app.key, body: smtpOf('localhost', sink.port) })
      expect(put.status).toBe(200)
      const r = await call(relayServer.url, 'POST', `/v1/apps/${app.appId}/smtp/test`, { auth: app.key, body: { to: 'ops@relay.example' } })
      expect(r.body).toEqual({ sent: true, to: 'o***@relay.example' })
      expect(sink.mails.map((m) => m.to[0])).toEqual(['ops@relay.example'])
    } finally {
      await sink.stop()
    }
  })

  test('connecting to the checked IP keeps the configured name for TLS (SNI), and an IP literal sends none', async () => {
    // A real TLS listener with a self-signed certificate: the client's verification fails (as it must),
    // after the ClientHello told us which server name it asked for.
    const dir = tempDir('fixloop-smtp-tls-')
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem'), '-days', '1', '-subj', '/CN=localhost'], { stdio: 'ignore' })
    const secure = { key: readFileSync(join(dir, 'k.pem')), cert: readFileSync(join(dir, 'c.pem')) }
    const asked: string[] = []
    let handshakes = 0
    const tlsServer = tls.createServer({ ...secure, SNICallback: (name, cb) => (asked.push(name), cb(null, tls.createSecureContext(secure))) }, (socket) => socket.end('220 tls.test ESMTP\r\n'))
    tlsServer.on('connection', () => handshakes++)
    tlsServer.on('tlsClientError', () => {})
    await new Promise<void>((resolve) => tlsServer.listen(0, '127.0.0.1', resolve))
    const port = (tlsServer.address() as net.AddressInfo).port
    try {
      for (const host of ['localhost', '127.0.0.1']) {
        await call(relayServer.url, 'PUT', `/v1/apps/${app.appId}/smtp`, { auth: app.key, body: { ...smtpOf(host, port), tls: 'tls' } })
        const r = await call(relayServer.url, 'POST', `/v1/apps/${app.appId}/smtp/test`, { auth: app.key, body: { to: 'ops@relay.example' } })
        expect(r.body.sent).toBe(false)
        expect(r.body.error).not.toContain('SMTP address guard')
      }
      expect(handshakes).toBe(2)
      expect(asked).toEqual(['localhost'])
    } finally {
      await new Promise((resolve) => tlsServer.close(resolve))
    }
  })
})

describe('the checked addresses of a name, in resolver order', () => {
  const row = (port: number): SmtpRow => ({ app_id: 'a', org_id: 'o', host: 'relay.test', port, tls_mode: 'none', username: null, password_sealed: null, from_address: 'noreply@relay.test', updated_at: 0 })
  const mail = { to: 'ops@relay.test', subject: 's', text: 't', headers: {} }

  test('an address that refuses the connection is passed over for the next', async () => {
    const sink = await startSmtpSink(0)
    try {
      // 127.0.0.2 is loopback too, but nothing listens there on the sink's port: ECONNREFUSED.
      await sendVia([{ address: '127.0.0.2', family: 4 }, { address: '127.0.0.1', family: 4 }], undefined, server.ctx.box, row(sink.port), mail)
      expect(sink.mails.map((m) => m.to[0])).toEqual(['ops@relay.test'])
      // Only refused addresses: the last error, not permanent (the mailer retries on its backoff).
      const err = await sendVia([{ address: '127.0.0.2', family: 4 }, { address: '127.0.0.3', family: 4 }], undefined, server.ctx.box, row(sink.port), mail).catch((e) => e)
      expect(err).toBeInstanceOf(MailError)
      expect(err.message).toContain('ECONNREFUSED')
      expect(err.permanent).toBe(false)
    } finally {
      await sink.stop()
    }
  })

  test('a server that answers a line every half second and never finishes is cut at the overall deadline (idle timeouts never fire)', async () => {
    // An audit's server: greets, then a never-ending multi-line EHLO answer. It held the instance's mailer
    // (every App's mail) for as long as it liked.
    let closedAt = 0
    const timers = new Set<ReturnType<typeof setInterval>>()
    const trickler = net.createServer((socket) => {
      socket.on('error', () => {})
      socket.write('220 slow.test ESMTP\r\n')
      socket.once('data', () => {
        const beat = setInterval(() => socket.write('250-still thinking\r\n'), 500)
        timers.add(beat)
        socket.on('close', () => {
          clearInterval(beat)
          closedAt = Date.now()
        })
      })
    })
    await new Promise<void>((resolve) => trickler.listen(0, '127.0.0.1', resolve))
    const port = (trickler.address() as net.AddressInfo).port
    try {
      const started = Date.now()
      const err = await sendVia([{ address: '127.0.0.1', family: 4 }], undefined, server.ctx.box, row(port), mail, Date.now() + 2_000).catch((e) => e)
      const took = Date.now() - started
      expect(err).toBeInstanceOf(MailError)
      expect(err.message).toContain('overall deadline')
      expect(err.permanent).toBe(false)
      expect(took).toBeGreaterThanOrEqual(1_900)
      expect(took).toBeLessThan(6_000)
      // The connection is ended, not left to the server.
      await eventually(() => closedAt > 0, 3_000)
      // A deadline already past: nothing is tried.
      const late = await sendVia([{ address: '127.0.0.1', family: 4 }], undefined, server.ctx.box, row(port), mail, Date.now() - 1).catch((e) => e)
      expect(late.message).toContain('overall deadline')
    } finally {
      for (const timer of timers) clearInterval(timer)
      await new Promise((resolve) => trickler.close(resolve))
    }
  })
})

describe('which SMTP refusals end a mail at once', () => {
  const row = (port: number): SmtpRow => ({ app_id: 'a', org_id: 'o', host: 'relay.test', port, tls_mode: 'none', username: null, password_sealed: null, from_address: 'noreply@relay.test', updated_at: 0 })
  const mail = { to: 'ops@relay.test', subject: 's', text: 't', headers: {} }
  const refusal = (responseCode: number, message: string) => Object.assign(new Error(message), { responseCode })

  // A real SMTP server (smtp-server) answering one command with a refusal. Only a 5xx about the recipient
  // or the message is final (docs/email.md); a server refusing the connection, wanting authentication or
  // refusing the sender (the App's settings, fixable) is a failed attempt retried on the backoff: a
  // reporter's mail is not given up at the first try because the server was refusing for a while.
  const cases: [string, Record<string, unknown>, boolean][] = [
    ['554 greeting (too many connections, a blocklisted address)', { onConnect: (_s: unknown, cb: (e?: Error) => void) => cb(refusal(554, 'too many connections from your address')) }, false],
    ['530 at MAIL FROM (authentication required)', { onMailFrom: (_a: unknown, _s: unknown, cb: (e?: Error) => void) => cb(refusal(530, '5.7.0 Authentication required')) }, false],
    ['553 at MAIL FROM (the sender setting refused)', { onMailFrom: (_a: unknown, _s: unknown, cb: (e?: Error) => void) => cb(refusal(553, '5.7.1 Sender address rejected')) }, false],
    ['530 at RCPT TO (authentication required)', { onRcptTo: (_a: unknown, _s: unknown, cb: (e?: Error) => void) => cb(refusal(530, '5.7.1 Authentication required')) }, false],
    ['451 at RCPT TO (try later)', { onRcptTo: (_a: unknown, _s: unknown, cb: (e?: Error) => void) => cb(refusal(451, '4.3.0 try again later')) }, false],
    ['550 at RCPT TO (no such mailbox: final)', { onRcptTo: (_a: unknown, _s: unknown, cb: (e?: Error) => void) => cb(refusal(550, '5.1.1 no such user')) }, true],
    ['554 after DATA (the message refused: final)', { onData: (stream: NodeJS.ReadableStream, _s: unknown, cb: (e?: Error) => void) => { stream.resume(); stream.on('end', () => cb(refusal(554, '5.7.1 message refused'))) } }, true],
  ]
  for (const [name, hooks, permanent] of cases) {
    test(`${name}: ${permanent ? 'final' : 'retried'}`, async () => {
      const { SMTPServer } = await import('smtp-server')
      const smtp = new SMTPServer({ secure: false, disabledCommands: ['STARTTLS', 'AUTH'], authOptional: true, logger: false, ...hooks })
      await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve))
      try {
        const port = (smtp.server.address() as net.AddressInfo).port
        const err = await sendVia([{ address: '127.0.0.1', family: 4 }], undefined, server.ctx.box, row(port), mail).catch((e) => e)
        expect(err).toBeInstanceOf(MailError)
        expect({ name, permanent: err.permanent }).toEqual({ name, permanent })
      } finally {
        await new Promise((resolve) => smtp.close(() => resolve(undefined)))
      }
    })
  }
})

describe('FIXLOOP_SMTP_ALLOW_PRIVATE parsing', () => {
  test('off by default, 1 turns it on, anything unreadable stops the start', async () => {
    const { loadConfig, ConfigError } = await import('../src/config')
    expect(loadConfig({}, {}).smtpAllowPrivate).toBe(false)
    expect(loadConfig({}, { FIXLOOP_SMTP_ALLOW_PRIVATE: '1' }).smtpAllowPrivate).toBe(true)
    expect(loadConfig({}, { FIXLOOP_SMTP_ALLOW_PRIVATE: '0' }).smtpAllowPrivate).toBe(false)
    expect(() => loadConfig({}, { FIXLOOP_SMTP_ALLOW_PRIVATE: 'maybe' })).toThrow(ConfigError)
  })
})
