/**
 * The App's mail server is no open relay (security issue item 6, docs/email.md): a public-mode address is
 * confirmed (double opt-in) before any report mail; the confirmation mail quotes nothing the submitter
 * wrote and is rate-limited per App and per address; addresses are normalized (case, +tag, Gmail's dots)
 * for the one-mail rule, the limits and unsubscribes; a public report's text is never quoted. Real server,
 * real SMTP server (test/smtp-sink.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, mailerPass, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { forceStatusIn, feedbackRowIn, markDuplicateIn } from './helpers-lifecycle'
import { userToken } from './helpers-auth'
import { dbRows, dbRun } from './sqlite-of'
import { qpDecode, startSmtpSink, type CaughtMail, type SmtpSink } from './smtp-sink'
import { normalizeAddress } from '../src/modules/mail/address'
import { CONFIRM_PER_ADDRESS_PER_DAY, CONFIRM_PER_APP_PER_HOUR } from '../src/modules/mail/confirm-policy'
import { Mailer, ORG_LANES } from '../src/modules/mail/mailer'
import { Logger } from '../src/core/logger'

let server: TestServer
let sink: SmtpSink

beforeAll(async () => {
  server = await startTestServer({ FIXLOOP_SMTP_ALLOW_PRIVATE: '1' })
  sink = await startSmtpSink(0)
})
afterAll(async () => {
  await sink?.stop()
  await server?.close()
})

async function tenant(name: string): Promise<Tenant> {
  const t = await seedTenant(server.admin, { name }, name)
  const put = await call(server.url, 'PUT', `/v1/apps/${t.appId}/smtp`, { auth: t.key, body: { host: '127.0.0.1', port: sink.port, tls: 'none', from: `${name} <noreply@shop.example>` } })
  expect(put.status).toBe(200)
  return t
}

async function submit(t: Tenant, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const r = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body, headers })
  expect(r.status).toBe(201)
  const id = r.body.id as string
  await eventually(async () => (await feedbackRowIn(server.ctx, id)).redactions !== null)
  return id
}

async function resolve(id: string) {
  await forceStatusIn(server.ctx, id, 'pr_opened')
  expect(await server.services.lifecycle.move(id, 'resolved', { by: 'system', from: 'pr_opened' })).toBe(true)
}

const outbox = async (id: string) => (await dbRows<Record<string, any>>(server.ctx, 'SELECT * FROM mail_outbox WHERE feedback_id = ?', [id]))[0]
const since = (n: number) => sink.mails.slice(n)
const isConfirmation = (m: CaughtMail) => /^Confirm your address/.test(m.headers.get('subject') ?? '')
const linkIn = (m: CaughtMail) => /http:\/\/\S+\/v1\/mail\/confirm\?token=[0-9a-f.]+/.exec(qpDecode(m.body))![0]
/** RFC 2047 encoded words (nodemailer's choice for a subject with quotes) back to text. */
const subjectOf = (m: CaughtMail) =>
  (m.headers.get('subject') ?? '').replace(/=\?UTF-8\?Q\?(.*?)\?=\s*/gi, (_, q: string) => qpDecode(q.replace(/_/g, ' ')))
const post = (url: string) => fetch(url, { method: 'POST', body: 'List-Unsubscribe=One-Click', headers: { 'content-type': 'application/x-www-form-urlencoded' } })

describe('normalized addresses', () => {
  test.each([
    ['Victim@Example.com', 'victim@example.com'],
    ['victim+1@example.com', 'victim@example.com'],
    ['VICTIM+promo+x@EXAMPLE.COM', 'victim@example.com'],
    ['v.i.c.t.i.m@gmail.com', 'victim@gmail.com'],
    ['Vic.Tim+z@GoogleMail.com', 'victim@gmail.com'],
    ['vic.tim@example.com', 'vic.tim@example.com'], // dots matter outside the providers that document otherwise
    ['+x@example.com', '+x@example.com'], // a local part that is only a tag stays itself
  ])('%s -> %s', (given, want) => {
    expect(normalizeAddress(given)).toBe(want)
  })
})

