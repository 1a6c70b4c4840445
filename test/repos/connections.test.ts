/** modules/connections/repo.ts and modules/apps/repo.ts on both dialects. */
import { expect, test } from 'bun:test'
import { describeEachDialect, type FreshStore } from '../dialects'
import { type ConnectionRow } from '../../src/modules/connections/repo'
import { insertReport, seedOrgApp, sql } from './store-fixtures'

const conn = (appId: string, at: number, gitUrl = 'https://git.example/acme/shop.git'): ConnectionRow => ({
  appId, gitUrl, baseBranch: 'main', hostKind: 'github', hostApiUrl: 'https://api.github.com', hostRepo: null, hostTokenEnc: 'sealed', webhookSecretEnc: 'sealed-hook',
  agentProvider: 'command', agentCommand: 'true', model: null, timeoutSeconds: 900, prMode: 'ready', verifyCommand: null, maxFiles: 20,
  maxLines: 1000, denyPaths: '[]', runsPerDay: 20, maxCostUsdPerMonth: 12.5, createdAt: at, updatedAt: at,
})
const audit = (action: string) => [{ orgId: 'o1', actor: 'cli', action, targetId: 'a1', data: {} }]
const auditActions = async (s: FreshStore) => (await sql<{ action: string }>(s, 'SELECT action FROM audit_log ORDER BY created_at, id')).map((r) => r.action)

describeEachDialect('connections repo', (fresh) => {
  test('connect creates, then replaces keeping the creation time; typed values; count and get', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.connections
    expect(await repo.count()).toBe(0)
    expect(await repo.get('a1')).toBeUndefined()
    expect(await repo.connect(conn('a1', 1_000), [])).toEqual(conn('a1', 1_000))
    const replaced = await repo.connect({ ...conn('a1', 2_000, 'https://git.example/acme/other.git'), maxCostUsdPerMonth: 7.25 }, [])
    expect(replaced).toMatchObject({ gitUrl: 'https://git.example/acme/other.git', createdAt: 1_000, updatedAt: 2_000, maxCostUsdPerMonth: 7.25, timeoutSeconds: 900 })
    expect(await repo.get('a1')).toEqual(replaced)
    expect(await repo.count()).toBe(1)
  })

  test('connect queues the runs of reports waiting for a repository, with its audit row, in one transaction', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'q1', 'queued')
    await insertReport(s, 'q2', 'queued')
    await insertReport(s, 'm1', 'awaiting_manual')
    const repo = s.store.connections
    // The audit row cannot be written: nothing of the change stays.
    await sql(s, 'ALTER TABLE audit_log RENAME TO audit_away')
    await expect(repo.connect(conn('a1', 1_000), audit('app.repo_connected'))).rejects.toThrow()
    await sql(s, 'ALTER TABLE audit_away RENAME TO audit_log')
    expect(await repo.get('a1')).toBeUndefined()
    expect(await sql(s, 'SELECT id FROM jobs')).toEqual([])
    await repo.connect(conn('a1', 1_000), audit('app.repo_connected'))
    expect((await sql<{ feedback_id: string }>(s, "SELECT feedback_id FROM jobs WHERE kind = 'agent' ORDER BY feedback_id")).map((j) => j.feedback_id)).toEqual(['q1', 'q2'])
    expect(await auditActions(s)).toEqual(['app.repo_connected'])
    // Connecting again queues nothing twice.
    await repo.connect(conn('a1', 2_000), [])
    expect(await sql(s, 'SELECT id FROM jobs')).toHaveLength(2)
  })

  test('remove: true once with its audit row; false (nothing recorded) without a connection', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.connections
    await repo.connect(conn('a1', 1_000), [])
    expect(await repo.remove('a1', audit('app.repo_disconnected'))).toBe(true)
    expect(await repo.remove('a1', audit('app.repo_disconnected'))).toBe(false)
    expect(await repo.get('a1')).toBeUndefined()
    expect(await repo.count()).toBe(0)
    expect(await auditActions(s)).toEqual(['app.repo_disconnected'])
  })

  test('setWebhookSecret: replaces the sealed secret with its audit row; false (nothing recorded) without a connection', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.connections
    expect(await repo.setWebhookSecret('a1', 'sealed-2', audit('app.webhook_secret_rotated'))).toBe(false)
    expect(await auditActions(s)).toEqual([])
    await repo.connect(conn('a1', 1_000), [])
    expect(await repo.setWebhookSecret('a1', 'sealed-2', audit('app.webhook_secret_rotated'))).toBe(true)
    expect((await repo.get('a1'))?.webhookSecretEnc).toBe('sealed-2')
    expect(await auditActions(s)).toEqual(['app.webhook_secret_rotated'])
  })

  test('appInOrg: live Apps of the Org only', async () => {
    const s = await fresh()
    await seedOrgApp(s, 'o1', 'a1')
    await seedOrgApp(s, 'o2', 'b1')
    const repo = s.store.connections
    expect(await repo.appInOrg('o1', 'a1')).toBe(true)
    expect(await repo.appInOrg('o2', 'a1')).toBe(false)
    expect(await repo.appInOrg('o1', 'nope')).toBe(false)
    await s.store.tenants.updateApp('o1', 'a1', { deletedAt: 5, updatedAt: 5 }, [])
    expect(await repo.appInOrg('o1', 'a1')).toBe(false)
  })
})

describeEachDialect('apps repo', (fresh) => {
  test('the Org\'s live Apps by id; another Org\'s id finds nothing; a deleted App was still in its Org', async () => {
    const s = await fresh()
    await seedOrgApp(s, 'o1', 'a2')
    await seedOrgApp(s, 'o1', 'a1')
    await seedOrgApp(s, 'o2', 'b1')
    const repo = s.store.apps
    expect((await repo.listForOrg('o1')).map((a) => a.id)).toEqual(['a1', 'a2'])
    const a1 = await repo.getForOrg('o1', 'a1')
    expect(a1).toMatchObject({ id: 'a1', orgId: 'o1', publicSubmissionEnabled: true, batchEnabled: false, deletedAt: null, createdAt: 1 })
    expect(typeof a1!.publicSubmissionEnabled).toBe('boolean')
    expect(await repo.getForOrg('o2', 'a1')).toBeUndefined()
    expect(await repo.everInOrg('o2', 'a1')).toBe(false)
    await s.store.tenants.updateApp('o1', 'a2', { deletedAt: 5, updatedAt: 5 }, [])
    expect((await repo.listForOrg('o1')).map((a) => a.id)).toEqual(['a1'])
    expect(await repo.getForOrg('o1', 'a2')).toBeUndefined()
    expect(await repo.everInOrg('o1', 'a2')).toBe(true)
    expect(await repo.listForOrg('o3')).toEqual([])
  })
})
