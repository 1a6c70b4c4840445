/** modules/admin-api/console-repo.ts on both dialects: the same cases, the same answers. */
import { expect, test } from 'bun:test'
import { describeEachDialect, type FreshStore } from '../dialects'
import { ID, run } from './raw'

const O1 = ID(1), O2 = ID(2), A1 = ID(11), A2 = ID(12), A3 = ID(13), K1 = ID(21), K2 = ID(22), K3 = ID(23), ADM = ID(31), F1 = ID(41)

async function seed(s: FreshStore) {
  const t = s.store.tenants
  await t.insertOrg({ id: O1, name: 'Acme', createdAt: 1 }, [])
  await t.insertOrg({ id: O2, name: 'Beta', createdAt: 1 }, [])
  const app = (id: string, orgId: string, slug: string) => ({ id, orgId, slug, name: slug, publicKey: `pub_${id}`, signingSecretEnc: `sealed-${id}`, createdAt: 2, updatedAt: 2 })
  await t.insertApp(app(A1, O1, 'web'), [])
  await t.insertApp(app(A2, O1, 'api'), [])
  await t.insertApp(app(A3, O2, 'web'), [])
  const key = (id: string, orgId: string, name: string) => ({ id, orgId, name, keyHash: `h${id}`, keyPrefix: 'sk_abcd', createdAt: 3 })
  await t.insertKey(key(K1, O1, 'ci'), `admin:${ADM}`, [])
  await t.insertKey(key(K2, O1, ''), null, [])
  await t.insertKey(key(K3, O2, 'other'), null, [])
  await s.store.admins.insertAdmin({ id: ADM, email: 'a@example.com', passwordHash: 'h', isOwner: true, totpSecretEnc: null, totpLastStep: null, createdAt: 1, updatedAt: 1 }, [])
  await run(s.storage, "INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, created_at, updated_at) VALUES (?, ?, ?, 'received', 'hi', 'public', 1, 1)", [F1, O1, A1])
}

describeEachDialect('console repo', (fresh) => {
  test('existence checks are scoped by Org: another Org\'s ids find nothing; a deleted App is gone', async () => {
    const s = await fresh()
    await seed(s)
    const repo = s.store.console
    expect(await repo.orgExists(O1)).toBe(true)
    expect(await repo.orgExists(ID(99))).toBe(false)
    expect(await repo.appInOrg(O1, A1)).toBe(true)
    expect(await repo.appInOrg(O2, A1)).toBe(false)
    expect(await repo.keyInOrg(O1, K1)).toBe(true)
    expect(await repo.keyInOrg(O2, K1)).toBe(false)
    expect(await repo.feedbackInOrg(O1, F1)).toBe(true)
    expect(await repo.feedbackInOrg(O2, F1)).toBe(false)
    expect(await repo.sealedSecret(O1, A1)).toBe(`sealed-${A1}`)
    expect(await repo.sealedSecret(O2, A1)).toBeUndefined()
    await s.store.tenants.updateApp(O1, A2, { deletedAt: 9, updatedAt: 9 }, [])
    expect(await repo.appInOrg(O1, A2)).toBe(false)
  })

  test('key activity, admin emails and audit names', async () => {
    const s = await fresh()
    await seed(s)
    const repo = s.store.console
    await s.store.admins.keyUsed(K2, 5_000)
    const activity = await repo.keyActivity(O1)
    expect([...activity.keys()].sort()).toEqual([K1, K2])
    expect(activity.get(K1)).toEqual({ id: K1, createdBy: `admin:${ADM}`, lastUsedAt: null })
    expect(activity.get(K2)).toEqual({ id: K2, createdBy: null, lastUsedAt: 5_000 })
    expect(await repo.adminEmails()).toEqual(new Map([[`admin:${ADM}`, 'a@example.com']]))
    await s.store.tenants.updateApp(O1, A2, { deletedAt: 9, updatedAt: 9 }, [])
    const names = await repo.auditNames(O1, [ADM, A1, A2, A3, K1, K2, K3, O1, O2, 'not-an-id', ADM])
    expect(Object.fromEntries(names)).toEqual({
      [ADM]: 'a@example.com',
      [A1]: 'App “web”',
      [A2]: 'App “api”',
      [K1]: 'API key “ci”',
      [K2]: 'API key sk_abcd…',
      [O1]: 'Org “Acme”',
    })
    expect((await repo.auditNames(O1, [])).size).toBe(0)
  })

  test('agent cost per live App since a time, ordered by App id, numbers as numbers', async () => {
    const s = await fresh()
    await seed(s)
    const runRow = (id: string, appId: string, createdAt: number, tokensIn: number, cost: number) =>
      run(s.storage, "INSERT INTO agent_runs (id, org_id, app_id, feedback_id, provider, status, branch, timings, created_at, tokens_in, tokens_out, cost_usd) VALUES (?, ?, ?, ?, 'claude', 'succeeded', 'b', '{}', ?, ?, 7, ?)", [
        id, O1, appId, F1, createdAt, tokensIn, cost,
      ])
    await runRow(ID(51), A1, 1_000, 100, 0.25)
    await runRow(ID(52), A1, 2_000, 50, 0.5)
    await runRow(ID(53), A1, 10, 999, 9)
    const costs = await s.store.console.costsSince(O1, 500)
    expect(costs).toEqual([
      { appId: A1, runs: 2, tokensIn: 150, tokensOut: 14, costUsd: 0.75 },
      { appId: A2, runs: 0, tokensIn: 0, tokensOut: 0, costUsd: 0 },
    ])
    expect(await s.store.console.costsSince(ID(99), 0)).toEqual([])
  })
})
