/**
 * The role matrix and the audit log, attacked from outside on the compiled binary (dist/fixloop): an Org
 * member's dashboard session is refused on every owner-only /v1 route while an sk_ key keeps its
 * powers, the owner's changes land in the audit log, `fixloop webhook create` is audited, `fixloop admin
 * role` takes an owner's powers from their open session at once, and `serve --demo` leaves one live demo
 * key however often it starts.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { BINARY, call, freePort, runBinary, spawnServer, tempDir } from './harness'
import { writePasswordFile } from './dashboard-helpers'

const ENV = { FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1', FIXLOOP_RATE_LIMIT_MULTIPLIER: '10' }

async function cli(dir: string, ...args: string[]): Promise<any> {
  const r = await runBinary([...args, '--data-dir', dir, '--json'], ENV)
  expect(r.code, r.stderr).toBe(0)
  return JSON.parse(r.stdout)
}

interface Session {
  id: string
  cookie: string
  csrf: string
}

async function signIn(base: string, email: string, password: string): Promise<Session> {
  const r = await call(base, 'POST', '/admin/api/session', { body: { email, password } })
  expect(r.status).toBe(200)
  return { id: r.body.id, cookie: r.headers.get('set-cookie')!.split(';')[0], csrf: r.body.csrfToken }
}

async function auditOf(base: string, s: Session, orgId: string): Promise<any[]> {
  const r = await call(base, 'GET', `/admin/api/orgs/${orgId}/audit?limit=200`, { headers: { cookie: s.cookie } })
  expect(r.status).toBe(200)
  return r.body.data
}

describe('a member session against the binary', () => {
  let dir: string
  let server: Awaited<ReturnType<typeof spawnServer>>
  let orgId: string
  let appId: string
  let key: string
  let owner: Session
  let member: Session
  let cliHookId: string

  beforeAll(async () => {
    dir = tempDir('fixloop-access-')
    orgId = (await cli(dir, 'org', 'create', '--name', 'Acme')).id
    key = (await cli(dir, 'key', 'create', '--org', orgId)).key
    appId = (await cli(dir, 'app', 'create', '--org', orgId, '--name', 'Web')).id
    await cli(dir, 'admin', 'create', '--email', 'owner@example.com', '--password-file', writePasswordFile(dir, 'o.txt', 'owner password 1'), '--org', orgId, '--role', 'owner')
    await cli(dir, 'admin', 'create', '--email', 'member@example.com', '--password-file', writePasswordFile(dir, 'm.txt', 'member password 1'), '--org', orgId, '--role', 'member')
    cliHookId = (await cli(dir, 'webhook', 'create', '--org', orgId, '--url', 'http://127.0.0.1:9/from-cli')).id
    await cli(dir, 'chatops', 'slack', 'allow-user', '--org', orgId, '--team', 'T0777', '--user', 'U0777')
    server = await spawnServer(dir, ENV)
    owner = await signIn(server.url, 'owner@example.com', 'owner password 1')
    member = await signIn(server.url, 'member@example.com', 'member password 1')
  })

  afterAll(async () => {
    await server?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  const as = (s: Session, method: string, path: string, body?: unknown) =>
    call(server.url, method, path, { body, headers: { cookie: s.cookie, 'x-fixloop-org': orgId, ...(method === 'GET' ? {} : { 'x-csrf-token': s.csrf }) } })

  /** Every owner-only /v1 route, with a body an owner would send. */
  const OWNER_ONLY = (): [string, string, unknown?][] => [
    ['POST', `/v1/tokens/mint?appId=${appId}`, { sub: 'victim' }],
    ['POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/x' }],
    ['GET', '/v1/webhooks'],
    ['GET', `/v1/webhooks/${cliHookId}`],
    ['POST', `/v1/webhooks/${cliHookId}/rotate-secret`],
    ['POST', `/v1/webhooks/${cliHookId}/enable`],
    ['POST', `/v1/webhooks/${cliHookId}/test`],
    ['GET', `/v1/webhooks/${cliHookId}/deliveries`],
    ['POST', `/v1/webhooks/${cliHookId}/redeliver-failed`, { since: '2020-01-01T00:00:00Z', until: '2030-01-01T00:00:00Z' }],
    ['POST', '/v1/webhooks/deliveries/ffffffffffffffffffffffff/redeliver'],
    ['DELETE', `/v1/webhooks/${cliHookId}`],
    ['POST', '/v1/chatops/slack', { botToken: 'xoxb-1234567890-abcdef', signingSecret: 'b'.repeat(32), channel: 'C0123ABCD' }],
    ['GET', '/v1/chatops/slack'],
    ['DELETE', '/v1/chatops/slack/ffffffffffffffffffffffff'],
    ['GET', '/v1/chatops/slack/users'],
    ['POST', '/v1/chatops/slack/users', { teamId: 'T0123', userId: 'U0123' }],
    ['DELETE', '/v1/chatops/slack/users/T0123/U0123'],
  ]

  test('each owner-only /v1 route refuses the member 403 forbidden with the error envelope, and changes nothing', async () => {
    for (const [method, path, body] of OWNER_ONLY()) {
      const r = await as(member, method, path, body)
      expect(`${method} ${path} → ${r.status} ${r.body?.error?.code}`).toBe(`${method} ${path} → 403 forbidden`)
      expect(Object.keys(r.body)).toEqual(['error'])
      expect(Object.keys(r.body.error).sort()).toEqual(['code', 'message'])
    }
    // The endpoint the member tried to delete is still there, with its secret unrotated.
    const hook = await call(server.url, 'GET', `/v1/webhooks/${cliHookId}`, { auth: key })
    expect([hook.status, hook.body.previousSecretValidUntil]).toEqual([200, null])
    // The member still triages: reads and moves reports through the same session.
    expect((await as(member, 'GET', '/v1/feedback')).status).toBe(200)
  })

  test('an sk_ key keeps every power spec part 5 gives it', async () => {
    const mint = await call(server.url, 'POST', `/v1/tokens/mint?appId=${appId}`, { auth: key, body: { sub: 'u1' } })
    expect(mint.status).toBe(200)
    expect((await call(server.url, 'GET', '/v1/webhooks', { auth: key })).status).toBe(200)
    expect((await call(server.url, 'GET', '/v1/chatops/slack/users', { auth: key })).status).toBe(200)
  })

  test("the owner's changes through the same routes are audited with the owner and address", async () => {
    // Each outlives the session: the owner confirms with the password first (docs/security.md "Which actions ask").
    const confirm = (purpose: string) => call(server.url, 'POST', '/admin/api/me/reauth/password', { body: { purpose, password: 'owner password 1' }, headers: { cookie: owner.cookie, 'x-csrf-token': owner.csrf } })
    expect((await confirm('webhook_create')).status).toBe(200)
    const created = await as(owner, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/owner' })
    expect(created.status).toBe(201)
    expect((await confirm('webhook_secret_rotate')).status).toBe(200)
    expect((await as(owner, 'POST', `/v1/webhooks/${created.body.id}/rotate-secret`)).status).toBe(200)
    expect((await as(owner, 'DELETE', `/v1/webhooks/${created.body.id}`)).status).toBe(200)
    expect((await confirm('slack_connect')).status).toBe(200)
    const slack = await as(owner, 'POST', '/v1/chatops/slack', { botToken: 'xoxb-1234567890-abcdef', signingSecret: 'b'.repeat(32), channel: 'C0123ABCD' })
    expect(slack.status).toBe(201)
    expect((await confirm('slack_allow_user')).status).toBe(200)
    expect((await as(owner, 'POST', '/v1/chatops/slack/users', { teamId: 'T0123', userId: 'U0123' })).status).toBe(200)
    expect((await as(owner, 'DELETE', `/v1/chatops/slack/${slack.body.id}`)).status).toBe(200)
    expect((await as(owner, 'POST', `/v1/tokens/mint?appId=${appId}`, { sub: 'end-user-7' })).status).toBe(200)

    const log = await auditOf(server.url, owner, orgId)
    const mine = log.filter((e) => e.actor === `admin:${owner.id}`).map((e) => e.action)
    for (const action of ['webhook.created', 'webhook.secret_rotated', 'webhook.deleted', 'slack.connected', 'slack.user_allowed', 'slack.disconnected', 'token.minted']) {
      expect(mine).toContain(action)
    }
    expect(log.find((e) => e.action === 'webhook.created' && e.actor === `admin:${owner.id}`).ip).toBe('127.0.0.1')
    // No member row: every one of the member's tries was refused before it changed anything.
    expect(log.filter((e) => e.actor !== `admin:${owner.id}` && e.actor !== 'cli').map((e) => e.action)).toEqual([])
  })

  test('fixloop webhook create and chatops slack allow-user (CLI) are audited as actor cli, with the host and never the secret', async () => {
    const log = await auditOf(server.url, owner, orgId)
    const rows = log.filter((e) => e.action === 'webhook.created' && e.actor === 'cli')
    expect(rows.map((e) => [e.targetId, e.data.host])).toEqual([[cliHookId, '127.0.0.1:9']])
    expect(log.filter((e) => e.action === 'slack.user_allowed' && e.actor === 'cli').map((e) => e.data)).toEqual([{ teamId: 'T0777', userId: 'U0777' }])
  })

  // Last: it removes the member.
  test('fixloop admin remove (someone left): the member is signed out at once and cannot sign in, audited in the Org; list shows who is left', async () => {
    const me = () => call(server.url, 'GET', '/admin/api/sessions', { headers: { cookie: member.cookie } })
    expect((await me()).status).toBe(200)
    const listed = (await cli(dir, 'admin', 'list')).data
    expect(listed.map((a: any) => [a.email, a.owner, a.orgs])).toEqual([
      ['member@example.com', false, [{ orgId, role: 'member' }]],
      ['owner@example.com', false, [{ orgId, role: 'owner' }]],
    ])
    expect(JSON.stringify(listed)).not.toContain('argon2')
    // The Org keeps its owner: nothing is ownerless, and no note.
    expect(await cli(dir, 'admin', 'remove', '--email', 'Member@Example.com')).toEqual({ id: member.id, email: 'member@example.com', ownerlessOrgs: [] })
    expect((await me()).status).toBe(401)
    const again = await call(server.url, 'POST', '/admin/api/session', { body: { email: 'member@example.com', password: 'member password 1' } })
    expect(again.status).toBe(401)
    expect((await cli(dir, 'admin', 'list')).data.map((a: any) => a.email)).toEqual(['owner@example.com'])
    const removed = (await auditOf(server.url, owner, orgId)).filter((e) => e.action === 'admin.removed')
    expect(removed.map((e) => [e.actor, e.targetId])).toEqual([['cli', member.id]])
    // Nobody else to remove: unknown email, exit 2 with the reason on stderr.
    const missing = await runBinary(['admin', 'remove', '--email', 'member@example.com', '--data-dir', dir], ENV)
    expect(missing.code).not.toBe(0)
    expect(missing.stderr).toContain('No admin with email member@example.com')
    // The Org's only owner leaves: removed all the same (someone who left must go), and the Org is named so
    // the operator gives it an owner.
    const last = await runBinary(['admin', 'remove', '--email', 'owner@example.com', '--json', '--data-dir', dir], ENV)
    expect(last.code).toBe(0)
    expect(JSON.parse(last.stdout)).toEqual({ id: owner.id, email: 'owner@example.com', ownerlessOrgs: [orgId] })
    expect(last.stderr).toContain(`note: Org ${orgId} has no owner of its own now`)
    expect(last.stderr).toContain(`fixloop admin role --email EMAIL --org ${orgId} --role owner`)
  })
})

