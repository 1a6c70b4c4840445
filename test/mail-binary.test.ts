/**
 * Mail through the compiled binary (nodemailer inside `bun build --compile`): the CLI sets, shows and
 * clears an App's SMTP settings (password from a file, never printed), `app smtp-test` delivers to a real
 * SMTP server, and a report resolved while `fixloop serve` runs gets its one mail from the server's mailer.
 * The sink listens on 127.0.0.1, so the CLI and the server run with FIXLOOP_SMTP_ALLOW_PRIVATE=1 (a local
 * relay); without it the CLI refuses that host.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync, writeFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { call, eventually, runBinary, spawnServer, tempDir } from './harness'
import { cliJson, cliTenant, ensureBinary } from './helpers-lifecycle'
import { loadConfig } from '../src/config'
import { closeContext, openContext } from '../src/runtime/open'
import { dbRows, dbRun } from './sqlite-of'
import { qpDecode, startSmtpSink, type SmtpSink } from './smtp-sink'

let dir: string
let sink: SmtpSink
const LOCAL_RELAY = { FIXLOOP_SMTP_ALLOW_PRIVATE: '1' }
beforeAll(async () => {
  ensureBinary()
  dir = tempDir('fixloop-mail-bin-')
  sink = await startSmtpSink(0, { user: 'bin', pass: 'pw-from-file' })
})
afterAll(async () => {
  await sink?.stop()
  rmSync(dir, { recursive: true, force: true })
})

test('CLI smtp settings, a test mail and the fixed mail, all through dist/fixloop', async () => {
  const t = await cliTenant(dir)
  const pwFile = join(dir, 'smtp-password')
  writeFileSync(pwFile, 'pw-from-file\n')
  const args = ['app', 'smtp', t.appId, '--host', '127.0.0.1', '--port', String(sink.port), '--tls', 'none', '--user', 'bin', '--password-file', pwFile, '--from', 'Crash <noreply@crash.example>']
  const refused = await runBinary([...args, '--data-dir', dir, '--json'])
  expect(refused.code).not.toBe(0)
  expect(refused.stderr).toContain('FIXLOOP_SMTP_ALLOW_PRIVATE=1')
  const set = await runBinary([...args, '--data-dir', dir, '--json'], LOCAL_RELAY)
  expect(set.code).toBe(0)
  expect(set.stdout).not.toContain('pw-from-file')
  expect(JSON.parse(set.stdout)).toMatchObject({ host: '127.0.0.1', port: sink.port, tls: 'none', user: 'bin', passwordSet: true })
  expect((await cliJson(dir, ['app', 'smtp', t.appId])).passwordSet).toBe(true)
  const bad = await runBinary(['app', 'smtp', t.appId, '--host', '127.0.0.1', '--port', '25', '--tls', 'ssl', '--from', 'a@b.example', '--data-dir', dir])
  expect(bad.code).not.toBe(0)
  expect(bad.stderr).toContain('--tls must be one of none, starttls, tls')

  const sent = await cliJson(dir, ['app', 'smtp-test', t.appId, '--to', 'ops@crash.example'], LOCAL_RELAY)
  expect(sent).toEqual({ sent: true, to: 'o***@crash.example' })
  expect(sink.mails.at(-1)!.to).toEqual(['ops@crash.example'])
  expect(sink.mails.at(-1)!.user).toBe('bin')

  // rekey re-seals the SMTP password with the other secrets; the login still works under the new key.
  const oldKey = join(dir, 'old.key')
  writeFileSync(oldKey, readFileSync(join(dir, 'master.key')))
  const rekey = await runBinary(['rekey', '--old-key-file', oldKey, '--new-key-file', join(dir, 'new.key'), '--data-dir', dir, '--json'])
  expect(rekey.code).toBe(0)
  expect(JSON.parse(rekey.stdout).resealed['app_smtp.password_sealed']).toBe(1)
  expect((await cliJson(dir, ['app', 'smtp-test', t.appId, '--to', 'ops@crash.example'], LOCAL_RELAY)).sent).toBe(true)
  expect(sink.mails.at(-1)!.user).toBe('bin')

  const srv = await spawnServer(dir, LOCAL_RELAY)
  try {
    const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'Invoice PDF is blank', notifyEmail: true, identity: { email: 'dee@example.com' } } })
    expect(r.status).toBe(201)
    const id = r.body.id
    // Public mode: the address is confirmed first (double opt-in), through the confirm page the binary serves.
    const confirmation = await eventually(() => sink.mails.find((m) => m.to[0] === 'dee@example.com'), 15_000)
    expect(confirmation.headers.get('subject')).toBe('Confirm your address for Crash App')
    const confirmLink = /http:\/\/\S+\/v1\/mail\/confirm\?token=[0-9a-f.]+/.exec(qpDecode(confirmation.body))![0]
    expect(confirmLink.startsWith(srv.url)).toBe(true)
    expect(await (await fetch(confirmLink)).text()).toContain('Yes, confirm my address')
    expect((await fetch(confirmLink, { method: 'POST' })).status).toBe(200)
    const ctx = await openContext(loadConfig({ dataDir: dir }))
    try {
      await eventually(async () => (await dbRows<{ redactions: string | null }>(ctx, 'SELECT redactions FROM feedback WHERE id = ?', [id]))[0].redactions !== null)
      await dbRun(ctx, "UPDATE feedback SET status = 'pr_opened', version = version + 1 WHERE id = ?", [id])
      expect(await ctx.store.lifecycle.move(id, 'resolved', { by: 'system', from: 'pr_opened' })).toBe(true)
    } finally {
      await closeContext(ctx)
    }
    const mail = await eventually(() => sink.mails.find((m) => m.to[0] === 'dee@example.com' && m !== confirmation), 15_000)
    expect(mail.headers.get('subject')).toMatch(/^Crash App: the problem you reported on \d{1,2} [A-Z][a-z]{2} \d{4} is fixed$/)
    expect(mail.headers.get('list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click')
    expect(qpDecode(mail.body)).not.toContain('Invoice PDF is blank') // a public report is never quoted
    const link = mail.headers.get('list-unsubscribe')!.slice(1, -1)
    expect(link.startsWith(srv.url)).toBe(true)
    const done = await fetch(link, { method: 'POST', body: 'List-Unsubscribe=One-Click', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    expect(done.status).toBe(200)
    expect(await done.text()).toContain('Unsubscribed')
  } finally {
    await srv.stop()
  }
  expect((await cliJson(dir, ['app', 'smtp', t.appId, '--clear'])).deleted).toBe(true)
  const gone = await runBinary(['app', 'smtp', t.appId, '--data-dir', dir, '--json'])
  expect(gone.code).not.toBe(0)
}, 60_000)