describe('a public submitter cannot make the App mail a stranger', () => {
  test('near-duplicates with spellings of a victim address: one confirmation mail quoting nothing, no report mail without the click', async () => {
    const t = await tenant('Relay')
    const spam = 'Great offer at https://evil.example/win click now'
    const before = sink.mails.length
    const lead = await submit(t, { text: `${spam} one`, notifyEmail: true, identity: { email: 'victim+1@gmail.com', name: 'Visit evil.example' } })
    const dups: string[] = []
    for (const email of ['VICTIM@gmail.com', 'vic.tim@googlemail.com', 'victim+2@gmail.com']) dups.push(await submit(t, { text: `${spam} ${email}`, notifyEmail: true, identity: { email } }))
    for (const d of dups) await markDuplicateIn(server.ctx, d, lead)
    await mailerPass(server)
    await mailerPass(server)
    const asked = since(before)
    expect(asked.length).toBe(1) // one confirmation per App and (normalized) address
    const c = asked[0]
    expect(isConfirmation(c)).toBe(true)
    expect(c.to).toEqual(['victim+1@gmail.com']) // delivered as given
    expect(c.headers.get('subject')).toBe('Confirm your address for Relay')
    const text = qpDecode(c.body)
    for (const bad of ['evil.example', 'Great offer', 'Visit', lead]) expect(text).not.toContain(bad)

    // Resolved without the click: nothing goes out; the wait ends `unconfirmed`.
    await resolve(lead)
    for (const d of dups) await resolve(d)
    await mailerPass(server)
    await mailerPass(server)
    expect(since(before).length).toBe(1)
    expect(await outbox(lead)).toMatchObject({ state: 'pending', attempts: 0 })
    expect(Number((await outbox(lead)).next_attempt_at)).toBeGreaterThan(Date.now() + 6 * 24 * 3_600_000)
    for (const d of dups) expect((await outbox(d)).state).toBe('same_address')
    await dbRun(server.ctx, 'UPDATE mail_outbox SET next_attempt_at = 0 WHERE feedback_id = ?', [lead]) // the week passed
    await mailerPass(server)
    expect(await outbox(lead)).toMatchObject({ state: 'unconfirmed', email_sealed: null })
    expect(since(before).length).toBe(1)
    const n = await call(server.url, 'GET', `/v1/feedback/${lead}/notification`, { auth: t.key })
    expect(n.body.state).toBe('unconfirmed')
  })

  test('the confirmation link: GET confirms nothing, POST confirms once (single use), a forged one is 404; then one mail that quotes nothing of a public report', async () => {
    const t = await tenant('Optin')
    const before = sink.mails.length
    const id = await submit(t, { text: 'Login loops, see https://evil.example/x', notifyEmail: true, identity: { email: 'Ann.Real@example.com' } })
    await mailerPass(server)
    const c = since(before).find(isConfirmation)!
    const link = linkIn(c)
    await resolve(id)
    await mailerPass(server)
    expect(since(before).length).toBe(1)

    const page = await fetch(link)
    expect(page.status).toBe(200)
    const html = await page.text()
    expect(html).toContain('Optin')
    expect(html).toContain('<form method="post"')
    expect((await dbRows<{ state: string }>(server.ctx, 'SELECT state FROM mail_confirmations WHERE app_id = ?', [t.appId]))[0].state).toBe('sent')
    const forged = link.replace(/.$/, (ch) => (ch === '0' ? '1' : '0'))
    expect((await post(forged)).status).toBe(404)
    expect((await fetch(`${server.url}/v1/mail/confirm?token=${'a'.repeat(3000)}`)).status).toBe(404)
    const ok = await post(link)
    expect(ok.status).toBe(200)
    expect(await ok.text()).toContain('Optin will write to you')
    expect((await post(link)).status).toBe(410) // used up

    // The waiting mail was released by the click.
    await mailerPass(server)
    const told = since(before).filter((m) => !isConfirmation(m))
    expect(told.length).toBe(1)
    expect(told[0].to).toEqual(['Ann.Real@example.com'])
    const body = qpDecode(told[0].body)
    expect(body).not.toContain('evil.example')
    expect(body).not.toContain('Login loops')
    expect(subjectOf(told[0])).not.toContain(id)
    expect(subjectOf(told[0])).toMatch(/^Optin: the problem you reported on \d{1,2} [A-Z][a-z]{2} \d{4} is fixed$/)
    expect((await outbox(id)).state).toBe('sent')

    // Confirmed once is confirmed: another report of the same person (another spelling) asks nothing new.
    const again = await submit(t, { text: 'Another one', notifyEmail: true, identity: { email: 'ann.real+later@EXAMPLE.com' } })
    await mailerPass(server)
    await resolve(again)
    await mailerPass(server)
    expect(since(before).filter(isConfirmation).length).toBe(1)
    expect(await outbox(again)).toMatchObject({ state: 'sent' })
  })

  test('an unsubscribe covers every spelling of the address, confirmation mails included', async () => {
    const t = await tenant('Unsub')
    const before = sink.mails.length
    await submit(t, { text: 'First', notifyEmail: true, identity: { email: 'bo@example.com' } })
    await mailerPass(server)
    const c = since(before).find(isConfirmation)!
    const unsub = c.headers.get('list-unsubscribe')!.slice(1, -1)
    expect((await post(unsub)).status).toBe(200)
    // Another spelling, and the confirmation of the first expired: nothing more to that mailbox.
    await dbRun(server.ctx, 'UPDATE mail_confirmations SET sent_at = 1 WHERE app_id = ?', [t.appId])
    const second = await submit(t, { text: 'Second', notifyEmail: true, identity: { email: 'BO+again@example.com' } })
    await mailerPass(server)
    await resolve(second)
    await mailerPass(server)
    expect(since(before).length).toBe(1)
    expect((await dbRows<{ state: string }>(server.ctx, 'SELECT state FROM mail_confirmations WHERE app_id = ?', [t.appId]))[0].state).toBe('unsubscribed')
    await dbRun(server.ctx, 'UPDATE mail_outbox SET next_attempt_at = 0 WHERE feedback_id = ?', [second])
    await mailerPass(server)
    expect(since(before).length).toBe(1)
    expect((await outbox(second)).state).toBe('unsubscribed')
  })

  test(`confirmation mails are rate-limited: ${CONFIRM_PER_APP_PER_HOUR} per App per hour, ${CONFIRM_PER_ADDRESS_PER_DAY} per address per day across Apps`, async () => {
    const t = await tenant('Flood')
    const before = sink.mails.length
    const n = CONFIRM_PER_APP_PER_HOUR + 3
    for (let i = 0; i < n; i++) await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: `Flood ${i}`, notifyEmail: true, identity: { email: `person${i}@example.com` } } })
    await eventually(async () => (await dbRows(server.ctx, 'SELECT id FROM feedback WHERE app_id = ? AND redactions IS NOT NULL', [t.appId])).length === n)
    await mailerPass(server)
    await mailerPass(server)
    expect(since(before).length).toBe(CONFIRM_PER_APP_PER_HOUR)
    const states = await dbRows<{ state: string; n: number }>(server.ctx, 'SELECT state, COUNT(*) AS n FROM mail_confirmations WHERE app_id = ? GROUP BY state ORDER BY state', [t.appId])
    expect(states.map((s) => [s.state, Number(s.n)])).toEqual([['limited', 3], ['sent', CONFIRM_PER_APP_PER_HOUR]])

    const mark = sink.mails.length
    for (let i = 0; i < CONFIRM_PER_ADDRESS_PER_DAY + 2; i++) {
      const other = await tenant(`Spread${i}`)
      await submit(other, { text: 'Same target', notifyEmail: true, identity: { email: `target+${i}@example.com` } })
    }
    await mailerPass(server)
    expect(since(mark).length).toBe(CONFIRM_PER_ADDRESS_PER_DAY)
  })

  test('private mode (ctx.email vouched for by the App): no confirmation; the mail may quote the sanitized text and its subject names the report', async () => {
    const t = await tenant('Vouched')
    const before = sink.mails.length
    const token = await userToken(t.secret, t.appId, 'u-pat', { ctx: { email: 'pat@example.com' } })
    const id = await submit(t, { text: 'Invoices export twice', notifyEmail: true }, { 'X-Service-User-Token': token })
    await mailerPass(server)
    expect(since(before).length).toBe(0)
    await resolve(id)
    await mailerPass(server)
    const told = since(before)
    expect(told.map((m) => m.to[0])).toEqual(['pat@example.com'])
    expect(told[0].headers.get('subject')).toBe('Fixed: Invoices export twice (Vouched)')
    expect(qpDecode(told[0].body)).toContain('You wrote: "Invoices export twice"')
  })
})

