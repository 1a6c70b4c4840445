/**
 * The per-Org caps on webhook endpoints and Slack connections, held in the insert's transaction
 * (src/db/sql/org-caps.ts), on both dialects: twelve creates racing at a cap of 3 leave exactly 3 rows and
 * 3 audit entries; a deleted one frees its place; another Org is not counted.
 */
import { expect, test } from 'bun:test'
import { describeEachDialect } from '../dialects'
import type { AuditEntry } from '../../src/modules/audit/entry'
import { seedOrgApp, sql } from './store-fixtures'

const by = (orgId: string, action: string, targetId: string): AuditEntry => ({ orgId, actor: 'cli', action, targetId, data: {} })
const count = async (s: Parameters<typeof sql>[0], text: string, params: unknown[]) => Number((await sql<{ n: number | string }>(s, text, params))[0].n)

describeEachDialect('per-Org caps', (fresh) => {
  test('webhook endpoints: racing creates stop at the cap; a deleted endpoint frees its place; Orgs apart', async () => {
    const s = await fresh()
    await seedOrgApp(s, 'o1', 'a1')
    await seedOrgApp(s, 'o2', 'a2')
    const repo = s.store.webhooks
    const hook = (id: string, orgId = 'o1') => repo.insert({ id, orgId, appId: null, url: 'https://example.com/hook', eventTypes: '[]', secretSealed: 'sealed', createdAt: s.clock.now() }, [by(orgId, 'webhook.created', id)], 3)
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => hook(`w${String(i).padStart(2, '0')}`)))
    expect(results.filter(Boolean).length).toBe(3)
    expect(await count(s, "SELECT COUNT(*) AS n FROM webhooks WHERE org_id = 'o1'", [])).toBe(3)
    expect(await count(s, "SELECT COUNT(*) AS n FROM audit_log WHERE action = 'webhook.created' AND org_id = 'o1'", [])).toBe(3)
    expect(await hook('x1', 'o2')).toBe(true)
    const kept = (await repo.list('o1')).map((w) => w.id)
    expect(await repo.delete('o1', kept[0], s.clock.now(), [by('o1', 'webhook.deleted', kept[0])])).toBe(true)
    expect(await hook('w99')).toBe(true)
    expect(await hook('w98')).toBe(false)
    // Without a cap (0, the setting's "no limit"), nothing is counted.
    expect(await repo.insert({ id: 'w97', orgId: 'o1', appId: null, url: 'https://example.com/hook', eventTypes: '[]', secretSealed: 'sealed', createdAt: s.clock.now() }, [], 0)).toBe(true)
  })

  test('Slack connections: racing connects stop at the cap', async () => {
    const s = await fresh()
    await seedOrgApp(s, 'o1', 'a1')
    const repo = s.store.chatops
    const connect = (id: string) =>
      repo.insert(
        { id, org_id: 'o1', app_id: null, channel: 'C0TRIAGE', bot_token_sealed: 'tok', signing_secret_sealed: 'sec', event_types: '[]', created_at: s.clock.now() },
        [by('o1', 'slack.connected', id)],
        3,
      )
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => connect(`c${String(i).padStart(2, '0')}`)))
    expect(results.filter(Boolean).length).toBe(3)
    expect(await count(s, "SELECT COUNT(*) AS n FROM slack_connections WHERE org_id = 'o1'", [])).toBe(3)
    expect(await count(s, "SELECT COUNT(*) AS n FROM audit_log WHERE action = 'slack.connected'", [])).toBe(3)
  })
})
