/**
 * The issue-tracker statements both dialects run (src/db/sqlite/trackers.ts as written, src/db/pg/trackers.ts
 * with numbered placeholders): one text, so the two cannot drift. The rules they apply are the port's
 * (src/modules/trackers/repo.ts).
 */

/** Whether a link follows its App's connection, in SQL (`c` the connection, `t` the link): the port's `linkFollows`. */
export const LINK_FOLLOWS = 'c.kind = t.kind AND LOWER(c.project) = LOWER(t.project)'

/** How many failing connections /readyz lists with their errors (its count and the metric count them all). */
export const FAILING_LISTED = 100

/**
 * The statements both sides run, written with `?` placeholders (the PostgreSQL side numbers them).
 * 
 */
export const TRACKER_SQL = {
  // A deleted App's connection is gone for every use (webhook 401, no push, no poll) while its row stays.
  connection: 'SELECT c.* FROM tracker_connections c JOIN apps a ON a.id = c.app_id AND a.deleted_at IS NULL WHERE c.app_id = ?',
  insertConnection: `INSERT INTO tracker_connections (app_id, org_id, kind, api_url, project, account, token_sealed, webhook_secret_sealed, actor, state_map, rules, event_cursor, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, COALESCE((SELECT MAX(seq) FROM events WHERE org_id = ?), 0), ?, ?)
    ON CONFLICT (app_id) DO UPDATE SET kind = excluded.kind, api_url = excluded.api_url, project = excluded.project, account = excluded.account,
      token_sealed = excluded.token_sealed, webhook_secret_sealed = excluded.webhook_secret_sealed, actor = excluded.actor, state_map = excluded.state_map,
      rules = excluded.rules, last_error = NULL, last_error_at = NULL, retry_at = NULL, updated_at = excluded.updated_at`,
  removeConnection: 'DELETE FROM tracker_connections WHERE app_id = ?',
  setSecret: 'UPDATE tracker_connections SET webhook_secret_sealed = ?, updated_at = ? WHERE app_id = ?',
  setHealth: 'UPDATE tracker_connections SET last_error = ?, last_error_at = ?, retry_at = ? WHERE app_id = ?',
  // Links of the connection's project only: a frozen link (another project) waits for nothing.
  pendingCount: `SELECT COUNT(*) AS n FROM tracker_issues t JOIN tracker_connections c ON c.app_id = t.app_id AND ${LINK_FOLLOWS} WHERE t.app_id = ? AND t.sync_state IN ('pending', 'failing')`,
  failing: `SELECT app_id, org_id, kind, last_error, last_error_at, retry_at FROM tracker_connections WHERE last_error IS NOT NULL ORDER BY app_id LIMIT ${FAILING_LISTED}`,
  // Counted apart from the list: the list stops at FAILING_LISTED, the metric and /readyz's count must not.
  failingByKind: 'SELECT kind, COUNT(*) AS n FROM tracker_connections WHERE last_error IS NOT NULL GROUP BY kind ORDER BY kind',
  connectedOrgs: 'SELECT DISTINCT org_id FROM tracker_connections ORDER BY org_id',
  connectionsOf: 'SELECT c.* FROM tracker_connections c JOIN apps a ON a.id = c.app_id AND a.deleted_at IS NULL WHERE c.org_id = ? ORDER BY c.app_id',
  eventsAfter: 'SELECT seq, type, data FROM events WHERE org_id = ? AND seq > ? AND app_id = ? ORDER BY seq LIMIT ?',
  lead: `SELECT id, org_id, app_id, status, severity, theme, text, consolidated_text, attachments, duplicate_of_id, duplicate_count, redactions FROM feedback WHERE id = ?`,
  issue: 'SELECT * FROM tracker_issues WHERE feedback_id = ?',
  issueByTrackerId: 'SELECT * FROM tracker_issues WHERE app_id = ? AND kind = ? AND LOWER(project) = LOWER(?) AND issue_id = ?',
  insertLink: `INSERT INTO tracker_issues (feedback_id, org_id, app_id, kind, project, sync_state, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT (feedback_id) DO NOTHING`,
  /** Whether the link follows its App's connection (LINK_FOLLOWS). */
  follows: `SELECT EXISTS (SELECT 1 FROM tracker_issues t JOIN tracker_connections c ON c.app_id = t.app_id WHERE t.feedback_id = ? AND ${LINK_FOLLOWS}) AS live`,
  /** Whether a push job of the lead waits (not yet taken by a worker, or its lease ran out: it runs again). */
  pushWaiting: "SELECT EXISTS (SELECT 1 FROM jobs WHERE feedback_id = ? AND kind = 'tracker_push' AND (lease_until IS NULL OR lease_until < ?)) AS waiting",
  /** Whether a push job of the lead runs now. */
  pushRunning: "SELECT EXISTS (SELECT 1 FROM jobs WHERE feedback_id = ? AND kind = 'tracker_push' AND lease_until >= ?) AS running",
  markPending: "UPDATE tracker_issues SET sync_state = CASE WHEN sync_state = 'synced' THEN 'pending' ELSE sync_state END, updated_at = ? WHERE feedback_id = ?",
  moveCursor: 'UPDATE tracker_connections SET event_cursor = ? WHERE app_id = ? AND event_cursor = ?',
  remember: 'INSERT INTO git_host_deliveries (app_id, delivery_id, received_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
  forget: 'DELETE FROM git_host_deliveries WHERE app_id = ? AND received_at < ?',
  setState: 'UPDATE tracker_issues SET state_name = ?, state_category = ?, updated_at = ? WHERE feedback_id = ?',
  markDeleted: "UPDATE tracker_issues SET sync_state = 'deleted', last_error = NULL, retry_at = NULL, updated_at = ? WHERE feedback_id = ?",
  leadState: 'SELECT status, duplicate_of_id, org_id, app_id, merge_request_url, submitted_mode, external_user_id FROM feedback WHERE id = ?',
  duplicates: 'SELECT id, status, submitted_mode, external_user_id FROM feedback WHERE duplicate_of_id = ? ORDER BY id',
  openIssues: `SELECT t.*, 1 + f.duplicate_count AS cluster_size FROM tracker_issues t JOIN tracker_connections c ON c.app_id = t.app_id AND ${LINK_FOLLOWS}
    JOIN apps a ON a.id = t.app_id AND a.deleted_at IS NULL JOIN feedback f ON f.id = t.feedback_id
    WHERE t.feedback_id > ? AND t.issue_id IS NOT NULL AND t.sync_state <> 'deleted' ORDER BY t.feedback_id LIMIT ?`,
} as const

/** The columns `saveIssue` may write, in a fixed order. */
export const PATCH_COLUMNS = ['issue_id', 'issue_key', 'issue_url', 'state_name', 'state_category', 'pushed_size', 'commented_at', 'sync_state', 'last_error', 'attempts', 'retry_at', 'synced_at'] as const

