/**
 * The audit log export (issue 40.4): GET /v1/audit pages one Org's entries oldest first by cursor (the
 * limits of the other list routes), never another Org's; FIXLOOP_AUDIT_RETENTION_DAYS purges old entries
 * (0, the default, keeps them); `fixloop audit export` prints the same entries as JSON lines through the
 * compiled binary. Runs on PostgreSQL too (scripts/test-pg.sh).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { ManualClock } from '../src/core/clock'
import { purgeExpired } from '../src/modules/events/retention'
import { call, runBinary, seedTenant, startTestServer, tempDir, type Tenant, type TestServer } from './harness'
import { TEST_DIALECT } from './cluster-env'
import { loadConfig } from '../src/config'
import { closeContext, openContext } from '../src/runtime/open'
import { erasureDigestKey, identityDigest } from '../src/modules/reporters/service'

const DAY = 24 * 3600_000

let server: TestServer
let clock: ManualClock
let acme: Tenant
let other: Tenant
const ids: string[] = []
beforeAll(async () => {
  clock = new ManualClock(Date.UTC(2026, 0, 10, 12))
  server = await startTestServer({ FIXLOOP_AUDIT_RETENTION_DAYS: '5' }, { clock })
  acme = await seedTenant(server.admin, {}, 'Acme')
  other = await seedTenant(server.admin, {}, 'Other')
  for (let i = 0; i < 7; i++) {
    ids.push(await server.services.audit.record({ orgId: acme.orgId, actor: 'cli', action: `test.step${i}`, targetId: acme.appId, data: { i } }))
    await server.services.audit.record({ orgId: other.orgId, actor: 'cli', action: 'other.step', data: { secret: 'never-seen-by-acme' } })
    clock.advance(DAY)
  }
})
afterAll(() => server?.close())

const audit = (t: Tenant, query = '') => call(server.url, 'GET', `/v1/audit${query}`, { auth: t.key })

describe('GET /v1/audit', () => {
  test('oldest first, cursor-paged by the last id, only the caller Org', async () => {
    const first = await audit(acme, '?limit=3')
    expect(first.status).toBe(200)
    expect(first.body.data.map((e: any) => e.action)).toEqual(['test.step0', 'test.step1', 'test.step2'])
    expect(first.body.data[0]).toEqual({ id: ids[0], orgId: acme.orgId, actor: 'cli', action: 'test.step0', targetId: acme.appId, data: { i: 0 }, ip: null, createdAt: new Date(Date.UTC(2026, 0, 10, 12)).toISOString() })
    expect(first.body.nextCursor).toBe(ids[2])
    const seen = [...first.body.data]
    let cursor = first.body.nextCursor
    while (cursor) {
      const page = await audit(acme, `?limit=3&after=${cursor}`)
      expect(page.status).toBe(200)
      seen.push(...page.body.data)
      cursor = page.body.nextCursor
    }
    expect(seen.map((e) => e.id)).toEqual(ids)
    expect(JSON.stringify(seen)).not.toContain('never-seen-by-acme')
    const whole = await audit(acme)
    expect(whole.body.data.length).toBe(7)
    expect(whole.body.nextCursor).toBeNull()
  })

  test("the instance's own entries (no Org) are no Org's: never in GET /v1/audit; exported on their own", async () => {
    const signedIn = await server.services.audit.record({ orgId: null, actor: 'admin:0123456789abcdef01234567', action: 'admin.signed_in', data: { method: 'password' } })
    const whole = await audit(acme, '?limit=100')
    expect(whole.body.data.map((e: any) => e.id)).not.toContain(signedIn)
    const own = await server.services.audit.export(null, { limit: 100 })
    expect(own.data.map((e) => [e.id, e.orgId, e.action])).toEqual([[signedIn, null, 'admin.signed_in']])
  })

  test('since keeps entries created at or after an ISO instant', async () => {
    const r = await audit(acme, `?since=${encodeURIComponent(new Date(Date.UTC(2026, 0, 15, 12)).toISOString())}`)
    expect(r.status).toBe(200)
    expect(r.body.data.map((e: any) => e.action)).toEqual(['test.step5', 'test.step6'])
  })

  test('bad input is 400 invalid_body naming the parameter; no key is 401', async () => {
    for (const [query, path] of [
      ['?limit=0', '/limit'],
      ['?limit=101', '/limit'],
      ['?limit=1e3', '/limit'],
      ['?limit=' + '9'.repeat(400), '/limit'],
      ['?after=zzz', 'after'],
      ['?after=' + 'a'.repeat(5000), 'after'],
      ['?after=%00' + 'a'.repeat(23), 'after'],
      ['?since=yesterday', 'since'],
      ['?since=2026-13-45T99:00:00Z', 'since'],
      // Impossible dates were rolled over by Date.parse (2 March), free text read as a date.
      ['?since=2026-02-30', 'since'],
      ['?since=2026-01-31T24:00:00Z', 'since'],
      ['?since=March%203%202026', 'since'],
      ['?junk=1', 'junk'],
    ]) {
      const r = await audit(acme, query)
      expect(r.status, query).toBe(400)
      expect(r.body.error.code).toBe('invalid_body')
      expect(JSON.stringify(r.body.error.details), query).toContain(path)
    }
    expect((await call(server.url, 'GET', '/v1/audit')).status).toBe(401)
    expect((await call(server.url, 'GET', '/v1/audit', { auth: acme.pub })).status).toBe(401)
  })

  test('FIXLOOP_AUDIT_RETENTION_DAYS purges older entries at the maintenance run; nothing newer', async () => {
    // Now: 7 days after the first entry; kept 5 days: entries 0 and 1 (7 and 6 days old) go, 2 (5 days) stays.
    const n = await purgeExpired(server.ctx)
    expect(n.audit).toBeGreaterThanOrEqual(4)
    const left = (await audit(acme)).body.data.map((e: any) => e.action)
    expect(left).toEqual(['test.step2', 'test.step3', 'test.step4', 'test.step5', 'test.step6'])
  })
})

describe('fixloop audit export (the compiled binary)', () => {
  test('JSON lines, oldest first, --since; unknown org, bad --since and no --org are errors with a non-zero exit', async () => {
    if (TEST_DIALECT === 'pg') return // the binary on a data dir of its own: the SQLite run covers it
    const dir = tempDir()
    try {
      const org = await runBinary(['org', 'create', '--name', 'Exported', '--json', '--data-dir', dir])
      expect(org.code).toBe(0)
      const orgId = JSON.parse(org.stdout).id
      expect((await runBinary(['key', 'create', '--org', orgId, '--name', 'siem', '--data-dir', dir])).code).toBe(0)
      expect((await runBinary(['app', 'create', '--org', orgId, '--name', 'Web', '--json', '--data-dir', dir])).code).toBe(0)
      const out = await runBinary(['audit', 'export', '--org', orgId, '--data-dir', dir])
      expect(out.code).toBe(0)
      const lines = out.stdout.trimEnd().split('\n').map((l) => JSON.parse(l))
      // Oldest first by createdAt, whatever each CLI process's ids sort as within one second (core/ids.ts):
      // the three commands ran one after another, so in that order.
      expect(lines.map((e) => e.action)).toEqual(['org.created', 'key.created', 'app.created'])
      for (const e of lines) expect(e.orgId).toBe(orgId)
      expect(lines.map((e) => e.createdAt)).toEqual([...lines.map((e) => e.createdAt)].sort())
      const future = await runBinary(['audit', 'export', '--org', orgId, '--since', '2999-01-01', '--json', '--data-dir', dir])
      expect(future.code).toBe(0)
      expect(future.stdout).toBe('')
      const unknown = await runBinary(['audit', 'export', '--org', 'f'.repeat(24), '--data-dir', dir])
      expect(unknown.code).not.toBe(0)
      expect(unknown.stderr).toContain('unknown org')
      const badSince = await runBinary(['audit', 'export', '--org', orgId, '--since', 'last week', '--data-dir', dir])
      expect(badSince.code).not.toBe(0)
      expect(badSince.stderr).toContain('--since')
      expect((await runBinary(['audit', 'export', '--data-dir', dir])).code).not.toBe(0)

      // --instance: the entries of no Org (an instance owner created, a password reset), never an Org's.
      expect((await runBinary(['admin', 'create', '--email', 'root@example.com', '--no-password', '--data-dir', dir])).code).toBe(0)
      const instance = await runBinary(['audit', 'export', '--instance', '--data-dir', dir])
      expect(instance.code).toBe(0)
      const own = instance.stdout.trimEnd().split('\n').map((l) => JSON.parse(l))
      expect(own.map((e) => [e.orgId, e.actor, e.action])).toEqual([[null, 'cli', 'admin.created']])
      const both = await runBinary(['audit', 'export', '--instance', '--org', orgId, '--data-dir', dir])
      expect(both.code).not.toBe(0)
      expect(both.stderr).toContain('not both')
      expect((await runBinary(['audit', 'export', '--instance', '--since', '2999-01-01', '--data-dir', dir])).stdout).toBe('')
      expect((await runBinary(['audit', 'purge', '--data-dir', dir])).code).not.toBe(0)

      // `audit digest`: the keyed identity digest a reporter.erased entry holds, stable, per identifier,
      // this instance's (the same as the server computes with the data dir's key).
      const digest = await runBinary(['audit', 'digest', '--email', 'Ada@Example.com', '--data-dir', dir])
      expect(digest.code).toBe(0)
      expect(digest.stdout.trim()).toMatch(/^[0-9a-f]{64}$/)
      expect((await runBinary(['audit', 'digest', '--email', 'ada@example.com', '--data-dir', dir])).stdout).toBe(digest.stdout)
      const byId = await runBinary(['audit', 'digest', '--external-user-id', 'user-42', '--json', '--data-dir', dir])
      expect(JSON.parse(byId.stdout).identityDigest).toMatch(/^[0-9a-f]{64}$/)
      expect(JSON.parse(byId.stdout).identityDigest).not.toBe(digest.stdout.trim())
      const ctx = await openContext(loadConfig({ dataDir: dir }), undefined, { existingOnly: true })
      try {
        expect(digest.stdout.trim()).toBe(identityDigest({ email: 'ada@example.com' }, erasureDigestKey(ctx.urlSigningKey)))
      } finally {
        await closeContext(ctx)
      }
      for (const bad of [[], ['--email', 'a@b.c', '--external-user-id', 'x'], ['--email', ' ']]) {
        const r = await runBinary(['audit', 'digest', ...bad, '--data-dir', dir])
        expect(r.code).not.toBe(0)
        expect(r.stderr.length).toBeGreaterThan(0)
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
