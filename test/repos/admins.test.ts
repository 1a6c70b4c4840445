/** modules/admins/repo.ts on both dialects: the same cases, the same answers. */
import { expect, test } from 'bun:test'
import { storeOf } from '../dialects'
import { describeEachDialect } from '../dialects'
import { type AdminRow, type SessionRow } from '../../src/modules/admins/repo'
import { pgStorage } from '../../src/db/pg/storage'
import { openPool } from '../../src/db/pg/client-options'
import { rows, run } from './raw'
import { createAdminsService } from '../../src/modules/admins/service'
import { SecretBox } from '../../src/core/crypto'
import { base32Decode, newTotpSecret, totpCode } from '../../src/modules/admins/totp'

const admin = (id: string, email: string, isOwner = false): AdminRow => ({
  id, email, passwordHash: `hash-${id}`, isOwner, totpSecretEnc: null, totpLastStep: null, createdAt: 1_000, updatedAt: 1_000,
})
const session = (id: string, adminId: string, over: Partial<SessionRow> = {}): SessionRow => ({
  id, tokenHash: `th-${id}`, adminId, csrfToken: `csrf-${id}`, userAgent: 'ua', ip: '127.0.0.1', createdAt: 1_000, lastSeenAt: 1_000, expiresAt: 100_000, revokedAt: null, ...over,
})