describe('the confirm route under junk', () => {
  test('missing, empty, huge, doubled, NUL and forged tokens, junk bodies: 404 pages (or the server\'s 414/431), never a 5xx, nothing confirmed', async () => {
    const t = await tenant('Fuzz')
    const before = sink.mails.length
    await submit(t, { text: 'Fuzz base', notifyEmail: true, identity: { email: 'fuzz@example.com' } })
    await mailerPass(server)
    const link = linkIn(since(before).find(isConfirmation)!)
    const token = new URL(link).searchParams.get('token')!
    const [appId, hash, nonce, mac] = token.split('.')
    const queries = [
      '', '?token=', `?token=${'a'.repeat(100_000)}`, `?token=${token}&token=${token}`, '?token=%00%0d%0a', `?token=${token}%00`,
      `?token=${appId}.${hash}.${nonce}`, `?token=${appId}.${hash}.${'0'.repeat(32)}.${mac}`, `?token=${'f'.repeat(24)}.${hash}.${nonce}.${mac}`,
      `?token=${token.toUpperCase()}`, `?token[a][b]=1`,
    ]
    for (const q of queries) {
      for (const method of ['GET', 'POST']) {
        const r = await fetch(`${server.url}/v1/mail/confirm${q}`, { method, body: method === 'POST' ? '['.repeat(10_000) : undefined })
        expect([404, 414, 431]).toContain(r.status)
      }
    }
    expect((await dbRows<{ state: string }>(server.ctx, 'SELECT state FROM mail_confirmations WHERE app_id = ?', [t.appId]))[0].state).toBe('sent')
    expect((await post(link)).status).toBe(200) // the genuine one still works, once
  })
})

