/**
 * Telling the reporter (docs/email.md), end to end on a real server and a real SMTP server: the opt-in at
 * submission, the App's SMTP settings through the API, exactly one mail per resolved report (duplicates
 * each by their own move), its content and unsubscribe headers, the one-click unsubscribe, retries after
 * the SMTP server was down, and nothing without opt-in.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, freePort, mailerPass, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { forceStatusIn, feedbackRowIn, markDuplicateIn } from './helpers-lifecycle'
import { userToken } from './helpers-auth'
import { dbRows, dbRun } from './sqlite-of'
import { qpDecode, startSmtpSink, type SmtpSink } from './smtp-sink'
import { Mailer } from '../src/modules/mail/mailer'
import { Logger } from '../src/core/logger'

let server: TestServer
let t: Tenant
let sink: SmtpSink

beforeAll(async () => {
  server = await startTestServer({ FIXLOOP_SMTP_ALLOW_PRIVATE: '1' })
  t = await seedTenant(server.admin, { name: 'Shop' })
  sink = await startSmtpSink(0, { user: 'mailer', pass: 's3cret-pass' })
})
afterAll(async () => {
  await sink?.stop()
  await server?.close()
})

const smtpOf = (port: number) => ({ host: '127.0.0.1', port, tls: 'none', user: 'mailer', password: 's3cret-pass', from: 'Shop <noreply@shop.example>' })

async function submitReport(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const r = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body, headers })
  expect(r.status).toBe(201)
  const id = r.body.id as string
  // The worker sanitizes it (the mail quotes sanitized text only).
  await eventually(async () => (await feedbackRowIn(server.ctx, id)).redactions !== null)
  const email = (body.identity as { email?: string } | undefined)?.email
  if (body.notifyEmail === true && email && !headers['X-Service-User-Token']) await confirmAddress(email)
  return id
}

/** Public mode's double opt-in: the address's owner clicks the link of the one confirmation mail (if one came). */
async function confirmAddress(email: string) {
  await mailerPass(server)
  const mail = sink.mails.findLast((m) => m.to[0] === email && /^Confirm your address/.test(m.headers.get('subject') ?? ''))
  if (!mail) return
  const link = /http:\/\/\S+\/v1\/mail\/confirm\?token=[0-9a-f.]+/.exec(qpDecode(mail.body))![0]
  expect((await fetch(link)).status).toBe(200)
  await fetch(link, { method: 'POST' })
}

/** The report's way to `resolved` through the lifecycle: forced to pr_opened, then the system move (a merge). */
async function resolve(id: string) {
  await forceStatusIn(server.ctx, id, 'pr_opened')
  expect(await server.services.lifecycle.move(id, 'resolved', { by: 'system', from: 'pr_opened' })).toBe(true)
}

const outbox = async (id: string) => (await dbRows<Record<string, any>>(server.ctx, 'SELECT * FROM mail_outbox WHERE feedback_id = ?', [id]))[0]

describe('opt-in at submission', () => {
  test.each([
    ['public mode without identity.email', { text: 'The cart is empty', notifyEmail: true }, '/notifyEmail'],
    ['public mode with a malformed address', { text: 'The cart is empty', notifyEmail: true, identity: { email: 'a@b' } }, '/identity/email'],
    ['an address that smuggles a header', { text: 'The cart is empty', notifyEmail: true, identity: { email: 'a@b.example\r\nBcc: x@y.example' } }, '/identity/email'],
    // A local part starting or ending with a dot, or with two in a row, is no RFC 5321 dot-string: every
    // server answers RCPT TO with 501, so the report was taken (201) and its mail failed, a confirmation spent.
    ...['..a@example.com', 'a..b@example.com', 'a.@example.com', '.a@example.com'].map(
      (email) => [`a local part no server takes (${email})`, { text: 'The cart is empty', notifyEmail: true, identity: { email } }, '/identity/email'] as const,
    ),
    ['notifyEmail not a boolean', { text: 'The cart is empty', notifyEmail: 'yes', identity: { email: 'ann@example.com' } }, null],
  ])('%s: 400 invalid_body', async (_name, body, path) => {
    const r = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body })
    expect(r.status).toBe(400)
    expect(r.body.error.code).toBe('invalid_body')
    if (path) expect(JSON.stringify(r.body.error.details.issues)).toContain(path)
  })

  test('private mode needs ctx.email in the user token', async () => {
    const token = await userToken(t.secret, t.appId, 'u-no-mail', { ctx: { plan: 'pro' } })
    const r = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'Broken', notifyEmail: true }, headers: { 'X-Service-User-Token': token } })
    expect(r.status).toBe(400)
    expect(r.body.error.message + JSON.stringify(r.body.error.details)).toContain('ctx.email')
  })

  test('the address is stored sealed, nowhere in clear beside the identity, and never in events', async () => {
    const id = await submitReport({ text: 'Checkout button is grey', notifyEmail: true, identity: { email: 'sealed.person@example.com' } })
    const row = await feedbackRowIn(server.ctx, id)
    expect(String(row.notify_email_sealed)).toStartWith('v1:')
    expect(String(row.notify_email_sealed)).not.toContain('sealed.person')
    const events = await dbRows<{ data: string }>(server.ctx, 'SELECT data FROM events WHERE feedback_id = ?', [id])
    expect(events.length).toBeGreaterThan(0)
    for (const e of events) expect(e.data).not.toContain('sealed.person')
  })
})