describe('fixloop admin role against the binary (someone changes teams)', () => {
  let dir: string
  let server: Awaited<ReturnType<typeof spawnServer>>
  let orgId: string
  let otherOrgId: string
  let lead: Session
  let boss: Session

  beforeAll(async () => {
    dir = tempDir('fixloop-role-')
    orgId = (await cli(dir, 'org', 'create', '--name', 'Acme')).id
    otherOrgId = (await cli(dir, 'org', 'create', '--name', 'Other')).id
    await cli(dir, 'admin', 'create', '--email', 'lead@example.com', '--password-file', writePasswordFile(dir, 'l.txt', 'lead password 1'), '--org', orgId, '--role', 'owner')
    await cli(dir, 'admin', 'create', '--email', 'dev@example.com', '--password-file', writePasswordFile(dir, 'd.txt', 'dev password 1'), '--org', orgId, '--role', 'member')
    await cli(dir, 'admin', 'create', '--email', 'boss@example.com', '--password-file', writePasswordFile(dir, 'b.txt', 'boss password 1'))
    server = await spawnServer(dir, ENV)
    lead = await signIn(server.url, 'lead@example.com', 'lead password 1')
    boss = await signIn(server.url, 'boss@example.com', 'boss password 1')
  })

  afterAll(async () => {
    await server?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  /** An owner-only read (the webhook list) with the session, in `org`: its status says what the session is there. */
  const webhooksAs = (s: Session, org = orgId) => call(server.url, 'GET', '/v1/webhooks', { headers: { cookie: s.cookie, 'x-fixloop-org': org } }).then((r) => r.status)
  const fails = async (...args: string[]) => {
    const r = await runBinary(['admin', 'role', ...args, '--data-dir', dir], ENV)
    expect([args.join(' '), r.code, r.stdout]).toEqual([args.join(' '), 2, ''])
    expect(r.stderr).not.toContain('    at ') // a message, never a stack
    return r.stderr
  }
  const roleChanges = async () =>
    (await call(server.url, 'GET', `/v1/audit?limit=100`, { headers: { cookie: boss.cookie, 'x-fixloop-org': orgId } })).body.data.filter((e: any) => e.action === 'admin.role_changed')

  test("an owner demoted to member loses the owner's powers on the very next request of the session they are signed in with; audited with from and to", async () => {
    expect(await webhooksAs(lead)).toBe(200)
    // The Org's only owner is not demoted: the reason on stderr, exit 2, nothing changed.
    expect(await fails('--email', 'lead@example.com', '--org', orgId, '--role', 'member')).toContain(`the only owner of Org ${orgId}`)
    expect(await webhooksAs(lead)).toBe(200)
    expect(await cli(dir, 'admin', 'role', '--email', 'Dev@Example.com', '--org', orgId, '--role', 'owner')).toEqual({ id: expect.any(String), email: 'dev@example.com', orgId, from: 'member', to: 'owner' })
    const demoted = await cli(dir, 'admin', 'role', '--email', 'lead@example.com', '--org', orgId, '--role', 'member')
    expect(demoted).toEqual({ id: lead.id, email: 'lead@example.com', orgId, from: 'owner', to: 'member' })
    // Same session, no new sign-in: refused as a member at once, while it still reads the Org's reports.
    expect(await webhooksAs(lead)).toBe(403)
    expect((await call(server.url, 'GET', '/v1/feedback', { headers: { cookie: lead.cookie, 'x-fixloop-org': orgId } })).status).toBe(200)
    // Again: nothing to change, nothing audited; the text form says so.
    const again = await runBinary(['admin', 'role', '--email', 'lead@example.com', '--org', orgId, '--role', 'member', '--data-dir', dir], ENV)
    expect([again.code, again.stdout]).toEqual([0, `lead@example.com is already member of ${orgId}\n`])
    // Oldest first: the dev's promotion, then the lead's demotion (and no row for the refusal or the repeat).
    expect((await roleChanges()).map((e: any) => [e.actor, e.targetId === lead.id, e.data])).toEqual([
      ['cli', false, { from: 'member', to: 'owner' }],
      ['cli', true, { from: 'owner', to: 'member' }],
    ])
    expect((await cli(dir, 'admin', 'list')).data.map((a: any) => [a.email, a.owner, a.orgs])).toEqual([
      ['boss@example.com', true, []],
      ['dev@example.com', false, [{ orgId, role: 'owner' }]],
      ['lead@example.com', false, [{ orgId, role: 'member' }]],
    ])
  })

  test('an instance owner is given a role in one Org only with --leave-instance, then keeps only that Org; the only instance owner stays', async () => {
    expect([await webhooksAs(boss), await webhooksAs(boss, otherOrgId)]).toEqual([200, 200])
    // Never a side effect: the instance is given up by name.
    expect(await fails('--email', 'boss@example.com', '--org', orgId, '--role', 'owner')).toContain('owns the instance (every Org)')
    expect([await webhooksAs(boss), await webhooksAs(boss, otherOrgId)]).toEqual([200, 200])
    expect(await fails('--email', 'boss@example.com', '--org', orgId, '--role', 'member', '--leave-instance')).toContain("the instance's only owner")
    await cli(dir, 'admin', 'create', '--email', 'boss2@example.com', '--password-file', writePasswordFile(dir, 'b2.txt', 'boss2 password 1'))
    expect(await cli(dir, 'admin', 'role', '--email', 'boss@example.com', '--org', orgId, '--role', 'member', '--leave-instance')).toEqual({ id: boss.id, email: 'boss@example.com', orgId, from: 'instance_owner', to: 'member' })
    // The next request: a member of this Org (owner-only refused), a stranger to the other (404, like any other tenant).
    expect([await webhooksAs(boss), await webhooksAs(boss, otherOrgId)]).toEqual([403, 404])
  })

  test('bad input: a clear message and exit 2, never a crash; nothing changed', async () => {
    expect(await fails('--email', 'dev@example.com', '--org', orgId, '--role', 'admin')).toContain('--role must be owner or member, got "admin"')
    expect(await fails('--email', 'dev@example.com', '--org', orgId)).toContain('missing --role')
    expect(await fails('--email', 'dev@example.com', '--role', 'member')).toContain('missing --org')
    expect(await fails('--org', orgId, '--role', 'member')).toContain('missing --email')
    expect(await fails('--email', 'dev@example.com', '--org', orgId, '--org', otherOrgId, '--role', 'member')).toContain('give --org once')
    expect(await fails('--email', 'dev@example.com', '--org', 'f'.repeat(24), '--role', 'member')).toContain(`No Org ${'f'.repeat(24)}`)
    expect(await fails('--email', 'dev@example.com', '--org', "x' OR 1=1 --", '--role', 'member')).toContain('No Org')
    expect(await fails('--email', 'nobody@example.com', '--org', orgId, '--role', 'member')).toContain('No admin with email nobody@example.com')
    expect(await fails('--email', 'not an email', '--org', orgId, '--role', 'member')).toContain('not an email address')
    expect(await fails('--email', 'dev@example.com', '--org', otherOrgId, '--role', 'member')).toContain(`dev@example.com is not an admin of Org ${otherOrgId}`)
    expect(await fails('--email', 'dev@example.com', '--org', orgId, '--role', 'member', '--password-file', '/dev/null')).toContain('not --password-file')
    expect((await cli(dir, 'admin', 'list')).data.find((a: any) => a.email === 'dev@example.com').orgs).toEqual([{ orgId, role: 'owner' }])
  })
})

/** `fixloop serve --demo` from the binary, until it has printed the demo key. */
async function startDemo(dir: string, env: Record<string, string>) {
  const port = await freePort()
  const proc = Bun.spawn([BINARY, 'serve', '--demo', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dir], {
    env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn', ...env },
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const reader = proc.stdout.getReader()
  let out = ''
  const deadline = Date.now() + 15_000
  while (!/Bearer sk_\S+/.test(out) || !out.includes('\n', out.indexOf('/v1/feedback'))) {
    if (Date.now() > deadline) throw new Error(`serve --demo printed no key in 15 s: ${out}`)
    const { value, done } = await reader.read()
    if (done) throw new Error(`serve --demo exited: ${out}`)
    out += new TextDecoder().decode(value)
  }
  // The revocation notice follows the key line in the same write burst; give it a moment.
  await Bun.sleep(200)
  const more = await Promise.race([reader.read(), Bun.sleep(300).then(() => undefined)])
  if (more?.value) out += new TextDecoder().decode(more.value)
  return {
    url: `http://127.0.0.1:${port}`,
    out,
    key: out.match(/Bearer (sk_[A-Za-z0-9_-]+)/)![1],
    async stop() {
      reader.releaseLock()
      proc.kill('SIGTERM')
      await proc.exited
    },
  }
}

describe('serve --demo', () => {
  test('a second start prints a new key and revokes the first: one live demo key, every change audited', async () => {
    const dir = tempDir('fixloop-demo-keys-')
    const env = { FIXLOOP_ADMIN_EMAIL: 'root@example.com', FIXLOOP_ADMIN_PASSWORD_FILE: writePasswordFile(dir, 'root.txt', 'root password 1') }
    try {
      const first = await startDemo(dir, env)
      expect((await call(first.url, 'GET', '/v1/feedback', { auth: first.key })).status).toBe(200)
      expect(first.out).not.toContain('revoked')
      await first.stop()

      const second = await startDemo(dir, env)
      try {
        expect(second.key).not.toBe(first.key)
        expect(second.out).toContain(`(${first.key.slice(0, 7)}…) is revoked`)
        const old = await call(second.url, 'GET', '/v1/feedback', { auth: first.key })
        expect([old.status, old.body.error.code]).toEqual([401, 'invalid_authorization'])
        expect((await call(second.url, 'GET', '/v1/feedback', { auth: second.key })).status).toBe(200)

        const root = await signIn(second.url, 'root@example.com', 'root password 1')
        const orgs = (await call(second.url, 'GET', '/admin/api/orgs', { headers: { cookie: root.cookie } })).body.data
        const demoOrg = orgs.find((o: any) => o.name === 'fixloop demo').id
        const keys = (await call(second.url, 'GET', `/admin/api/orgs/${demoOrg}/keys`, { headers: { cookie: root.cookie } })).body.data
        expect(keys.filter((k: any) => k.revokedAt === null).map((k: any) => k.prefix)).toEqual([second.key.slice(0, 7)])
        expect(keys.map((k: any) => k.createdBy)).toEqual(['serve --demo', 'serve --demo'])

        const log = (await auditOf(second.url, root, demoOrg)).filter((e) => e.actor === 'system').map((e) => `${e.action} ${e.data.via}`)
        expect(log.sort()).toEqual(['app.created serve --demo', 'key.created serve --demo', 'key.created serve --demo', 'key.revoked serve --demo', 'org.created serve --demo'])
      } finally {
        await second.stop()
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
