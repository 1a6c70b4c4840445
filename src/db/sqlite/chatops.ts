/** SQLite side of modules/chatops/repo.ts: the statements as they were, each change one IMMEDIATE transaction. */
import type { Statement } from 'bun:sqlite'
import type { Clock } from '../../core/clock'
import type { ChatopsEvent, ChatopsRepo, SlackConnectionRow, SlackThreadRow } from '../../modules/chatops/repo'
import { sqliteAudited } from './audit-writer'
import { LAST_SEQ_SQL } from './outbox'
import { SLACK_PASS_SQL } from '../sql/webhooks'
import { liveCountSql } from '../sql/org-caps'
import type { SqliteStorage } from './storage'

export function createSqliteChatopsRepo({ sqlite }: SqliteStorage, clock: Clock): ChatopsRepo {
  const q = (sql: string): Statement => sqlite.query(sql)
  const s = {
    insert: q(`INSERT INTO slack_connections (id, org_id, app_id, channel, bot_token_sealed, signing_secret_sealed, event_types, cursor_seq, created_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    lastSeq: q(LAST_SEQ_SQL),
    liveCount: q(liveCountSql('slack_connections', '?')),
    get: q('SELECT * FROM slack_connections WHERE org_id = ? AND id = ? AND deleted_at IS NULL'),
    getAny: q('SELECT * FROM slack_connections WHERE id = ? AND deleted_at IS NULL'),
    list: q('SELECT * FROM slack_connections WHERE org_id = ? AND deleted_at IS NULL ORDER BY id'),
    behind: q(SLACK_PASS_SQL.behind),
    behindInOrg: q(SLACK_PASS_SQL.behindInOrg('?1')),
    softDelete: q('UPDATE slack_connections SET deleted_at = ? WHERE org_id = ? AND id = ? AND deleted_at IS NULL'),
    advance: q('UPDATE slack_connections SET cursor_seq = ?1, last_error = ?2 WHERE id = ?3 AND cursor_seq < ?1'),
    setError: q('UPDATE slack_connections SET last_error = ? WHERE id = ?'),
    claimDrain: q(`UPDATE slack_connections SET drain_owner = ?1, drain_until = ?3
                   WHERE id = ?4 AND deleted_at IS NULL AND (drain_owner IS NULL OR drain_owner = ?1 OR drain_until IS NULL OR drain_until <= ?2)`),
    releaseDrain: q('UPDATE slack_connections SET drain_until = ?3 WHERE id = ?1 AND drain_owner = ?2'),
    thread: q('SELECT * FROM slack_threads WHERE connection_id = ? AND lead_feedback_id = ?'),
    saveThread: q(`INSERT INTO slack_threads (connection_id, lead_feedback_id, channel, ts, status, duplicate_count, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (connection_id, lead_feedback_id) DO UPDATE SET status = excluded.status, duplicate_count = excluded.duplicate_count, updated_at = excluded.updated_at`),
    allow: q('INSERT OR IGNORE INTO slack_users (org_id, slack_team_id, slack_user_id, created_at) VALUES (?, ?, ?, ?)'),
    deny: q('DELETE FROM slack_users WHERE org_id = ? AND slack_team_id = ? AND slack_user_id = ?'),
    isAllowed: q('SELECT 1 FROM slack_users WHERE org_id = ? AND slack_team_id = ? AND slack_user_id = ?'),
    users: q('SELECT slack_team_id, slack_user_id, created_at FROM slack_users WHERE org_id = ? ORDER BY slack_team_id, slack_user_id'),
    eventsAfter: q('SELECT * FROM events WHERE org_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
    duplicates: q('SELECT COUNT(*) AS n FROM feedback WHERE duplicate_of_id = ?'),
    report: q('SELECT id, app_id, status, duplicate_of_id FROM feedback WHERE org_id = ? AND id = ?'),
    latestPr: q('SELECT pr_url FROM agent_runs WHERE feedback_id = ? AND pr_url IS NOT NULL ORDER BY created_at DESC LIMIT 1'),
    appInOrg: q('SELECT 1 FROM apps WHERE org_id = ? AND id = ? AND deleted_at IS NULL'),
    orgExists: q('SELECT 1 FROM orgs WHERE id = ?'),
  }
  const audited = sqliteAudited(sqlite, clock)
  return {
    insert: async (r, audit, max = 0) =>
      audited(audit, () => {
        if (max > 0 && (s.liveCount.get(r.org_id) as { n: number }).n >= max) return false
        const cursor = (s.lastSeq.get(r.org_id) as { last_seq: number }).last_seq
        s.insert.run(r.id, r.org_id, r.app_id, r.channel, r.bot_token_sealed, r.signing_secret_sealed, r.event_types, cursor, r.created_at)
        return true
      }),
    get: async (orgId, id) => s.get.get(orgId, id) as SlackConnectionRow | null,
    getAny: async (id) => s.getAny.get(id) as SlackConnectionRow | null,
    list: async (orgId) => s.list.all(orgId) as SlackConnectionRow[],
    behind: async () => s.behind.all() as SlackConnectionRow[],
    behindInOrg: async (orgId) => s.behindInOrg.all(orgId) as SlackConnectionRow[],
    softDelete: async (orgId, id, now, audit) => audited(audit, () => s.softDelete.run(now, orgId, id).changes > 0),
    advance: async (id, seq, error) => void s.advance.run(seq, error, id),
    setError: async (id, error) => void s.setError.run(error, id),
    claimDrain: async (id, owner, now, until) => s.claimDrain.run(owner, now, until, id).changes > 0,
    releaseDrain: async (id, owner, until) => void s.releaseDrain.run(id, owner, until),
    thread: async (connectionId, leadId) => s.thread.get(connectionId, leadId) as SlackThreadRow | null,
    saveThread: async (t) => void s.saveThread.run(t.connection_id, t.lead_feedback_id, t.channel, t.ts, t.status, t.duplicate_count, t.updated_at),
    allow: async (orgId, teamId, userId, now, audit) => audited(audit, () => s.allow.run(orgId, teamId, userId, now).changes > 0),
    deny: async (orgId, teamId, userId, audit) => audited(audit, () => s.deny.run(orgId, teamId, userId).changes > 0),
    isAllowed: async (orgId, teamId, userId) => !!s.isAllowed.get(orgId, teamId, userId),
    users: async (orgId) => s.users.all(orgId) as { slack_team_id: string; slack_user_id: string; created_at: number }[],
    eventsAfter: async (orgId, after, limit) => s.eventsAfter.all(orgId, after, limit) as ChatopsEvent[],
    duplicateCount: async (leadId) => (s.duplicates.get(leadId) as { n: number }).n,
    report: async (orgId, id) => s.report.get(orgId, id) as { id: string; app_id: string; status: string; duplicate_of_id: string | null } | null,
    latestPrUrl: async (feedbackId) => (s.latestPr.get(feedbackId) as { pr_url: string } | null)?.pr_url ?? null,
    appInOrg: async (orgId, appId) => !!s.appInOrg.get(orgId, appId),
    orgExists: async (orgId) => !!s.orgExists.get(orgId),
  }
}
