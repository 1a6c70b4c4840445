/**
 * What issue-tracker sync stores (docs/trackers.md): each App's tracker connection (token and webhook
 * secret sealed, push rules, health, the cursor the push rules read the Org's events from) and one
 * tracker issue link per lead (the issue, what was last pushed, the sync state). The port: a SQLite side
 * (src/db/sqlite/trackers.ts) and a PostgreSQL side (src/db/pg/trackers.ts), held to
 * test/repos/trackers.test.ts. Status moves a tracker's news makes go through the lifecycle in the
 * news's own transaction; no tracker call ever runs inside one.
 */
import { TRACKER_RESOLVES_FROM, canFollowLead, type FeedbackStatus } from '../../core/fsm'
import type { AuditEntry } from '../audit/entry'
import { keyList, type DeliveryKeys } from '../git-hooks/repo'

export interface TrackerConnectionRow {
  app_id: string
  org_id: string
  kind: string
  api_url: string
  project: string
  account: string | null
  token_sealed: string
  webhook_secret_sealed: string
  actor: string | null
  state_map: string
  rules: string
  event_cursor: number
  last_error: string | null
  last_error_at: number | null
  retry_at: number | null
  created_at: number
  updated_at: number
}

/** What a connect writes (the cursor, the health and the creation time are the repository's). */
export type ConnectionWrite = Omit<TrackerConnectionRow, 'event_cursor' | 'last_error' | 'last_error_at' | 'retry_at'>

export type SyncState = 'pending' | 'synced' | 'failing' | 'deleted'

export interface TrackerIssueRow {
  feedback_id: string
  org_id: string
  app_id: string
  kind: string
  /** The connection's project when the link was made: the link is synced only while it is still the connection's (linkFollows). */
  project: string
  issue_id: string | null
  issue_key: string | null
  issue_url: string | null
  state_name: string | null
  state_category: string | null
  pushed_size: number
  commented_at: number | null
  sync_state: SyncState
  last_error: string | null
  attempts: number
  retry_at: number | null
  synced_at: number | null
  created_at: number
  updated_at: number
}

/** The lead's columns a push reads: sanitized text only (`text` is overwritten by sanitizing). */
export interface LeadForTracker {
  id: string
  org_id: string
  app_id: string
  status: FeedbackStatus
  severity: string | null
  theme: string | null
  text: string
  consolidated_text: string | null
  attachments: string | null
  duplicate_of_id: string | null
  duplicate_count: number
  /** Null until the report was sanitized (src/sanitize/servable.ts): nothing is pushed before. */
  redactions: string | null
}

/** A lead to link (a pending tracker issue row). */
export interface LinkInit {
  feedbackId: string
  orgId: string
  kind: string
  /** The connection's project (the link keeps it). */
  project: string
}

/** After a push call: the fields that changed. */
export type IssuePatch = Partial<Pick<TrackerIssueRow, 'issue_id' | 'issue_key' | 'issue_url' | 'state_name' | 'state_category' | 'pushed_size' | 'commented_at' | 'sync_state' | 'last_error' | 'attempts' | 'retry_at' | 'synced_at'>>

/** What the tracker's news does to the lead (after the state mapping and the echo check). */
export type NewsAction = 'resolved' | 'reopen' | 'ignore'

export interface NewsApply {
  /** The delivery's keys, its id and its body's hash (webhook: git-hooks/repo.ts deliveryKeys), or null (polling: nothing to replay). */
  deliveryId: DeliveryKeys | null
  feedbackId: string
  state: { name: string; category: string }
  deleted: boolean
  action: NewsAction
}

export type NewsResult = { outcome: 'replayed' } | { outcome: 'unchanged' } | { outcome: 'deleted' } | { outcome: 'moved'; moved: string[] }

/** The replay table is the git hooks' (git_host_deliveries): tracker delivery keys are kept apart by this prefix. */
export const trackerDeliveryKeys = (keys: DeliveryKeys): string[] => keyList(keys).map((k) => `tracker:${k}`)

/**
 * Is the link one of the connection's issues? Issue numbers (GitHub, Gitea, GitLab iid) are per project:
 * after the App's tracker moved to another project (or kind), an old link's number names an unrelated
 * issue there. Such a link is frozen: never pushed, commented, polled, nor matched by a delivery; it keeps
 * showing the issue in its own project (docs/trackers.md "Changing the project"). Project names compare
 * case-insensitively (owner/repo, group/project paths and Jira keys do on their trackers).
 * LINK_FOLLOWS is the same rule in SQL (`c` the connection, `t` the link).
 */
export const linkFollows = (conn: Pick<TrackerConnectionRow, 'kind' | 'project'>, link: Pick<TrackerIssueRow, 'kind' | 'project'>): boolean =>
  conn.kind === link.kind && conn.project.toLowerCase() === link.project.toLowerCase()

/**
 * A push of an issue that exists waits this long after the change that asked for it, so a burst of
 * changes (40 duplicates attached one by one) makes one update of the issue, not one each: a change
 * that comes while that push waits finds it queued and adds nothing; the push reads the lead when it
 * runs, so the issue says the last state. A new issue is created at once.
 */
