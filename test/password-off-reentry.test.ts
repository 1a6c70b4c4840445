/**
 * FIXLOOP_PASSWORD_SIGNIN=off: a password confirms nothing either (found by the governance attack,
 * attack-gov). An operator who moves the dashboard to single sign-on turns passwords off, and the admins
 * created before keep their password hashes. Those passwords no longer signed anyone in, but still
 * confirmed what outlives a session (an `sk_` key, a signing secret, TOTP off, a repository's commands,
 * a webhook endpoint): a stolen session plus an old password made a key without the identity provider
 * (and its MFA) the operator chose. Now they are refused with `details.passwordSignIn: false` and the
 * provider's re-authentication named, and GET /admin/api/me/reauth offers no password. The binary, with
 * SSO configured (no provider needs to answer: nothing here reaches it).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BINARY } from './harness'
import { waitHealthy } from './dashboard-helpers'
import { freePort } from './free-port'
import { cli } from './sso-helpers'
import { tempDir } from './temp-dirs'

const PASSWORD = 'correct horse battery staple'
let dir = ''
let dataDir = ''
let port = 0
let proc: ReturnType<typeof Bun.spawn> | undefined
let url = ''

async function serve(extra: Record<string, string>) {
  const secretFile = join(dir, 'oidc-secret')
  writeFileSync(secretFile, 'client-secret\n')
  url = `http://127.0.0.1:${port}`
  proc = Bun.spawn([BINARY, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir], {
    env: {
      PATH: process.env.PATH ?? '',
      FIXLOOP_LOG_LEVEL: 'silent',
      FIXLOOP_PUBLIC_URL: url,
      // A provider nobody runs: discovery happens at the first sign-in, which these tests never start.
      FIXLOOP_OIDC_ISSUER: 'http://127.0.0.1:9/realms/none',
      FIXLOOP_OIDC_CLIENT_ID: 'fixloop',
      FIXLOOP_OIDC_CLIENT_SECRET_FILE: secretFile,
      ...extra,
    },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  await waitHealthy(url, proc)
}
async function stop() {
  if (proc && proc.exitCode === null) proc.kill('SIGTERM')
  await proc?.exited
}

let cookie = ''
let csrf = ''
let orgId = ''
/** A JSON answer's body (typed loosely, as the suites' `call` does). */
const json = async (r: Response): Promise<any> => r.json()
const send = (method: string, path: string, body?: unknown) =>
  fetch(url + path, {
    method,
    headers: { cookie, 'x-csrf-token': csrf, origin: url, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })

beforeAll(async () => {
  dir = tempDir()
  dataDir = join(dir, 'data')
  port = await freePort()
  writeFileSync(join(dir, 'pw'), PASSWORD + '\n')
  orgId = JSON.parse(cli(dataDir, ['org', 'create', '--name', 'Acme', '--json']).stdout.toString()).id
  expect(cli(dataDir, ['admin', 'create', '--email', 'owner@example.com', '--password-file', join(dir, 'pw'), '--org', orgId, '--role', 'owner']).exitCode).toBe(0)
  // Signed in with the password while passwords were on; then the operator turns them off.
  await serve({})
  const r = await fetch(url + '/admin/api/session', { method: 'POST', headers: { 'content-type': 'application/json', origin: url }, body: JSON.stringify({ email: 'owner@example.com', password: PASSWORD }) })
  expect(r.status).toBe(200)
  cookie = r.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ')
  csrf = (await json(r)).csrfToken
  await stop()
  await serve({ FIXLOOP_PASSWORD_SIGNIN: 'off' })
}, 60_000)
afterAll(stop)

describe('FIXLOOP_PASSWORD_SIGNIN=off', () => {
  test('the session is the same; the password is offered for nothing', async () => {
    expect((await send('GET', '/admin/api/session')).status).toBe(200)
    const how = await json(await send('GET', '/admin/api/me/reauth'))
    expect(how).toMatchObject({ sso: true, hasPassword: false, reauthenticated: null })
  })

  test('the right password creates no key and records no confirmation', async () => {
    const key = await send('POST', `/admin/api/orgs/${orgId}/keys`, { name: 'backdoor', password: PASSWORD })
    expect(key.status).toBe(401)
    const body = await json(key)
    expect(body.error).toMatchObject({ code: 'invalid_credentials', details: { reauthRequired: true, passwordSignIn: false, reauth: '/admin/api/me/reauth' } })
    expect(body.error.message).toContain('FIXLOOP_PASSWORD_SIGNIN=off')
    const keys = await json(await send('GET', `/admin/api/orgs/${orgId}/keys`))
    expect(keys.data.map((k: { name: string }) => k.name)).not.toContain('backdoor')

    const ahead = await send('POST', '/admin/api/me/reauth/password', { purpose: 'webhook_create', password: PASSWORD })
    expect(ahead.status).toBe(401)
    expect((await json(ahead)).error.details).toMatchObject({ passwordSignIn: false })
    expect((await json(await send('GET', '/admin/api/me/reauth'))).reauthenticated).toBeNull()

    const totp = await send('POST', '/admin/api/me/totp/secret')
    expect(totp.status).toBe(200)
    const on = await send('PUT', '/admin/api/me/totp', { secret: (await json(totp)).secret, code: '000000', password: PASSWORD })
    expect(on.status).toBe(401)
    expect((await json(on)).error.details).toMatchObject({ passwordSignIn: false })
  })

  test('without a password the answer names only the identity provider', async () => {
    const r = await send('POST', `/admin/api/orgs/${orgId}/keys`, { name: 'k' })
    expect(r.status).toBe(401)
    const e = (await json(r)).error
    expect(e.details).toMatchObject({ reauthRequired: true, noPassword: true, reauth: '/admin/api/me/reauth' })
    expect(e.message).toStartWith('Confirm with the identity provider')
  })
})