describe('SMTP settings API', () => {
  test('set, read (password never returned), clear; validation; cross-Org 404', async () => {
    const put = await call(server.url, 'PUT', `/v1/apps/${t.appId}/smtp`, { auth: t.key, body: smtpOf(sink.port) })
    expect(put.status).toBe(200)
    expect(put.body).toMatchObject({ appId: t.appId, host: '127.0.0.1', tls: 'none', user: 'mailer', passwordSet: true })
    expect(put.text).not.toContain('s3cret-pass')
    const get = await call(server.url, 'GET', `/v1/apps/${t.appId}/smtp`, { auth: t.key })
    expect(get.body.passwordSet).toBe(true)
    expect(get.text).not.toContain('s3cret-pass')
    const stored = (await dbRows<{ password_sealed: string }>(server.ctx, 'SELECT password_sealed FROM app_smtp WHERE app_id = ?', [t.appId]))[0]
    expect(stored.password_sealed).toStartWith('v1:')
    const audit = await dbRows<{ data: string }>(server.ctx, "SELECT data FROM audit_log WHERE action = 'app.smtp_set'")
    for (const a of audit) expect(a.data).not.toContain('s3cret-pass')

    for (const [body, path] of [
      [{ ...smtpOf(25), host: 'bad host\r\n' }, '/host'],
      [{ ...smtpOf(25), port: 70000 }, 'port'],
      [{ ...smtpOf(25), tls: 'ssl3' }, 'tls'],
      [{ ...smtpOf(25), from: 'x\r\nBcc: a@b.c' }, '/from'],
      [{ ...smtpOf(25), extra: 1 }, ''],
    ] as const) {
      const r = await call(server.url, 'PUT', `/v1/apps/${t.appId}/smtp`, { auth: t.key, body })
      expect(r.status).toBe(400)
      expect(r.body.error.code).toBe('invalid_body')
      expect(JSON.stringify(r.body.error.details)).toContain(path)
    }
    const other = await seedTenant(server.admin, {}, 'Other')
    expect((await call(server.url, 'GET', `/v1/apps/${t.appId}/smtp`, { auth: other.key })).status).toBe(404)
    expect((await call(server.url, 'PUT', `/v1/apps/${t.appId}/smtp`, { auth: other.key, body: smtpOf(25) })).status).toBe(404)
    expect((await call(server.url, 'GET', `/v1/apps/${other.appId}/smtp`, { auth: other.key })).status).toBe(404)
  })

  test('fuzz: deep nesting, huge values, junk ids and queries get the envelope, never a 5xx', async () => {
    const deep = JSON.parse('['.repeat(5000) + ']'.repeat(5000))
    const cases: [string, string, unknown][] = [
      ['PUT', `/v1/apps/${t.appId}/smtp`, { ...smtpOf(25), host: deep }],
      ['PUT', `/v1/apps/${t.appId}/smtp`, { ...smtpOf(25), host: 'h'.repeat(100_000) }],
      ['PUT', `/v1/apps/${t.appId}/smtp`, { ...smtpOf(25), password: 'p'.repeat(100_000) }],
      ['PUT', `/v1/apps/${t.appId}/smtp`, { ...smtpOf(25), port: 1e308 }],
      ['PUT', `/v1/apps/${t.appId}/smtp`, 'not an object'],
      ['PUT', '/v1/apps/zz/smtp', smtpOf(25)],
      ['POST', `/v1/apps/${t.appId}/smtp/test`, { to: 'x'.repeat(10_000) }],
      ['POST', `/v1/apps/${t.appId}/smtp/test`, { to: 'a@b.example\r\nBcc: c@d.example' }],
      ['GET', '/v1/feedback/zz/notification', undefined],
      ['GET', `/v1/feedback/${'f'.repeat(24)}/notification`, undefined],
    ]
    for (const [method, path, body] of cases) {
      const r = await call(server.url, method, path, { auth: t.key, body })
      expect(r.status).toBeGreaterThanOrEqual(400)
      expect(r.status).toBeLessThan(500)
      expect(r.body.error.code).toBeString()
    }
    // A query parameter a route does not read is ignored, as on GET /v1/feedback/:id.
    const junk = await call(server.url, 'GET', `/v1/apps/${t.appId}/smtp?junk[a][b]=1&${'x'.repeat(2000)}=1`, { auth: t.key })
    expect(junk.status).toBe(200)
    expect(junk.text).not.toContain('s3cret-pass')
    for (const q of ['', '?token=', `?token=${'a'.repeat(100_000)}`, '?token=a&token=b', '?token=%00%0d%0a']) {
      for (const method of ['GET', 'POST']) {
        const r = await fetch(`${server.url}/v1/mail/unsubscribe${q}`, { method, body: method === 'POST' ? '['.repeat(10_000) : undefined })
        expect([404, 414, 431]).toContain(r.status)
      }
    }
  })

  test('a test mail goes through the settings; a refused login comes back as sent: false', async () => {
    const before = sink.mails.length
    const r = await call(server.url, 'POST', `/v1/apps/${t.appId}/smtp/test`, { auth: t.key, body: { to: 'ops@shop.example' } })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ sent: true, to: 'o***@shop.example' })
    expect(sink.mails.length).toBe(before + 1)
    expect(sink.mails.at(-1)!.user).toBe('mailer')
    const other = await seedTenant(server.admin, {}, 'Wrongpass')
    await call(server.url, 'PUT', `/v1/apps/${other.appId}/smtp`, { auth: other.key, body: { ...smtpOf(sink.port), password: 'nope' } })
    const bad = await call(server.url, 'POST', `/v1/apps/${other.appId}/smtp/test`, { auth: other.key, body: { to: 'ops@shop.example' } })
    expect(bad.body.sent).toBe(false)
    expect(bad.text).not.toContain('nope')
  })

  test("the From display name is sent as written, one mailbox: ':' ';' ',' '@' in it neither make a group nor a second sender", async () => {
    // An operator's "Shop: Support <noreply@…>" went out as the group `Shop:Support <noreply@…>;` (a From that
    // is no mailbox), "Shop;x" as "Shop, x", and "bounces@other.example, Shop <noreply@…>" (accepted as a
    // display name) as two From mailboxes with MAIL FROM bounces@other.example.
    const addressparser = (await import('nodemailer/lib/addressparser')).default as (s: string) => { name: string; address?: string; group?: unknown }[]
    const app = await seedTenant(server.admin, {}, 'Fromnames')
    for (const name of ['Shop: Support', 'Shop;x', 'bounces@other.example, Shop', 'Shop, Inc.']) {
      const from = `${name} <noreply@shop.example>`
      const put = await call(server.url, 'PUT', `/v1/apps/${app.appId}/smtp`, { auth: app.key, body: { ...smtpOf(sink.port), from } })
      expect(put.status).toBe(200)
      const before = sink.mails.length
      const r = await call(server.url, 'POST', `/v1/apps/${app.appId}/smtp/test`, { auth: app.key, body: { to: 'ops@shop.example' } })
      expect(r.body.sent).toBe(true)
      expect(sink.mails.length).toBe(before + 1)
      const m = sink.mails.at(-1)!
      expect(m.from).toBe('noreply@shop.example')
      expect(addressparser(m.headers.get('from')!)).toEqual([{ name, address: 'noreply@shop.example' }])
    }
  })
})