export const PUSH_DEBOUNCE_MS = 5_000

/**
 * What queuePushes does for one lead whose link may be pushed (pure: both sides ask here): a push job
 * now (a new issue), one after PUSH_DEBOUNCE_MS (an issue that exists), or none (one waits already; or
 * one runs and the issue does not exist yet: that push creates it and re-reads the lead after).
 */
export function pushPlan(link: { issue_id: string | null }, jobs: { waiting: boolean; running: boolean }, now: number): { runAfter: number } | null {
  if (jobs.waiting) return null
  if (link.issue_id === null) return jobs.running ? null : { runAfter: now }
  return { runAfter: now + PUSH_DEBOUNCE_MS }
}

export interface TrackersRepo {
  connection(appId: string): Promise<TrackerConnectionRow | undefined>
  /** Creates or replaces the App's connection; a new one reads the Org's events from its newest seq on (history is not pushed). */
  putConnection(row: ConnectionWrite, audit: AuditEntry[]): Promise<void>
  removeConnection(appId: string, audit: AuditEntry[]): Promise<boolean>
  setWebhookSecret(appId: string, sealed: string, now: number, audit: AuditEntry[]): Promise<boolean>
  setHealth(appId: string, health: { error: string | null; at: number | null; retryAt: number | null }): Promise<void>
  /** Links of the App still to be pushed (pending or failing; of the connection's kind and project). */
  pendingCount(appId: string): Promise<number>
  /** Connections whose last call failed, the first FAILING_LISTED by App (readiness details). */
  failing(): Promise<Pick<TrackerConnectionRow, 'app_id' | 'org_id' | 'kind' | 'last_error' | 'last_error_at' | 'retry_at'>[]>
  /** How many connections' last call failed, by tracker kind (all of them: the metric, /readyz's count). */
  failingByKind(): Promise<{ kind: string; n: number }[]>
  /** Orgs with at least one tracker connection (the push rules read their events). */
  connectedOrgs(): Promise<string[]>
  connectionsOf(orgId: string): Promise<TrackerConnectionRow[]>
  /** The App's events after `seq` (the Org's seq), oldest first. */
  eventsAfter(orgId: string, appId: string, seq: number, limit: number): Promise<{ seq: number; type: string; data: string }[]>
  lead(feedbackId: string): Promise<LeadForTracker | undefined>
  /** Severity and lead-ness of reports (the awaiting_manual rule). */
  reportsOf(ids: string[]): Promise<{ id: string; severity: string | null; duplicate_of_id: string | null }[]>
  issue(feedbackId: string): Promise<TrackerIssueRow | undefined>
  issuesOf(feedbackIds: string[]): Promise<TrackerIssueRow[]>
  /** The link of the connection's issue `issueId` (its kind and project: linkFollows). */
  issueByTrackerId(conn: Pick<TrackerConnectionRow, 'app_id' | 'kind' | 'project'>, issueId: string): Promise<TrackerIssueRow | undefined>
  /**
   * One transaction: a pending link for each `create` lead that has none, a push job for each such lead
   * and each `refresh` lead whose link is live (not deleted, of the connection's kind and project) and has
   * no push job waiting yet (one that runs already does not count: it may have read the lead before this
   * change), the push of an issue that exists delayed by PUSH_DEBOUNCE_MS; and the App's event cursor
   * moved `cursor.from` → `cursor.to` (false, and nothing written, when another node moved it first).
   */
  queuePushes(appId: string, p: { create: LinkInit[]; refresh: string[]; cursor?: { from: number; to: number } }): Promise<boolean>
  saveIssue(feedbackId: string, patch: IssuePatch, now: number): Promise<void>
  /**
   * One delivery (or one polled state) in one transaction: the delivery id remembered (`replayed` when
   * seen), the link's state recorded (`unchanged` when it equals the recorded one), the lead moved
   * (resolved: from TRACKER_RESOLVES_FROM, with `feedback.resolved` for it and each duplicate that
   * follows; reopen: resolved → awaiting_manual with its resolved duplicates). Deleted: the link is
   * marked deleted, nothing moves.
   */
  applyNews(appId: string, news: NewsApply): Promise<NewsResult>
  /** Polling: live links with an issue, after `afterFeedbackId` in id order, with their lead's cluster size. */
  openIssues(afterFeedbackId: string, limit: number): Promise<(TrackerIssueRow & { cluster_size: number })[]>
}

/** The moves a tracker's news makes, decided on the lead's row (pure: both sides ask here). */
export function newsMove(action: NewsAction, lead: { status: FeedbackStatus; duplicate_of_id: string | null }): { from: FeedbackStatus; to: FeedbackStatus } | null {
  if (lead.duplicate_of_id !== null) return null
  if (action === 'resolved' && TRACKER_RESOLVES_FROM.has(lead.status)) return { from: lead.status, to: 'resolved' }
  if (action === 'reopen' && lead.status === 'resolved') return { from: 'resolved', to: 'awaiting_manual' }
  return null
}

/** Does a duplicate in `status` follow its lead's move to `to`? */
export const duplicateFollows = (status: FeedbackStatus, to: FeedbackStatus) => canFollowLead(status, to)