describe('serve start', () => {
  test('FIXLOOP_PUBLIC_URL unset while Apps have SMTP settings: one warning at start naming them (issue 36.11); none with it set', async () => {
    if (process.env.FIXLOOP_TEST_DIALECT === 'pg') return // the data dir's SQLite store is started again below
    const first = await startTestServer({ FIXLOOP_SMTP_ALLOW_PRIVATE: '1' })
    const { loadConfig } = await import('../src/config')
    const { startServer } = await import('../src/runtime/server')
    const { Logger } = await import('../src/core/logger')
    try {
      const t = await seedTenant(first.admin, { name: 'Linky' }, 'Linky')
      await call(first.url, 'PUT', `/v1/apps/${t.appId}/smtp`, { auth: t.key, body: { host: '127.0.0.1', port: 25, tls: 'none', from: 'noreply@linky.example' } })
      await first.stop()
      for (const [env, expectWarning] of [[{}, true], [{ FIXLOOP_PUBLIC_URL: 'https://feedback.linky.example' }, false]] as const) {
        const lines: string[] = []
        const again = await startServer(loadConfig({ host: '127.0.0.1', port: '0', dataDir: first.dataDir }, { FIXLOOP_LOG_LEVEL: 'info', ...env }), { log: new Logger('info', (l) => lines.push(l)) })
        await again.stop()
        const msgs = lines.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { level: string; msg: string })
        const warnings = msgs.filter((m) => m.level === 'warn' && m.msg.includes('FIXLOOP_PUBLIC_URL is not set')).map((m) => m.msg)
        expect(warnings.length).toBe(expectWarning ? 1 : 0)
        if (expectWarning) expect(warnings[0]).toContain(`"Linky" (${t.appId})`)
      }
    } finally {
      await first.close().catch(() => {})
    }
  })
})

