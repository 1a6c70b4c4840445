/** modules/tenants/repo.ts on both dialects: the same cases, the same answers. */
import { expect, test } from 'bun:test'
import { describeEachDialect } from '../dialects'

const org = (id: string, name = 'Acme') => ({ id, name, createdAt: 1_000 })
const app = (id: string, orgId: string, slug: string) => ({
  id, orgId, slug, name: slug, publicKey: `pk_${id}`, signingSecretEnc: 'sealed', createdAt: 2_000, updatedAt: 2_000,
})
const key = (id: string, orgId: string) => ({ id, orgId, name: 'k', keyHash: `h_${id}`, keyPrefix: 'sk_abcd', createdAt: 3_000 })
const audit = (action: string, targetId: string) => ({ orgId: 'o1', actor: 'cli', action, targetId, data: { n: 1 } })

async function auditRows(s: Awaited<ReturnType<Parameters<Parameters<typeof describeEachDialect>[1]>[0]>>) {
  if (s.storage.dialect === 'sqlite') return s.storage.sqlite.query('SELECT action, target_id AS targetId, data FROM audit_log ORDER BY id').all() as { action: string; targetId: string; data: string }[]
  return (await s.storage.pool.query('SELECT action, target_id AS "targetId", data FROM audit_log ORDER BY id')).rows as { action: string; targetId: string; data: string }[]
}

describeEachDialect('tenants repo', (fresh) => {
  test('orgs, keys and Apps read back as written, ordered by id, booleans and epoch ms as JS values', async () => {
    const s = await fresh()
    const repo = s.store.tenants
    await repo.insertOrg(org('o2', 'Beta'), [])
    await repo.insertOrg(org('o1'), [])
    expect((await repo.orgs()).map((o) => o.id)).toEqual(['o1', 'o2'])
    expect(await repo.org('o1')).toEqual({ id: 'o1', name: 'Acme', createdAt: 1_000 })
    expect(await repo.org('nope')).toBeUndefined()
    expect(await repo.insertApp(app('a2', 'o1', 'two'), [])).toBe(true)
    expect(await repo.insertApp(app('a1', 'o1', 'one'), [])).toBe(true)
    const a1 = await repo.appInOrg('o1', 'a1')
    expect(a1).toMatchObject({ id: 'a1', publicSubmissionEnabled: true, batchEnabled: false, batchWindowHours: 24, processingMode: 'manual', allowedOrigins: '[]', deletedAt: null, createdAt: 2_000 })
    expect(typeof a1!.createdAt).toBe('number')
    expect((await repo.apps('o1')).map((a) => a.id)).toEqual(['a1', 'a2'])
    expect(await repo.appInOrg('o2', 'a1')).toBeUndefined()
    expect(await repo.appBySlug('o1', 'two')).toEqual({ id: 'a2' })
    await repo.insertKey(key('k1', 'o1'), 'admin:x', [])
    expect((await repo.key('k1'))?.revokedAt).toBeNull()
    expect((await repo.keys('o1')).map((k) => k.id)).toEqual(['k1'])
    expect(await repo.keys('o2')).toEqual([])
  })

  test('a live slug is taken once per Org; a deleted App frees it; another Org may use it', async () => {
    const s = await fresh()
    const repo = s.store.tenants
    await repo.insertOrg(org('o1'), [])
    await repo.insertOrg(org('o2'), [])
    expect(await repo.insertApp(app('a1', 'o1', 'web'), [audit('app.created', 'a1')])).toBe(true)
    expect(await repo.insertApp(app('a2', 'o1', 'web'), [audit('app.created', 'a2')])).toBe(false)
    expect(await repo.insertApp(app('a3', 'o2', 'web'), [])).toBe(true)
    expect(await repo.insertApp(app('a4', 'o1', 'api'), [])).toBe(true)
    // Renaming a4 onto a1's slug is refused and changes nothing, audit included.
    expect(await repo.updateApp('o1', 'a4', { slug: 'web', updatedAt: 9 }, [audit('app.updated', 'a4')])).toBe(false)
    expect((await repo.appInOrg('o1', 'a4'))?.slug).toBe('api')
    expect(await repo.updateApp('o1', 'a1', { deletedAt: 5_000, updatedAt: 5_000 }, [])).toBe(true)
    expect(await repo.liveApp('a1')).toBeUndefined()
    expect(await repo.updateApp('o1', 'a4', { slug: 'web', updatedAt: 9 }, [])).toBe(true)
    expect((await auditRows(s)).map((r) => `${r.action} ${r.targetId}`)).toEqual(['app.created a1'])
  })

  test('a change and its audit rows commit together; revoking twice keeps the first time', async () => {
    const s = await fresh()
    const repo = s.store.tenants
    await repo.insertOrg(org('o1'), [audit('org.created', 'o1')])
    await repo.insertKey(key('k1', 'o1'), 'cli', [audit('key.created', 'k1')])
    expect(await repo.revokeKey('o1', 'k1', 7_000, [audit('key.revoked', 'k1')])).toBe(7_000)
    expect(await repo.revokeKey('o1', 'k1', 8_000, [])).toBe(7_000)
    // Another Org's id changes nothing.
    await repo.insertKey(key('k2', 'o1'), null, [])
    expect(await repo.revokeKey('o2', 'k2', 9_000, [])).toBe(9_000)
    expect((await repo.key('k2'))?.revokedAt).toBeNull()
    const rows = await auditRows(s)
    expect(rows.map((r) => `${r.action} ${r.targetId}`)).toEqual(['org.created o1', 'key.created k1', 'key.revoked k1'])
    expect(JSON.parse(rows[0].data)).toEqual({ n: 1 })
  })

  test('a rotation inserts the new key and revokes the old in one transaction; a failure leaves both as they were', async () => {
    const s = await fresh()
    const repo = s.store.tenants
    await repo.insertOrg(org('o1'), [])
    await repo.insertKey(key('k1', 'o1'), null, [])
    await repo.rotateKey(key('k2', 'o1'), 'k1', 6_000, [audit('key.created', 'k2'), audit('key.revoked', 'k1')])
    expect((await repo.key('k1'))?.revokedAt).toBe(6_000)
    expect((await repo.key('k2'))?.revokedAt).toBeNull()
    // k3 reuses k2's hash: the unique index fails the insert, and k2 is not revoked either.
    await expect(repo.rotateKey({ ...key('k3', 'o1'), keyHash: 'h_k2' }, 'k2', 7_000, [audit('key.created', 'k3')])).rejects.toThrow()
    expect(await repo.key('k3')).toBeUndefined()
    expect((await repo.key('k2'))?.revokedAt).toBeNull()
    expect((await auditRows(s)).map((r) => r.action)).toEqual(['key.created', 'key.revoked'])
  })
})