describe('the fixed mail', () => {
  test('exactly one mail to the reporter, with the safe excerpt, the PR link and one-click unsubscribe; none without opt-in', async () => {
    await call(server.url, 'PUT', `/v1/apps/${t.appId}/smtp`, { auth: t.key, body: smtpOf(sink.port) })
    const secretText = 'Login fails after reset. My token is ghp_abcdefghijklmnopqrstuvwxyz0123456789 and the page just spins forever without telling me anything useful at all'
    const opted = await submitReport({ text: secretText, notifyEmail: true, identity: { email: 'ann@example.com' } })
    const silent = await submitReport({ text: 'Search ignores accents', identity: { email: 'bob@example.com' } })
    await dbRun(server.ctx, "UPDATE feedback SET merge_request_url = 'https://git.example/shop/pulls/7' WHERE id = ?", [opted])
    const before = sink.mails.length
    await resolve(opted)
    await resolve(silent)
    await mailerPass(server)
    await eventually(async () => (await outbox(opted))?.state === 'sent')
    await mailerPass(server)
    const mine = sink.mails.slice(before)
    expect(mine.length).toBe(1)
    const m = mine[0]
    expect(m.to).toEqual(['ann@example.com'])
    expect(m.from).toBe('noreply@shop.example')
    expect(m.headers.get('subject')).toMatch(/^Shop: the problem you reported on \d{1,2} [A-Z][a-z]{2} \d{4} is fixed$/)
    expect(m.headers.get('list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click')
    const listUnsub = m.headers.get('list-unsubscribe')!
    expect(listUnsub).toMatch(/^<http:\/\/127\.0\.0\.1:\d+\/v1\/mail\/unsubscribe\?token=[0-9a-f.]+>$/)
    const body = qpDecode(m.body)
    expect(body).toContain(opted)
    expect(body).toContain('https://git.example/shop/pulls/7')
    expect(body).not.toContain('ghp_abcdefghijklmnopqrstuvwxyz')
    // A public-mode report: nothing of what the (anonymous) submitter wrote is quoted.
    expect(body).not.toContain('Login fails')
    expect(body).not.toContain('You wrote')
    // The address left the report; the outbox keeps only its mask once sent.
    expect((await feedbackRowIn(server.ctx, opted)).notify_email_sealed).toBeNull()
    const row = await outbox(opted)
    expect(row).toMatchObject({ state: 'sent', email_masked: 'a***@example.com', email_sealed: null })
    expect(await outbox(silent)).toBeUndefined()

    // Retries, restarts, a second pass: no second mail (the row is the report's one mail).
    await dbRun(server.ctx, "UPDATE feedback SET notify_email_sealed = 'v1:AAAA' WHERE id = ?", [opted])
    await mailerPass(server)
    await mailerPass(server)
    expect(sink.mails.length).toBe(before + 1)
    expect((await outbox(opted)).state).toBe('sent')
    // A value the master key does not open leaves the due index at once (given up, never read again).
    const garbled = await submitReport({ text: 'Garbled address report', notifyEmail: true, identity: { email: 'g@example.com' } })
    const afterConfirmation = sink.mails.length // its confirmation mail
    await dbRun(server.ctx, "UPDATE feedback SET notify_email_sealed = 'v1:AAAA' WHERE id = ?", [garbled]) // before it is due
    await resolve(garbled)
    await mailerPass(server)
    expect(await outbox(garbled)).toMatchObject({ state: 'failed', email_masked: '***', email_sealed: null })
    expect((await feedbackRowIn(server.ctx, garbled)).notify_email_sealed).toBeNull()
    expect(sink.mails.length).toBe(afterConfirmation)

    // The dashboard's view: who was notified.
    const n = await call(server.url, 'GET', `/v1/feedback/${opted}/notification`, { auth: t.key })
    expect(n.body).toMatchObject({ address: 'a***@example.com', state: 'sent', attempts: 1 })
    expect((await call(server.url, 'GET', `/v1/feedback/${silent}/notification`, { auth: t.key })).status).toBe(404)
    const other = await seedTenant(server.admin, {}, 'Peek')
    expect((await call(server.url, 'GET', `/v1/feedback/${opted}/notification`, { auth: other.key })).status).toBe(404)

    // The one-click unsubscribe: GET confirms (changes nothing), POST unsubscribes; a forged token does nothing.
    const url = listUnsub.slice(1, -1)
    const page = await fetch(url)
    expect(page.status).toBe(200)
    // No other site may frame its one button (clickjacking), nor point its form elsewhere.
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
    expect(page.headers.get('content-security-policy')).toContain("base-uri 'none'")
    expect(page.headers.get('x-frame-options')).toBe('DENY')
    const html = await page.text()
    expect(html).toContain('<form method="post"')
    // An end user reads the product's name, never fixloop's word "App" (issue 36.11).
    expect(html).toContain('Stop all mails from Shop about the problems you reported?')
    expect(html).not.toMatch(/\bApp\b/)
    expect((await dbRows(server.ctx, 'SELECT * FROM mail_unsubscribes')).length).toBe(0)
    const forged = url.replace(/.$/, (c) => (c === '0' ? '1' : '0'))
    expect((await fetch(forged, { method: 'POST', body: 'List-Unsubscribe=One-Click', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).status).toBe(404)
    expect((await fetch(`${server.url}/v1/mail/unsubscribe?token=${'x'.repeat(5000)}`)).status).toBe(404)
    const one = await fetch(url, { method: 'POST', body: 'List-Unsubscribe=One-Click', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    expect(one.status).toBe(200)
    expect((await dbRows(server.ctx, 'SELECT * FROM mail_unsubscribes')).length).toBe(1)

    // Unsubscribed: the next resolved report of the same address gets no mail.
    const again = await submitReport({ text: 'Another thing broke', notifyEmail: true, identity: { email: 'ANN@example.com' } })
    await resolve(again)
    await mailerPass(server)
    expect((await outbox(again)).state).toBe('unsubscribed')
    expect(sink.mails.length).toBe(afterConfirmation)
  })

  test('a node without the dispatch role neither queues nor sends', async () => {
    const id = await submitReport({ text: 'Role check report', notifyEmail: true, identity: { email: 'role@example.com' } })
    await server.services.mailer.stop() // the role holder steps aside for this case
    try {
      await resolve(id)
      const before = sink.mails.length
      const bystander = new Mailer(server.ctx, new Logger('silent'), { mayAct: () => false })
      await bystander.wake()
      expect(await outbox(id)).toBeUndefined()
      expect(sink.mails.length).toBe(before)
      await new Mailer(server.ctx, new Logger('silent'), { mayAct: () => true }).wake()
      expect((await outbox(id)).state).toBe('sent')
      expect(sink.mails.length).toBe(before + 1)
    } finally {
      server.services.mailer.start(server.hub)
    }
  })

  test('a lead and its duplicate: one mail each, by their own moves, none twice', async () => {
    const lead = await submitReport({ text: 'Dark mode flickers', notifyEmail: true, identity: { email: 'lead@example.com' } })
    const dup = await submitReport({ text: 'Dark mode flickers on iPad', notifyEmail: true, identity: { email: 'dup@example.com' } })
    await markDuplicateIn(server.ctx, dup, lead)
    const before = sink.mails.length
    await resolve(lead)
    await mailerPass(server)
    expect(sink.mails.slice(before).map((m) => m.to[0])).toEqual(['lead@example.com'])
    await resolve(dup)
    await mailerPass(server)
    await mailerPass(server)
    expect(sink.mails.slice(before).map((m) => m.to[0]).sort()).toEqual(['dup@example.com', 'lead@example.com'])
  })

  test('one mail per address per resolution: the same person (any case) on a lead and its duplicates is told once; another address gets its own', async () => {
    const lead = await submitReport({ text: 'Totals round wrongly', notifyEmail: true, identity: { email: 'Dana.Same@example.com' } })
    const dup = await submitReport({ text: 'Totals round wrongly in the cart', notifyEmail: true, identity: { email: 'dana.same@EXAMPLE.com' } })
    const later = await submitReport({ text: 'Totals round wrongly on invoices', notifyEmail: true, identity: { email: 'DANA.SAME@example.com' } })
    const other = await submitReport({ text: 'Totals round wrongly for me too', notifyEmail: true, identity: { email: 'eve.other@example.com' } })
    for (const d of [dup, later, other]) await markDuplicateIn(server.ctx, d, lead)
    const before = sink.mails.length
    // The lead and two duplicates resolved together (one pass), a third duplicate after the mail went out.
    await resolve(lead)
    await resolve(dup)
    await resolve(other)
    await mailerPass(server)
    await resolve(later)
    await mailerPass(server)
    await mailerPass(server)
    const sent = sink.mails.slice(before).map((m) => m.to[0].toLowerCase()).sort()
    expect(sent).toEqual(['dana.same@example.com', 'eve.other@example.com'])
    expect((await outbox(lead)).state).toBe('sent')
    expect((await outbox(other)).state).toBe('sent')
    for (const id of [dup, later]) {
      expect(await outbox(id)).toMatchObject({ state: 'same_address', email_sealed: null, lead_id: lead })
      expect((await feedbackRowIn(server.ctx, id)).notify_email_sealed).toBeNull()
      const n = await call(server.url, 'GET', `/v1/feedback/${id}/notification`, { auth: t.key })
      expect(n.body.state).toBe('same_address')
      expect(n.body.address).toMatch(/^d\*\*\*@example\.com$/i)
    }
  })

  test('an SMTP server down at the first attempt: retried later, delivered once it is up', async () => {
    const port = await freePort()
    const app = await seedTenant(server.admin, { name: 'Downtime' }, 'Down')
    await call(server.url, 'PUT', `/v1/apps/${app.appId}/smtp`, { auth: app.key, body: { host: '127.0.0.1', port, tls: 'none', from: 'noreply@down.example' } })
    // Private mode: the App's backend vouches for ctx.email, so no confirmation is asked first.
    const token = await userToken(app.secret, app.appId, 'u-cy', { ctx: { email: 'cy@example.com' } })
    const r = await call(server.url, 'POST', '/v1/feedback', { auth: app.pub, body: { text: 'Export hangs', notifyEmail: true }, headers: { 'X-Service-User-Token': token } })
    const id = r.body.id
    await eventually(async () => (await feedbackRowIn(server.ctx, id)).redactions !== null)
    await forceStatusIn(server.ctx, id, 'pr_opened')
    await server.services.lifecycle.move(id, 'resolved', { by: 'system', from: 'pr_opened' })
    await mailerPass(server)
    const failed = await outbox(id)
    expect(failed).toMatchObject({ state: 'pending', attempts: 1 })
    expect(failed.last_error).toMatch(/ECONNREFUSED|ESOCKET|connect/i)
    expect(Number(failed.next_attempt_at)).toBeGreaterThan(Date.now() + 20_000) // backoff, not a hot loop
    // The lifecycle went on regardless.
    expect((await feedbackRowIn(server.ctx, id)).status).toBe('resolved')
    const late = await startSmtpSink(port)
    try {
      await mailerPass(server)
      expect(late.mails.length).toBe(0) // not before its time
      await dbRun(server.ctx, 'UPDATE mail_outbox SET next_attempt_at = 0 WHERE feedback_id = ?', [id]) // the backoff elapsed
      await mailerPass(server)
      expect(late.mails.map((m) => m.to[0])).toEqual(['cy@example.com'])
      expect(await outbox(id)).toMatchObject({ state: 'sent', attempts: 2 })
      await dbRun(server.ctx, 'UPDATE mail_outbox SET next_attempt_at = 0 WHERE feedback_id = ?', [id])
      await mailerPass(server)
      expect(late.mails.length).toBe(1)
    } finally {
      await late.stop()
    }
  })
})

describe('"Mark as fixed" (POST /v1/feedback/:id/resolve, an addition)', () => {
  test('a lead fixed by hand ends like a merged pull request: resolved, its duplicates follow, feedback.resolved for each, the reporters mailed, audited', async () => {
    const app = await seedTenant(server.admin, { name: 'By hand' }, 'Hand')
    await call(server.url, 'PUT', `/v1/apps/${app.appId}/smtp`, { auth: app.key, body: smtpOf(sink.port) })
    const sent = async (body: Record<string, unknown>) => {
      const r = await call(server.url, 'POST', '/v1/feedback', { auth: app.pub, body })
      await eventually(async () => (await feedbackRowIn(server.ctx, r.body.id)).status === 'awaiting_manual')
      await confirmAddress((body.identity as { email: string }).email) // public mode: the double opt-in first
      return r.body.id as string
    }
    const lead = await sent({ text: 'The invoice PDF is blank', notifyEmail: true, identity: { email: 'hand.lead@example.com' } })
    const dup = await sent({ text: 'Invoice PDF comes out empty', notifyEmail: true, identity: { email: 'hand.dup@example.com' } })
    await markDuplicateIn(server.ctx, dup, lead)
    const before = sink.mails.length

    // A duplicate is not marked by itself: its lead is named.
    const onDup = await call(server.url, 'POST', `/v1/feedback/${dup}/resolve`, { auth: app.key })
    expect(onDup.status).toBe(409)
    expect(onDup.body.error).toMatchObject({ code: 'invalid_target', details: { leadFeedbackId: lead } })

    const r = await call(server.url, 'POST', `/v1/feedback/${lead}/resolve`, { auth: app.key })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ id: lead, status: 'resolved' })
    expect((await feedbackRowIn(server.ctx, dup)).status).toBe('resolved')
    const events = await dbRows<{ feedback_id: string; data: string }>(server.ctx, "SELECT feedback_id, data FROM events WHERE type = 'feedback.resolved' AND feedback_id IN (?, ?) ORDER BY seq", [lead, dup])
    expect(events.map((e) => [e.feedback_id, JSON.parse(e.data)])).toEqual([
      [lead, { feedbackId: lead, leadFeedbackId: lead, prUrl: null, externalUserId: null }],
      [dup, { feedbackId: dup, leadFeedbackId: lead, prUrl: null, externalUserId: null }],
    ])
    const audit = await dbRows<{ actor: string; action: string; data: string; org_id: string }>(server.ctx, 'SELECT actor, action, data, org_id FROM audit_log WHERE target_id = ?', [lead])
    expect(audit.map((a) => ({ ...a, data: JSON.parse(a.data) }))).toEqual([
      { actor: `key:${app.keyId}`, action: 'feedback.marked_fixed', org_id: app.orgId, data: { appId: app.appId, from: 'awaiting_manual', duplicatesResolved: 1 } },
    ])
    // Both mails are queued by the resolution's events, which may land after a pass began: wake until
    // both went out (under load one pass saw only one of them), then check there are exactly those two.
    await eventually(async () => {
      await mailerPass(server)
      return sink.mails.length - before >= 2
    })
    expect(sink.mails.slice(before).map((m) => m.to[0]).sort()).toEqual(['hand.dup@example.com', 'hand.lead@example.com'])

    // Once resolved, nothing more to mark.
    const again = await call(server.url, 'POST', `/v1/feedback/${lead}/resolve`, { auth: app.key })
    expect(again.status).toBe(409)
    expect(again.body.error).toMatchObject({ code: 'invalid_transition', details: { from: 'resolved', to: 'resolved' } })
    expect(await dbRows(server.ctx, 'SELECT 1 FROM audit_log WHERE target_id = ?', [lead])).toHaveLength(1)
  })

  test('branch mode (pr_opened without a URL), queued and failed reports can be marked fixed; archived and running ones cannot; another Org sees 404', async () => {
    const app = await seedTenant(server.admin, { name: 'Branches' }, 'Branch')
    const other = await seedTenant(server.admin, { name: 'Elsewhere' }, 'Other')
    const report = async (status: string) => {
      const r = await call(server.url, 'POST', '/v1/feedback', { auth: app.pub, body: { text: `A report left in ${status}` } })
      await eventually(async () => (await feedbackRowIn(server.ctx, r.body.id)).status === 'awaiting_manual')
      await forceStatusIn(server.ctx, r.body.id, status)
      return r.body.id as string
    }
    for (const status of ['pr_opened', 'queued', 'failed', 'sanitized']) {
      const id = await report(status)
      if (status === 'pr_opened') expect((await feedbackRowIn(server.ctx, id)).merge_request_url).toBeNull()
      expect((await call(server.url, 'POST', `/v1/feedback/${id}/resolve`, { auth: other.key })).status).toBe(404)
      const r = await call(server.url, 'POST', `/v1/feedback/${id}/resolve`, { auth: app.key })
      expect([status, r.status, r.body.status]).toEqual([status, 200, 'resolved'])
    }
    for (const status of ['archived', 'agent_running']) {
      const id = await report(status)
      const r = await call(server.url, 'POST', `/v1/feedback/${id}/resolve`, { auth: app.key })
      expect([status, r.status, r.body.error.code]).toEqual([status, 409, 'invalid_transition'])
      expect((await feedbackRowIn(server.ctx, id)).status).toBe(status)
    }
  })

  test('fuzz: junk ids, bodies and queries get the envelope, never a 5xx', async () => {
    const deep = JSON.parse('['.repeat(5000) + ']'.repeat(5000))
    const cases: [string, unknown][] = [
      ['/v1/feedback/zz/resolve', undefined],
      [`/v1/feedback/${'f'.repeat(24)}/resolve`, undefined],
      [`/v1/feedback/${'f'.repeat(24)}/resolve`, deep],
      [`/v1/feedback/${'f'.repeat(24)}/resolve?junk[a][b]=1&${'x'.repeat(2000)}=1`, { status: 'resolved' }],
      [`/v1/feedback/%00${'f'.repeat(23)}/resolve`, 'x'.repeat(100_000)],
      [`/v1/feedback/${'f'.repeat(100_000)}/resolve`, undefined],
    ]
    for (const [path, body] of cases) {
      const r = await call(server.url, 'POST', path, { auth: t.key, body })
      expect([path.slice(0, 60), r.status >= 400 && r.status < 500]).toEqual([path.slice(0, 60), true])
      // An over-long request line is refused by the HTTP server itself (431), before any route.
      if (r.status !== 431) expect(r.body.error.code).toBeString()
    }
    expect((await call(server.url, 'POST', `/v1/feedback/${'f'.repeat(24)}/resolve`, {})).status).toBe(401)
  })
})

describe('a stored SMTP password follows no new server', () => {
  test('host, port or TLS mode changed without the password: 400 on /password, nothing sent there; other changes keep it', async () => {
    const app = await seedTenant(server.admin, { name: 'Kept' })
    const put = (body: Record<string, unknown>) => call(server.url, 'PUT', `/v1/apps/${app.appId}/smtp`, { auth: app.key, body })
    expect((await put(smtpOf(sink.port))).status).toBe(200)
    // Whoever can edit the settings points them at a server of theirs, hoping the stored password follows.
    const evil = await startSmtpSink(0, { user: 'mailer', pass: 's3cret-pass' })
    try {
      const { password: _omitted, ...noPassword } = smtpOf(sink.port)
      for (const [change, named] of [[{ port: evil.port }, 'port'], [{ host: 'localhost' }, 'host'], [{ tls: 'starttls' }, 'tls']] as const) {
        const r = await put({ ...noPassword, ...change })
        expect({ status: r.status, code: r.body.error?.code, path: r.body.error?.details?.issues?.[0]?.path }).toEqual({ status: 400, code: 'invalid_body', path: '/password' })
        expect(r.body.error.details.issues[0].message).toContain(`${named} changed`)
      }
      // The settings still point at the server the password was given for: the test mail goes there.
      const sent = await call(server.url, 'POST', `/v1/apps/${app.appId}/smtp/test`, { auth: app.key, body: { to: 'someone@example.com' } })
      expect(sent.body.sent).toBe(true)
      expect(evil.mails).toEqual([])
      // Same server, other fields: the password is kept.
      const kept = await put({ ...noPassword, user: 'mailer', from: 'Kept <other@shop.example>' })
      expect([kept.status, kept.body.passwordSet]).toEqual([200, true])
      // A new server with its password: fine.
      const moved = await put({ ...smtpOf(evil.port) })
      expect([moved.status, moved.body.port, moved.body.passwordSet]).toEqual([200, evil.port, true])
    } finally {
      await evil.stop()
    }
  })
})
