/** SQL of Slack connections, their parent messages and the Slack users allowed to act for an Org. */
import type { Database, Statement } from 'bun:sqlite'
import { LAST_SEQ_SQL } from '../../db/sqlite/outbox'

export interface SlackConnectionRow {
  id: string
  org_id: string
  app_id: string | null
  channel: string
  bot_token_sealed: string
  signing_secret_sealed: string
  event_types: string
  cursor_seq: number
  last_error: string | null
  created_at: number
  deleted_at: number | null
}

export interface SlackThreadRow {
  connection_id: string
  lead_feedback_id: string
  channel: string
  ts: string
  status: string
  duplicate_count: number
  updated_at: number
}

export function createChatopsRepo(sqlite: Database) {
  const q = (sql: string): Statement => sqlite.query(sql)
  const s = {
    insert: q(`INSERT INTO slack_connections (id, org_id, app_id, channel, bot_token_sealed, signing_secret_sealed, event_types, cursor_seq, created_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    get: q('SELECT * FROM slack_connections WHERE org_id = ? AND id = ? AND deleted_at IS NULL'),
    getAny: q('SELECT * FROM slack_connections WHERE id = ? AND deleted_at IS NULL'),
    list: q('SELECT * FROM slack_connections WHERE org_id = ? AND deleted_at IS NULL ORDER BY id'),
    liveForOrg: q('SELECT * FROM slack_connections WHERE org_id = ? AND deleted_at IS NULL'),
    liveOrgs: q('SELECT DISTINCT org_id FROM slack_connections WHERE deleted_at IS NULL'),
    softDelete: q('UPDATE slack_connections SET deleted_at = ? WHERE org_id = ? AND id = ? AND deleted_at IS NULL'),
    advance: q('UPDATE slack_connections SET cursor_seq = ?, last_error = ? WHERE id = ?'),
    setError: q('UPDATE slack_connections SET last_error = ? WHERE id = ?'),
    thread: q('SELECT * FROM slack_threads WHERE connection_id = ? AND lead_feedback_id = ?'),
    saveThread: q(`INSERT INTO slack_threads (connection_id, lead_feedback_id, channel, ts, status, duplicate_count, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (connection_id, lead_feedback_id) DO UPDATE SET status = excluded.status, duplicate_count = excluded.duplicate_count, updated_at = excluded.updated_at`),
    allow: q('INSERT OR IGNORE INTO slack_users (org_id, slack_team_id, slack_user_id, created_at) VALUES (?, ?, ?, ?)'),
    deny: q('DELETE FROM slack_users WHERE org_id = ? AND slack_team_id = ? AND slack_user_id = ?'),
    isAllowed: q('SELECT 1 FROM slack_users WHERE org_id = ? AND slack_team_id = ? AND slack_user_id = ?'),
    users: q('SELECT slack_team_id, slack_user_id, created_at FROM slack_users WHERE org_id = ? ORDER BY slack_team_id, slack_user_id'),
    eventsAfter: q('SELECT * FROM events WHERE org_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
    lastSeq: q(LAST_SEQ_SQL),
    duplicates: q('SELECT COUNT(*) AS n FROM feedback WHERE duplicate_of_id = ?'),
    report: q('SELECT id, app_id, status, duplicate_of_id FROM feedback WHERE org_id = ? AND id = ?'),
    latestPr: q('SELECT pr_url FROM agent_runs WHERE feedback_id = ? AND pr_url IS NOT NULL ORDER BY created_at DESC LIMIT 1'),
    appInOrg: q('SELECT 1 FROM apps WHERE org_id = ? AND id = ? AND deleted_at IS NULL'),
    orgExists: q('SELECT 1 FROM orgs WHERE id = ?'),
  }
  return {
    insert: (r: Omit<SlackConnectionRow, 'last_error' | 'deleted_at'>) =>
      s.insert.run(r.id, r.org_id, r.app_id, r.channel, r.bot_token_sealed, r.signing_secret_sealed, r.event_types, r.cursor_seq, r.created_at),
    get: (orgId: string, id: string) => s.get.get(orgId, id) as SlackConnectionRow | null,
    getAny: (id: string) => s.getAny.get(id) as SlackConnectionRow | null,
    list: (orgId: string) => s.list.all(orgId) as SlackConnectionRow[],
    liveForOrg: (orgId: string) => s.liveForOrg.all(orgId) as SlackConnectionRow[],
    liveOrgs: () => (s.liveOrgs.all() as { org_id: string }[]).map((r) => r.org_id),
    softDelete: (orgId: string, id: string, now: number) => s.softDelete.run(now, orgId, id).changes,
    advance: (id: string, seq: number, error: string | null) => s.advance.run(seq, error, id),
    setError: (id: string, error: string) => s.setError.run(error, id),
    thread: (connectionId: string, leadId: string) => s.thread.get(connectionId, leadId) as SlackThreadRow | null,
    saveThread: (t: SlackThreadRow) => s.saveThread.run(t.connection_id, t.lead_feedback_id, t.channel, t.ts, t.status, t.duplicate_count, t.updated_at),
    allow: (orgId: string, teamId: string, userId: string, now: number) => s.allow.run(orgId, teamId, userId, now).changes,
    deny: (orgId: string, teamId: string, userId: string) => s.deny.run(orgId, teamId, userId).changes,
    isAllowed: (orgId: string, teamId: string, userId: string) => !!s.isAllowed.get(orgId, teamId, userId),
    users: (orgId: string) => s.users.all(orgId) as { slack_team_id: string; slack_user_id: string; created_at: number }[],
    eventsAfter: (orgId: string, after: number, limit: number) =>
      s.eventsAfter.all(orgId, after, limit) as { id: string; seq: number; type: string; app_id: string | null; data: string; created_at: number }[],
    /** The Org's last seq (0 before its first event). */
    lastSeq: (orgId: string) => (s.lastSeq.get(orgId) as { last_seq: number }).last_seq,
    /** How many reports are attached to a lead as duplicates. */
    duplicateCount: (leadId: string) => (s.duplicates.get(leadId) as { n: number }).n,
    /** A report of the Org (tenant-scoped), with what the slash command shows. */
    report: (orgId: string, id: string) =>
      s.report.get(orgId, id) as { id: string; app_id: string; status: string; duplicate_of_id: string | null } | null,
    latestPrUrl: (feedbackId: string) => (s.latestPr.get(feedbackId) as { pr_url: string } | null)?.pr_url ?? null,
    appInOrg: (orgId: string, appId: string) => !!s.appInOrg.get(orgId, appId),
    orgExists: (orgId: string) => !!s.orgExists.get(orgId),
  }
}
export type ChatopsRepo = ReturnType<typeof createChatopsRepo>
