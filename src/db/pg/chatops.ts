/** PostgreSQL side of modules/chatops/repo.ts. */
import type { Clock } from '../../core/clock'
import type { ChatopsEvent, ChatopsRepo, SlackConnectionRow, SlackThreadRow } from '../../modules/chatops/repo'
import { pgAudited } from './audit-writer'
import { PG_LAST_SEQ_SQL } from './outbox'
import { exec, many, one, type PgStorage } from './storage'
import { nowOr } from './db-clock'
import { SLACK_PASS_SQL } from '../sql/webhooks'
import { underCap } from './org-caps'

const BEHIND_IN_ORG = SLACK_PASS_SQL.behindInOrg('$1')

export function createPgChatopsRepo(storage: PgStorage, clock: Clock): ChatopsRepo {
  const { pool } = storage
  const audited = pgAudited(storage, clock)
  return {
    insert: (r, audit, max = 0) =>
      audited(audit, async (c) => {
        if (max > 0 && !(await underCap(c, 'slack_connections', r.org_id, max))) return false
        const cursor = (await one<{ last_seq: number }>(c, PG_LAST_SEQ_SQL, [r.org_id]))!.last_seq
        await exec(
          c,
          `INSERT INTO slack_connections (id, org_id, app_id, channel, bot_token_sealed, signing_secret_sealed, event_types, cursor_seq, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
          [r.id, r.org_id, r.app_id, r.channel, r.bot_token_sealed, r.signing_secret_sealed, r.event_types, cursor, r.created_at],
        )
        return true
      }),
    get: async (orgId, id) => (await one<SlackConnectionRow>(pool, 'SELECT * FROM slack_connections WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL', [orgId, id])) ?? null,
    getAny: async (id) => (await one<SlackConnectionRow>(pool, 'SELECT * FROM slack_connections WHERE id = $1 AND deleted_at IS NULL', [id])) ?? null,
    list: (orgId) => many<SlackConnectionRow>(pool, 'SELECT * FROM slack_connections WHERE org_id = $1 AND deleted_at IS NULL ORDER BY id', [orgId]),
    behind: () => many<SlackConnectionRow>(pool, SLACK_PASS_SQL.behind),
    behindInOrg: (orgId) => many<SlackConnectionRow>(pool, BEHIND_IN_ORG, [orgId]),
    softDelete: (orgId, id, now, audit) =>
      audited(audit, async (c) => (await exec(c, 'UPDATE slack_connections SET deleted_at = $1 WHERE org_id = $2 AND id = $3 AND deleted_at IS NULL', [now, orgId, id])) > 0),
    advance: async (id, seq, error) => void (await exec(pool, 'UPDATE slack_connections SET cursor_seq = $1, last_error = $2 WHERE id = $3 AND cursor_seq < $1', [seq, error, id])),
    setError: async (id, error) => void (await exec(pool, 'UPDATE slack_connections SET last_error = $1 WHERE id = $2', [error, id])),
    // The claim's expiry and length on the database's clock ($2 NULL), not the claiming node's (db-clock.ts).
    claimDrain: async (id, owner, now, until) =>
      (await exec(
        pool,
        `WITH clock AS (SELECT ${nowOr('$2')} AS now)
         UPDATE slack_connections SET drain_owner = $1, drain_until = (SELECT now FROM clock) + $3::bigint
          WHERE id = $4 AND deleted_at IS NULL AND (drain_owner IS NULL OR drain_owner = $1 OR drain_until IS NULL OR drain_until <= (SELECT now FROM clock))`,
        [owner, storage.callerClock ? now : null, until - now, id],
      )) > 0,
    releaseDrain: async (id, owner, until) => void (await exec(pool, 'UPDATE slack_connections SET drain_until = $3 WHERE id = $1 AND drain_owner = $2', [id, owner, until])),
    thread: async (connectionId, leadId) =>
      (await one<SlackThreadRow>(pool, 'SELECT * FROM slack_threads WHERE connection_id = $1 AND lead_feedback_id = $2', [connectionId, leadId])) ?? null,
    saveThread: async (t) =>
      void (await exec(
        pool,
        `INSERT INTO slack_threads (connection_id, lead_feedback_id, channel, ts, status, duplicate_count, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (connection_id, lead_feedback_id) DO UPDATE SET status = excluded.status, duplicate_count = excluded.duplicate_count, updated_at = excluded.updated_at`,
        [t.connection_id, t.lead_feedback_id, t.channel, t.ts, t.status, t.duplicate_count, t.updated_at],
      )),
    allow: (orgId, teamId, userId, now, audit) =>
      audited(
        audit,
        async (c) =>
          (await exec(c, 'INSERT INTO slack_users (org_id, slack_team_id, slack_user_id, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING', [orgId, teamId, userId, now])) > 0,
      ),
    deny: (orgId, teamId, userId, audit) =>
      audited(audit, async (c) => (await exec(c, 'DELETE FROM slack_users WHERE org_id = $1 AND slack_team_id = $2 AND slack_user_id = $3', [orgId, teamId, userId])) > 0),
    isAllowed: async (orgId, teamId, userId) => !!(await one(pool, 'SELECT 1 FROM slack_users WHERE org_id = $1 AND slack_team_id = $2 AND slack_user_id = $3', [orgId, teamId, userId])),
    users: (orgId) =>
      many<{ slack_team_id: string; slack_user_id: string; created_at: number }>(
        pool,
        'SELECT slack_team_id, slack_user_id, created_at FROM slack_users WHERE org_id = $1 ORDER BY slack_team_id, slack_user_id',
        [orgId],
      ),
    eventsAfter: (orgId, after, limit) =>
      many<ChatopsEvent>(pool, 'SELECT id, seq, type, app_id, data, created_at FROM events WHERE org_id = $1 AND seq > $2 ORDER BY seq LIMIT $3', [orgId, after, limit]),
    duplicateCount: async (leadId) => (await one<{ n: number }>(pool, 'SELECT COUNT(*)::int AS n FROM feedback WHERE duplicate_of_id = $1', [leadId]))!.n,
    report: async (orgId, id) =>
      (await one<{ id: string; app_id: string; status: string; duplicate_of_id: string | null }>(pool, 'SELECT id, app_id, status, duplicate_of_id FROM feedback WHERE org_id = $1 AND id = $2', [orgId, id])) ?? null,
    latestPrUrl: async (feedbackId) =>
      (await one<{ pr_url: string }>(pool, 'SELECT pr_url FROM agent_runs WHERE feedback_id = $1 AND pr_url IS NOT NULL ORDER BY created_at DESC, id DESC LIMIT 1', [feedbackId]))?.pr_url ?? null,
    appInOrg: async (orgId, appId) => !!(await one(pool, 'SELECT 1 FROM apps WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL', [orgId, appId])),
    orgExists: async (orgId) => !!(await one(pool, 'SELECT 1 FROM orgs WHERE id = $1', [orgId])),
  }
}