describe("one App's slow SMTP server holds its own mail, not the others'", () => {
  test("rows sharing an App (or a confirmation's address) are queued together, others apart", async () => {
    const { queuesSharingKeys } = await import('../src/modules/mail/mailer')
    const rows = [
      { id: 1, app: 'a', to: 'x' },
      { id: 2, app: 'b', to: 'y' },
      { id: 3, app: 'c', to: 'x' },
      { id: 4, app: 'a', to: 'z' },
      { id: 5, app: 'd', to: 'w' },
    ]
    const queues = queuesSharingKeys(rows, (r) => [`app:${r.app}`, `address:${r.to}`]).map((q) => q.map((r) => r.id))
    expect(queues).toEqual([[1, 3, 4], [2], [5]])
    expect(queuesSharingKeys(rows, (r) => [`app:${r.app}`]).map((q) => q.map((r) => r.id))).toEqual([[1, 4], [2], [3], [5]])
  })

  /**
   * An SMTP server that greets, then answers EHLO a line every 300 ms and ends the connection only after
   * 6 s (an audit's went on for minutes); the tests end it as soon as they have seen what they check. An
   * App is set to send through it.
   */
  async function slowSmtpApp(name: string) {
    const net = await import('node:net')
    const state = { closedAt: 0, sockets: new Set<import('node:net').Socket>() }
    const server_ = net.createServer((socket) => {
      state.sockets.add(socket)
      socket.on('error', () => {})
      socket.write('220 slow.test ESMTP\r\n')
      const beat = setInterval(() => socket.write('250-still thinking\r\n'), 300)
      const end = setTimeout(() => socket.destroy(), 6_000)
      socket.on('close', () => {
        clearInterval(beat)
        clearTimeout(end)
        state.closedAt = Date.now()
      })
    })
    await new Promise<void>((resolve) => server_.listen(0, '127.0.0.1', resolve))
    const app = await seedTenant(server.admin, { name }, name)
    const port = (server_.address() as import('node:net').AddressInfo).port
    expect((await call(server.url, 'PUT', `/v1/apps/${app.appId}/smtp`, { auth: app.key, body: { host: '127.0.0.1', port, tls: 'none', from: 'Slow <noreply@slow.example>' } })).status).toBe(200)
    return {
      app,
      state,
      port,
      /** Ends every held connection (the slow attempt fails: the mailer's pass can end). */
      cut: () => state.sockets.forEach((socket) => socket.destroy()),
      close: () => new Promise((resolve) => server_.close(resolve)),
    }
  }

  test("a server that trickles its answer for seconds does not delay another App's confirmation mail", async () => {
    // At 3 s, a PostgreSQL run on a loaded 2-core machine once delivered the quick mail 0.1 s after the slow
    // server's end: the 6 s are the margin for the machine.
    const slow = await slowSmtpApp('Slow')
    try {
      const quickApp = await tenant('Quick')
      // The slow App's confirmation is queued first.
      await submit(slow.app, { text: 'Slow app report', notifyEmail: true, identity: { email: 'ann@slow.example' } })
      await submit(quickApp, { text: 'Quick app report', notifyEmail: true, identity: { email: 'bob@quick.example' } })
      const before = sink.mails.length
      const pass = mailerPass(server)
      await eventually(() => since(before).some((m) => m.to[0] === 'bob@quick.example' && isConfirmation(m)), 10_000)
      // Delivered while the slow server was still holding its connection (one after the other, it came after).
      await eventually(() => slow.state.sockets.size > 0, 5_000) // the slow App's attempt started (first, or beside it)
      expect(slow.state.closedAt).toBe(0) // and its server still holds it
      slow.cut()
      await pass
    } finally {
      await slow.close()
    }
  }, 20_000)

  test('mail queued while a slow server holds a lane is sent beside it, not after it (the lane outlives the pass that claimed it)', async () => {
    const slow = await slowSmtpApp('Slow2')
    try {
      const quickApp = await tenant('Quick2')
      // The slow App's confirmation is claimed and its lane is waiting on the server: only then is the quick one filed.
      await submit(slow.app, { text: 'Slow app report', notifyEmail: true, identity: { email: 'cat@slow.example' } })
      const before = sink.mails.length
      const pass = mailerPass(server)
      await eventually(() => slow.state.sockets.size > 0, 5_000)
      await submit(quickApp, { text: 'Quick app report', notifyEmail: true, identity: { email: 'dan@quick.example' } })
      void server.services.mailer.wake()
      await eventually(() => since(before).some((m) => m.to[0] === 'dan@quick.example' && isConfirmation(m)), 10_000)
      expect(slow.state.closedAt).toBe(0) // the slow server still holds its connection
      slow.cut()
      await pass
    } finally {
      await slow.close()
    }
  }, 20_000)

  test('an App whose server failed an attempt: its other claimed mail waits for the first backoff instead of holding the lane for another timeout each', async () => {
    const slow = await slowSmtpApp('Slow4')
    await server.services.mailer.stop()
    const mailer = new Mailer(server.ctx, new Logger('silent'), { mayAct: () => true })
    try {
      for (const who of ['gil', 'hal', 'ida']) await submit(slow.app, { text: `Report of ${who}`, notifyEmail: true, identity: { email: `${who}@slow.example` } })
      const pass = mailer.wake()
      await eventually(() => slow.state.sockets.size > 0, 5_000)
      const failedAt = Date.now()
      slow.cut() // the first attempt fails
      await pass
      expect(slow.state.sockets.size).toBe(1) // the two others were not tried against the same server
      const rows = await dbRows<{ attempts: number; lease_until: number | null; next_attempt_at: number }>(
        server.ctx,
        'SELECT attempts, lease_until, next_attempt_at FROM mail_confirmations WHERE app_id = ? ORDER BY attempts',
        [slow.app.appId],
      )
      expect(rows.map((r) => [Number(r.attempts), r.lease_until])).toEqual([
        [0, null],
        [0, null],
        [1, null],
      ])
      // Not claimable again before the first backoff (30 s), like the failed one.
      for (const r of rows) expect(Number(r.next_attempt_at)).toBeGreaterThanOrEqual(failedAt + 25_000)
    } finally {
      server.services.mailer.start(server.services.hub)
      await slow.close()
    }
  }, 20_000)

  test("an Org's slow servers hold at most its share of the lanes: another Org's mail goes out beside them at once", async () => {
    const slow = await slowSmtpApp('SlowOrg')
    // The slow Org has more Apps than its share (ORG_LANES), every one sending through the slow server.
    const apps = [slow.app.appId]
    for (let i = 1; i <= ORG_LANES; i++) {
      const app = await server.admin.createApp(slow.app.orgId, { name: `SlowOrg App ${i}` })
      const put = await call(server.url, 'PUT', `/v1/apps/${app.id}/smtp`, { auth: slow.app.key, body: { host: '127.0.0.1', port: slow.port, tls: 'none', from: 'Slow <noreply@slow.example>' } })
      expect(put.status).toBe(200)
      apps.push(app.id)
    }
    await server.services.mailer.stop()
    const mailer = new Mailer(server.ctx, new Logger('silent'), { mayAct: () => true })
    try {
      const quickOrg = await tenant('QuickOrg')
      for (const [i, appId] of apps.entries()) {
        const pub = (await dbRows<{ public_key: string }>(server.ctx, 'SELECT public_key FROM apps WHERE id = ?', [appId]))[0].public_key
        const r = await call(server.url, 'POST', '/v1/feedback', { auth: pub, body: { text: `Slow org report ${i}`, notifyEmail: true, identity: { email: `so${i}@slow.example` } } })
        expect(r.status).toBe(201)
        await eventually(async () => (await feedbackRowIn(server.ctx, r.body.id)).redactions !== null)
      }
      const pass = mailer.wake()
      await eventually(() => slow.state.sockets.size >= ORG_LANES, 5_000)
      await Bun.sleep(300)
      expect(slow.state.sockets.size).toBe(ORG_LANES) // the Org's share, though lanes were free for one more
      // Its mail beyond the share was given back unstarted: no lease, no attempt counted.
      const rows = await dbRows<{ attempts: number; lease_until: number | null }>(
        server.ctx,
        `SELECT attempts, lease_until FROM mail_confirmations WHERE org_id = ? ORDER BY attempts`,
        [slow.app.orgId],
      )
      expect(rows.map((r) => [Number(r.attempts), r.lease_until === null])).toEqual([[0, true], ...Array.from({ length: ORG_LANES }, () => [1, false])])
      // Another Org's mail, filed now, is sent while every slow attempt is still held.
      const before = sink.mails.length
      await submit(quickOrg, { text: 'Quick org report', notifyEmail: true, identity: { email: 'quinn@quick.example' } })
      void mailer.wake()
      await eventually(() => since(before).some((m) => m.to[0] === 'quinn@quick.example' && isConfirmation(m)), 5_000)
      expect(slow.state.closedAt).toBe(0)
      // Stopped before the slow attempts end: the given-back mail is not tried against the slow server again.
      const stopped = mailer.stop()
      slow.cut()
      await stopped
      await pass
    } finally {
      await mailer.stop()
      server.services.mailer.start(server.services.hub)
      await slow.close()
    }
  }, 30_000)

  test("an App whose server failed an attempt: its mail claimed after the failure (by a later pass) waits for the backoff too", async () => {
    const slow = await slowSmtpApp('Slow5')
    await server.services.mailer.stop()
    const mailer = new Mailer(server.ctx, new Logger('silent'), { mayAct: () => true })
    try {
      await submit(slow.app, { text: 'Report of jan', notifyEmail: true, identity: { email: 'jan@slow.example' } })
      const pass = mailer.wake()
      await eventually(() => slow.state.sockets.size > 0, 5_000)
      // Filed while the first attempt is in hand: claimed only by a pass after it (the App is held till then).
      await submit(slow.app, { text: 'Report of kai', notifyEmail: true, identity: { email: 'kai@slow.example' } })
      void mailer.wake()
      const failedAt = Date.now()
      slow.cut() // the first attempt fails
      await pass
      await mailer.wake()
      expect(slow.state.sockets.size).toBe(1) // the later one was not tried against the failed server
      const rows = await dbRows<{ attempts: number; lease_until: number | null; next_attempt_at: number }>(
        server.ctx,
        'SELECT attempts, lease_until, next_attempt_at FROM mail_confirmations WHERE app_id = ? ORDER BY attempts',
        [slow.app.appId],
      )
      expect(rows.map((r) => [Number(r.attempts), r.lease_until])).toEqual([
        [0, null],
        [1, null],
      ])
      for (const r of rows) expect(Number(r.next_attempt_at)).toBeGreaterThanOrEqual(failedAt + 25_000)
    } finally {
      await mailer.stop()
      server.services.mailer.start(server.services.hub)
      await slow.close()
    }
  }, 30_000)

  test('a stop (a shutdown, the dispatch role lost) waits for the attempt in hand only: the App\'s next mail is not started, and is given back', async () => {
    const slow = await slowSmtpApp('Slow3')
    // The server's mailer steps aside; this one asks both confirmations and claims them in one batch (one
    // App: one lane, one after the other).
    await server.services.mailer.stop()
    const mailer = new Mailer(server.ctx, new Logger('silent'), { mayAct: () => true })
    try {
      for (const who of ['eve', 'fay']) await submit(slow.app, { text: `Report of ${who}`, notifyEmail: true, identity: { email: `${who}@slow.example` } })
      const pass = mailer.wake()
      await eventually(() => slow.state.sockets.size > 0, 5_000)
      const stopped = mailer.stop()
      await Bun.sleep(300)
      slow.cut() // the attempt in hand fails
      await stopped
      await pass
      await Bun.sleep(300)
      expect(slow.state.sockets.size).toBe(1) // the second confirmation was not started
      const states = await dbRows<{ state: string; attempts: number; lease_until: number | null }>(
        server.ctx,
        'SELECT state, attempts, lease_until FROM mail_confirmations WHERE app_id = ? ORDER BY attempts',
        [slow.app.appId],
      )
      // One to retry on its backoff; one never tried, given back: claimable at once (no lease), no attempt counted.
      expect(states.map((r) => [r.state, Number(r.attempts), r.lease_until])).toEqual([
        ['pending', 0, null],
        ['pending', 1, null],
      ])
    } finally {
      server.services.mailer.start(server.services.hub)
      await slow.close()
    }
  }, 20_000)
})