describeEachDialect('admins repo', (fresh, dialect) => {
  test('admins read back as written (booleans and epoch ms as JS values); memberships ordered by Org; emails unique', async () => {
    const s = await fresh()
    const repo = s.store.admins
    const tenants = s.store.tenants
    await tenants.insertOrg({ id: 'o2', name: 'B', createdAt: 1 }, [])
    await tenants.insertOrg({ id: 'o1', name: 'A', createdAt: 1 }, [])
    expect(await repo.count()).toBe(0)
    expect(await repo.orgExists('o1')).toBe(true)
    expect(await repo.orgExists('nope')).toBe(false)
    expect(await repo.insertAdmin(admin('a1', 'owner@example.com', true), [])).toBe(true)
    expect(await repo.insertAdmin(admin('a2', 'm@example.com'), [{ orgId: 'o2', role: 'member' }, { orgId: 'o1', role: 'owner' }])).toBe(true)
    // The same email again: refused, nothing written (no admin, no membership).
    expect(await repo.insertAdmin(admin('a3', 'm@example.com'), [{ orgId: 'o1', role: 'owner' }])).toBe(false)
    expect(await repo.byId('a3')).toBeUndefined()
    expect(await repo.count()).toBe(2)
    expect(await repo.byEmail('owner@example.com')).toEqual(admin('a1', 'owner@example.com', true))
    const a2 = await repo.byId('a2')
    expect(a2).toEqual(admin('a2', 'm@example.com'))
    expect(typeof a2!.createdAt).toBe('number')
    expect(await repo.memberships('a2')).toEqual([{ orgId: 'o1', role: 'owner' }, { orgId: 'o2', role: 'member' }])
    expect(await repo.memberships('a3')).toEqual([])
    expect(await repo.listForOrg('o1')).toEqual([{ id: 'a2', email: 'm@example.com', role: 'owner', createdAt: 1_000 }])
    expect(await repo.listForOrg('o9')).toEqual([])
  })

  test('two creations racing for one email: exactly one is written', async () => {
    const s = await fresh()
    const repo = s.store.admins
    const results = await Promise.all([repo.insertAdmin(admin('r1', 'same@example.com'), []), repo.insertAdmin(admin('r2', 'same@example.com'), [])])
    expect(results.filter(Boolean).length).toBe(1)
    expect(await repo.count()).toBe(1)
  })

  test('TOTP steps: each later step is claimed once, an earlier or equal one never; setTotp resets it', async () => {
    const s = await fresh()
    const repo = s.store.admins
    await repo.insertAdmin(admin('a1', 'a@example.com'), [])
    await repo.setTotp('a1', 'sealed', 10, 2_000)
    expect(await repo.byId('a1')).toMatchObject({ totpSecretEnc: 'sealed', totpLastStep: 10, updatedAt: 2_000 })
    expect(await repo.claimTotpStep('a1', 10)).toBe(false)
    expect(await repo.claimTotpStep('a1', 9)).toBe(false)
    expect(await repo.claimTotpStep('a1', 11)).toBe(true)
    expect(await repo.claimTotpStep('a1', 11)).toBe(false)
    expect(await repo.claimTotpStep('nobody', 99)).toBe(false)
    await repo.setTotp('a1', null, null, 3_000)
    expect(await repo.byId('a1')).toMatchObject({ totpSecretEnc: null, totpLastStep: null })
    // Null last step: any step is later.
    expect(await repo.claimTotpStep('a1', 1)).toBe(true)
  })

  test('two concurrent uses of one TOTP step, on two connections: exactly one wins', async () => {
    const s = await fresh()
    const repo = s.store.admins
    await repo.insertAdmin(admin('a1', 'a@example.com'), [])
    await repo.setTotp('a1', 'sealed', 5, 2_000)
    if (dialect === 'pg') {
      // A second pool is a second node: the claims run on different connections at once, many rounds.
      const other = openPool(s.location, 4)
      try {
        const repo2 = storeOf(pgStorage(other)).admins
        for (let step = 6; step < 26; step++) {
          const wins = await Promise.all([repo.claimTotpStep('a1', step), repo2.claimTotpStep('a1', step), repo.claimTotpStep('a1', step), repo2.claimTotpStep('a1', step)])
          expect(wins.filter(Boolean).length).toBe(1)
        }
      } finally {
        await other.end()
      }
    } else {
      const wins = await Promise.all([repo.claimTotpStep('a1', 6), repo.claimTotpStep('a1', 6)])
      expect(wins.filter(Boolean).length).toBe(1)
    }
  })

  test('the service: two sign-ins racing with the same TOTP code, on two nodes: exactly one signs in', async () => {
    const s = await fresh()
    const box = new SecretBox(new Uint8Array(32).fill(3))
    const one = createAdminsService(s.store.admins, box, s.clock)
    const created = await one.create('t@example.com', 'a long password')
    const secret = newTotpSecret()
    await one.setTotp(created.id, secret, totpCode(base32Decode(secret), s.clock.now()))
    s.clock.advance(30_000)
    const code = totpCode(base32Decode(secret), s.clock.now())
    const pool = dialect === 'pg' ? openPool(s.location, 2) : undefined
    try {
      const two = pool ? createAdminsService(storeOf(pgStorage(pool), s.clock).admins, box, s.clock) : one
      const outcomes = await Promise.allSettled([one.verifyLogin('t@example.com', 'a long password', code), two.verifyLogin('t@example.com', 'a long password', code)])
      expect(outcomes.map((o) => o.status).sort()).toEqual(['fulfilled', 'rejected'])
      expect((outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult).reason).toMatchObject({ code: 'invalid_credentials' })
    } finally {
      await pool?.end()
    }
  })

  test('a password change revokes every live session of the admin, no other', async () => {
    const s = await fresh()
    const repo = s.store.admins
    await repo.insertAdmin(admin('a1', 'a@example.com'), [])
    await repo.insertAdmin(admin('a2', 'b@example.com'), [])
    await repo.insertSession(session('s1', 'a1'))
    await repo.insertSession(session('s2', 'a1'))
    expect(await repo.revokeSession('a1', 's2', 500)).toBe(true)
    await repo.insertSession(session('s3', 'a2'))
    await repo.setPassword('a1', 'new-hash', 7_000)
    expect((await repo.byId('a1'))?.passwordHash).toBe('new-hash')
    expect((await repo.sessionByTokenHash('th-s1'))?.revokedAt).toBe(7_000)
    expect((await repo.sessionByTokenHash('th-s2'))?.revokedAt).toBe(500)
    expect((await repo.sessionByTokenHash('th-s3'))?.revokedAt).toBeNull()
  })

  test('remove: the admin, its sessions, memberships and read marks go with its audit rows; the only owner stays; owners removing each other at once leave one', async () => {
    const s = await fresh()
    const repo = s.store.admins
    const { seedOrgApp } = await import('./store-fixtures')
    await seedOrgApp(s, 'o1', 'a1')
    await repo.insertAdmin(admin('own1', 'own1@example.com', true), [])
    await repo.insertAdmin(admin('mem1', 'mem1@example.com'), [{ orgId: 'o1', role: 'member' }])
    await repo.insertSession(session('s1', 'mem1'))
    await repo.insertSession(session('s2', 'own1'))
    expect((await repo.all()).map((a) => a.email)).toEqual(['mem1@example.com', 'own1@example.com'])
    const audit = [{ orgId: 'o1', actor: 'cli', action: 'admin.removed', targetId: 'mem1', data: {} }]
    expect(await repo.remove('mem1', audit)).toBe('removed')
    expect(await repo.byId('mem1')).toBeUndefined()
    expect(await repo.sessionByTokenHash('th-s1')).toBeUndefined()
    expect(await repo.memberships('mem1')).toEqual([])
    expect(await repo.listForOrg('o1')).toEqual([])
    expect(await repo.sessionByTokenHash('th-s2')).toBeDefined()
    expect(await rows(s.storage, "SELECT target_id FROM audit_log WHERE action = 'admin.removed'")).toEqual([{ target_id: 'mem1' }])
    expect(await repo.remove('mem1', audit)).toBe('missing')
    // The instance's only owner: refused, nothing written (no audit row either).
    expect(await repo.remove('own1', [{ ...audit[0], orgId: null, targetId: 'own1' }])).toBe('last_owner')
    expect(await repo.byId('own1')).toBeDefined()
    expect((await rows(s.storage, "SELECT target_id FROM audit_log WHERE action = 'admin.removed'")).length).toBe(1)
    // Owners removing each other at once (rounds of four): one of them always stays.
    for (let round = 0; round < 5; round++) {
      const [kept] = (await repo.all()).filter((a) => a.isOwner).map((a) => a.id)
      const ids = [kept, ...[1, 2, 3].map((k) => `r${round}o${k}`)]
      for (const id of ids.slice(1)) await repo.insertAdmin(admin(id, `${id}@example.com`, true), [])
      const outcomes = await Promise.all(ids.map((id) => repo.remove(id, [])))
      expect(outcomes.sort()).toEqual(['last_owner', 'removed', 'removed', 'removed'])
      expect((await repo.all()).filter((a) => a.isOwner).length).toBe(1)
    }
  })

  test('setRole: a membership changed with its audit rows; the same role, a stranger or an unknown admin write nothing; an Org\'s only owner stays; owners demoting each other at once leave one', async () => {
    const s = await fresh()
    const repo = s.store.admins
    const { seedOrgApp } = await import('./store-fixtures')
    await seedOrgApp(s, 'o1', 'a1')
    await seedOrgApp(s, 'o2', 'a2')
    await repo.insertAdmin(admin('own1', 'own1@example.com'), [{ orgId: 'o1', role: 'owner' }])
    await repo.insertAdmin(admin('mem1', 'mem1@example.com'), [{ orgId: 'o1', role: 'member' }, { orgId: 'o2', role: 'member' }])
    const audit = (id: string) => (from: string) => [{ orgId: 'o1', actor: 'cli', action: 'admin.role_changed', targetId: id, data: { from, to: 'x' } }]
    const changes = () => rows<{ target_id: string; data: string }>(s.storage, "SELECT target_id, data FROM audit_log WHERE action = 'admin.role_changed' ORDER BY id")
    // The Org's only owner is not demoted: nothing written, no audit row.
    expect(await repo.setRole('own1', 'o1', 'member', audit('own1'), 2_000)).toEqual({ outcome: 'last_org_owner' })
    expect(await repo.memberships('own1')).toEqual([{ orgId: 'o1', role: 'owner' }])
    // A member made owner: only that Org's membership changes.
    expect(await repo.setRole('mem1', 'o1', 'owner', audit('mem1'), 2_000)).toEqual({ outcome: 'changed', from: 'member' })
    expect(await repo.memberships('mem1')).toEqual([{ orgId: 'o1', role: 'owner' }, { orgId: 'o2', role: 'member' }])
    // With a second owner, the first may step down.
    expect(await repo.setRole('own1', 'o1', 'member', audit('own1'), 2_000)).toEqual({ outcome: 'changed', from: 'owner' })
    expect((await repo.listForOrg('o1')).map((a) => [a.id, a.role])).toEqual([['mem1', 'owner'], ['own1', 'member']])
    expect((await changes()).map((r) => r.target_id)).toEqual(['mem1', 'own1'])
    // The same role again, an Org the admin is not in, an unknown admin: nothing written.
    expect(await repo.setRole('own1', 'o1', 'member', audit('own1'), 2_000)).toEqual({ outcome: 'unchanged', from: 'member' })
    expect(await repo.setRole('own1', 'o2', 'owner', audit('own1'), 2_000)).toEqual({ outcome: 'not_member' })
    expect(await repo.setRole('nobody', 'o1', 'owner', audit('nobody'), 2_000)).toEqual({ outcome: 'missing' })
    expect(await repo.memberships('own1')).toEqual([{ orgId: 'o1', role: 'member' }])
    expect((await changes()).length).toBe(2)
    // An Org's owners demoting each other at once: one stays its owner. No instance owner here, whose row
    // lock (taken first) would serialize the changes anyway: the Org's owner memberships are what is locked.
    for (let round = 0; round < 5; round++) {
      const org = `r${round}`
      await seedOrgApp(s, org, `app-${org}`)
      const ids = [1, 2, 3, 4].map((k) => `${org}o${k}`)
      for (const id of ids) await repo.insertAdmin(admin(id, `${id}@example.com`), [{ orgId: org, role: 'owner' }])
      const outcomes = await Promise.all(ids.map(async (id) => (await repo.setRole(id, org, 'member', () => [], 3_000)).outcome))
      expect(outcomes.sort()).toEqual(['changed', 'changed', 'changed', 'last_org_owner'])
      expect((await repo.listForOrg(org)).filter((a) => a.role === 'owner').length).toBe(1)
    }
  })

  test('setRole of an instance owner: it keeps only this Org, with this role; the only owner stays; instance owners demoting each other at once leave one', async () => {
    const s = await fresh()
    const repo = s.store.admins
    const { seedOrgApp } = await import('./store-fixtures')
    await seedOrgApp(s, 'o1', 'a1')
    await repo.insertAdmin(admin('boss', 'boss@example.com', true), [])
    await repo.insertAdmin(admin('boss2', 'boss2@example.com', true), [])
    await repo.insertSession(session('s1', 'boss'))
    const audit = (from: string) => [
      { orgId: 'o1', actor: 'cli', action: 'admin.role_changed', targetId: 'boss', data: { from, to: 'member' } },
      { orgId: null, actor: 'cli', action: 'admin.role_changed', targetId: 'boss', data: { from, to: 'member', orgId: 'o1' } },
    ]
    expect(await repo.setRole('boss', 'o1', 'member', audit, 2_000)).toEqual({ outcome: 'changed', from: 'instance_owner' })
    expect(await repo.byId('boss')).toEqual({ ...admin('boss', 'boss@example.com'), updatedAt: 2_000 })
    expect(await repo.memberships('boss')).toEqual([{ orgId: 'o1', role: 'member' }])
    // Its session stays (it is signed in still, as a member from its next request).
    expect(await repo.sessionByTokenHash('th-s1')).toBeDefined()
    expect((await rows<{ org_id: string | null }>(s.storage, "SELECT org_id FROM audit_log WHERE action = 'admin.role_changed' ORDER BY org_id")).map((r) => r.org_id).sort()).toEqual([null, 'o1'].sort())
    // The instance's only owner: refused, nothing written.
    expect(await repo.setRole('boss2', 'o1', 'owner', audit, 2_000)).toEqual({ outcome: 'last_owner' })
    expect((await repo.byId('boss2'))!.isOwner).toBe(true)
    expect(await repo.memberships('boss2')).toEqual([])
    expect((await rows(s.storage, "SELECT id FROM audit_log WHERE action = 'admin.role_changed'")).length).toBe(2)

    // Instance owners demoting each other at once (rounds of four): one of them always stays.
    for (let round = 0; round < 5; round++) {
      const [kept] = (await repo.all()).filter((a) => a.isOwner).map((a) => a.id)
      const ids = [kept, ...[1, 2, 3].map((k) => `i${round}o${k}`)]
      for (const id of ids.slice(1)) await repo.insertAdmin(admin(id, `${id}@example.com`, true), [])
      const outcomes = await Promise.all(ids.map(async (id) => (await repo.setRole(id, 'o1', 'member', () => [], 3_000)).outcome))
      expect(outcomes.sort()).toEqual(['changed', 'changed', 'changed', 'last_owner'])
      expect((await repo.all()).filter((a) => a.isOwner).length).toBe(1)
    }
  })

  test('sessions: read back, touched, listed newest first (live only), revoked once and only by their admin', async () => {
    const s = await fresh()
    const repo = s.store.admins
    await repo.insertAdmin(admin('a1', 'a@example.com'), [])
    await repo.insertSession(session('s1', 'a1'))
    await repo.insertSession(session('s2', 'a1'))
    await repo.insertSession(session('s3', 'a1', { expiresAt: 2_000 }))
    await repo.insertSession(session('s4', 'a1', { lastSeenAt: 10 }))
    expect(await repo.sessionByTokenHash('th-s1')).toEqual(session('s1', 'a1'))
    expect(await repo.sessionByTokenHash('nope')).toBeUndefined()
    await repo.touchSession('s1', 4_000)
    expect((await repo.sessionByTokenHash('th-s1'))?.lastSeenAt).toBe(4_000)
    expect((await repo.liveSessions('a1', 3_000, 100)).map((r) => r.id)).toEqual(['s2', 's1'])
    expect(await repo.revokeSession('a2', 's1', 5_000)).toBe(false)
    expect(await repo.revokeSession('a1', 's1', 5_000)).toBe(true)
    expect(await repo.revokeSession('a1', 's1', 6_000)).toBe(false)
    expect((await repo.sessionByTokenHash('th-s1'))?.revokedAt).toBe(5_000)
    expect((await repo.liveSessions('a1', 3_000, 100)).map((r) => r.id)).toEqual(['s2'])
  })

  test('ended sessions are deleted once over for long enough (revoked, expired or idle before the cut-off); live ones and recently ended ones stay', async () => {
    const s = await fresh()
    const repo = s.store.admins
    await repo.insertAdmin(admin('a1', 'a@example.com'), [])
    await repo.insertSession(session('live', 'a1', { lastSeenAt: 9_000, expiresAt: 50_000 }))
    await repo.insertSession(session('revoked-long-ago', 'a1', { lastSeenAt: 9_000, expiresAt: 50_000 }))
    await repo.insertSession(session('revoked-just-now', 'a1', { lastSeenAt: 9_000, expiresAt: 50_000 }))
    await repo.insertSession(session('expired', 'a1', { lastSeenAt: 9_000, expiresAt: 4_000 }))
    await repo.insertSession(session('expired-just-now', 'a1', { lastSeenAt: 9_000, expiresAt: 6_000 }))
    await repo.insertSession(session('idle', 'a1', { lastSeenAt: 1_000, expiresAt: 50_000 }))
    await repo.revokeSession('a1', 'revoked-long-ago', 3_000)
    await repo.revokeSession('a1', 'revoked-just-now', 7_000)
    // Cut-off 5,000; idle sessions: last seen before 2,000.
    expect(await repo.purgeDeadSessions(5_000, 2_000)).toBe(3)
    const left = (await rows<{ id: string }>(s.storage, 'SELECT id FROM admin_sessions ORDER BY id')).map((r) => r.id)
    expect(left).toEqual(['expired-just-now', 'live', 'revoked-just-now'])
    expect(await repo.purgeDeadSessions(5_000, 2_000)).toBe(0)
  })

  test('step-up re-authentication: marked only on a live session of its admin, read back, used once, only for its purpose and not before the bound', async () => {
    const s = await fresh()
    const repo = s.store.admins
    await repo.insertAdmin(admin('a1', 'one@example.com'), [])
    await repo.insertAdmin(admin('a2', 'two@example.com'), [])
    await repo.insertSession(session('s1', 'a1'))
    await repo.insertSession(session('s2', 'a1'))
    await repo.insertSession(session('s3', 'a1', { expiresAt: 5_000 }))
    expect(await repo.revokeSession('a1', 's2', 1_500)).toBe(true)
    expect(await repo.reauthentication('s1')).toBeUndefined()
    // Another admin's session, a revoked one, an expired one, an unknown one: nothing written.
    expect(await repo.markReauthenticated('s1', 'a2', 'secret_reveal', 10_000)).toBe(false)
    expect(await repo.markReauthenticated('s2', 'a1', 'secret_reveal', 10_000)).toBe(false)
    expect(await repo.markReauthenticated('s3', 'a1', 'secret_reveal', 10_000)).toBe(false)
    expect(await repo.markReauthenticated('nope', 'a1', 'secret_reveal', 10_000)).toBe(false)
    expect(await repo.reauthentication('s1')).toBeUndefined()
    expect(await repo.markReauthenticated('s1', 'a1', 'totp_disable', 10_000)).toBe(true)
    expect(await repo.reauthentication('s1')).toEqual({ purpose: 'totp_disable', at: 10_000 })
    // A later one replaces it.
    expect(await repo.markReauthenticated('s1', 'a1', 'secret_reveal', 20_000)).toBe(true)
    expect(await repo.reauthentication('s1')).toEqual({ purpose: 'secret_reveal', at: 20_000 })
    expect(await repo.consumeReauthentication('s1', 'totp_disable', 0)).toBe(false)
    expect(await repo.consumeReauthentication('s1', 'secret_reveal', 20_001)).toBe(false)
    expect(await repo.consumeReauthentication('s3', 'secret_reveal', 0)).toBe(false)
    expect(await repo.reauthentication('s1')).toEqual({ purpose: 'secret_reveal', at: 20_000 })
    // Two uses racing: one wins, and it is gone.
    const both = await Promise.all([repo.consumeReauthentication('s1', 'secret_reveal', 20_000), repo.consumeReauthentication('s1', 'secret_reveal', 20_000)])
    expect(both.filter(Boolean).length).toBe(1)
    expect(await repo.reauthentication('s1')).toBeUndefined()
    expect(await repo.consumeReauthentication('s1', 'secret_reveal', 0)).toBe(false)
    // A revoked session's re-authentication cannot be used.
    expect(await repo.markReauthenticated('s1', 'a1', 'secret_reveal', 30_000)).toBe(true)
    expect(await repo.revokeSession('a1', 's1', 31_000)).toBe(true)
    expect(await repo.consumeReauthentication('s1', 'secret_reveal', 0)).toBe(false)
  })

  test("an SSO session's sealed ID token: read back only for its admin's live session, forgotten when it is revoked (one, or all by a password change)", async () => {
    const s = await fresh()
    const repo = s.store.admins
    await repo.insertAdmin(admin('a1', 'one@example.com'), [])
    await repo.insertAdmin(admin('a2', 'two@example.com'), [])
    await repo.insertSession({ ...session('s1', 'a1'), idTokenSealed: 'v1:sealed-one' })
    await repo.insertSession({ ...session('s2', 'a1'), idTokenSealed: 'v1:sealed-two' })
    await repo.insertSession(session('s3', 'a1'))
    expect(await repo.sessionIdToken('a1', 's1')).toBe('v1:sealed-one')
    expect(await repo.sessionIdToken('a2', 's1')).toBeUndefined()
    expect(await repo.sessionIdToken('a1', 's3')).toBeUndefined()
    expect(await repo.sessionIdToken('a1', 'nope')).toBeUndefined()
    expect(await repo.revokeSession('a1', 's1', 2_000)).toBe(true)
    expect(await repo.sessionIdToken('a1', 's1')).toBeUndefined()
    await repo.setPassword('a1', 'new-hash', 3_000)
    expect(await repo.sessionIdToken('a1', 's2')).toBeUndefined()
    const kept = await rows(s.storage, 'SELECT id FROM admin_sessions WHERE id_token_sealed IS NOT NULL')
    expect(kept).toEqual([])
  })

  test('setup tokens: a new one drops unused ones; redeemed once, before expiry, while there is no admin', async () => {
    const s = await fresh()
    const repo = s.store.admins
    await repo.replaceSetupToken('t1', 1_000, 5_000)
    await repo.replaceSetupToken('t2', 1_000, 5_000)
    expect(await repo.redeemSetupToken('t1', 2_000, admin('x1', 'x@example.com'))).toBe(false)
    expect(await repo.redeemSetupToken('t2', 5_000, admin('x1', 'x@example.com'))).toBe(false)
    expect(await repo.count()).toBe(0)
    // Two redemptions of the same token at once: one owner.
    const [a, b] = await Promise.all([repo.redeemSetupToken('t2', 2_000, admin('x1', 'x@example.com')), repo.redeemSetupToken('t2', 2_000, admin('x2', 'y@example.com'))])
    expect([a, b].filter(Boolean).length).toBe(1)
    expect(await repo.count()).toBe(1)
    const owner = (await repo.byId(a ? 'x1' : 'x2'))!
    expect(owner.isOwner).toBe(true)
    // With an admin, a fresh token is refused.
    await repo.replaceSetupToken('t3', 3_000, 9_000)
    expect(await repo.redeemSetupToken('t3', 3_000, admin('x3', 'z@example.com'))).toBe(false)
    const used = await rows<{ n: number }>(s.storage, 'SELECT COUNT(*) AS n FROM admin_setup_tokens WHERE used_at IS NOT NULL')
    expect(Number(used[0].n)).toBe(1)
  })

  test('two live setup tokens (two nodes started at once each made one) redeemed at once: one owner', async () => {
    // Each node's start replaces the unused tokens, but two starts in the same instant each delete what is
    // committed and insert their own: both links live. Redeemed together, each locked its own token and
    // counted no admin yet (on PostgreSQL): two instance owners.
    const s = await fresh()
    const repo = s.store.admins
    let owners = 0
    for (let round = 0; round < 30; round++) {
      await run(s.storage, 'DELETE FROM admins')
      await run(s.storage, 'DELETE FROM admin_setup_tokens')
      await run(s.storage, 'INSERT INTO admin_setup_tokens (token_hash, created_at, expires_at) VALUES (?, ?, ?)', ['ta', 1_000, 9_000])
      await run(s.storage, 'INSERT INTO admin_setup_tokens (token_hash, created_at, expires_at) VALUES (?, ?, ?)', ['tb', 1_000, 9_000])
      const [a, b] = await Promise.all([repo.redeemSetupToken('ta', 2_000, admin(`a${round}`, `a${round}@example.com`)), repo.redeemSetupToken('tb', 2_000, admin(`b${round}`, `b${round}@example.com`))])
      expect([a, b].filter(Boolean).length).toBe(1)
      owners = Math.max(owners, await repo.count())
    }
    expect(owners).toBe(1)
  })

  test('key use is upserted, its creator kept', async () => {
    const s = await fresh()
    const repo = s.store.admins
    await repo.keyUsed('k1', 1_000)
    await repo.keyUsed('k1', 2_000)
    const r = await rows<{ key_id: string; last_used_at: number; created_by: string | null }>(s.storage, 'SELECT key_id, last_used_at, created_by FROM api_key_activity')
    expect(r.map((x) => ({ ...x, last_used_at: Number(x.last_used_at) }))).toEqual([{ key_id: 'k1', last_used_at: 2_000, created_by: null }])
  })
})
