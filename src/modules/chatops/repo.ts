/**
 * Slack connections, their parent messages and the Slack users allowed to act for an Org.
 *
 * The port: the SQLite side (src/db/sqlite/chatops.ts) and the PostgreSQL side (src/db/pg/chatops.ts),
 * both held to test/repos/chatops.test.ts. Each change commits with its audit rows.
 */
import type { AuditEntry } from '../audit/entry'

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
  drain_owner?: string | null
  drain_until?: number | null
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

export type NewSlackConnection = Omit<SlackConnectionRow, 'last_error' | 'deleted_at' | 'cursor_seq'>

/** An event as the notifier reads it. */
export interface ChatopsEvent {
  id: string
  seq: number
  type: string
  app_id: string | null
  data: string
  created_at: number
}

export interface ChatopsRepo {
  /**
   * Inserts the connection with its cursor at the Org's last seq, read in the same transaction: a new
   * connection does not replay the Org's history into the channel. With `max` (> 0): only while the Org
   * has fewer live connections, counted in that transaction; false (nothing written) when it has `max` already.
   */
  insert(row: NewSlackConnection, audit: AuditEntry[], max?: number): Promise<boolean>
  get(orgId: string, id: string): Promise<SlackConnectionRow | null>
  /** A live connection by id alone (the notifier, the slash command, the CLI). */
  getAny(id: string): Promise<SlackConnectionRow | null>
  list(orgId: string): Promise<SlackConnectionRow[]>
  /**
   * Every Org's live connections that are behind: the Org has an event past the cursor. What the
   * notifier's pass drains, in one statement of a few index seeks per Org with live connections and one
   * row per connection behind (db/sql/webhooks.ts): an idle pass reads, claims and releases no connection.
   */
  behind(): Promise<SlackConnectionRow[]>
  /** One Org's live connections that are behind (a wake for the Org's new events), by id. */
  behindInOrg(orgId: string): Promise<SlackConnectionRow[]>
  /** False (nothing written, nothing audited) when the connection was not live in the Org. */
  softDelete(orgId: string, id: string, now: number, audit: AuditEntry[]): Promise<boolean>
  /** Moves the cursor to `seq` (never back) and records the last error (null: none). */
  advance(id: string, seq: number, error: string | null): Promise<void>
  setError(id: string, error: string): Promise<void>
  /**
   * Claims (or renews) the right to post the connection's events until `until`, compare-and-set: true
   * when `owner` holds it now (it was free, expired at `now`, or `owner`'s already); false when another
   * notifier holds it, or the connection is gone.
   */
  claimDrain(id: string, owner: string, now: number, until: number): Promise<boolean>
  /**
   * Gives the claim up (only `owner`'s own) as of `until`: another notifier may take it from then on, the
   * owner at once. A drain that wrote to Slack passes its last write + the channel's pacing interval, so
   * the next node's first write keeps Slack's one write a second per channel; one that wrote nothing, now.
   */
  releaseDrain(id: string, owner: string, until: number): Promise<void>
  thread(connectionId: string, leadId: string): Promise<SlackThreadRow | null>
  saveThread(t: SlackThreadRow): Promise<void>
  /** Allows a Slack user for the Org; false (nothing written, nothing audited) when already allowed. */
  allow(orgId: string, teamId: string, userId: string, now: number, audit: AuditEntry[]): Promise<boolean>
  /** False (nothing written, nothing audited) when the user was not allowed. */
  deny(orgId: string, teamId: string, userId: string, audit: AuditEntry[]): Promise<boolean>
  isAllowed(orgId: string, teamId: string, userId: string): Promise<boolean>
  users(orgId: string): Promise<{ slack_team_id: string; slack_user_id: string; created_at: number }[]>
  eventsAfter(orgId: string, after: number, limit: number): Promise<ChatopsEvent[]>
  /** How many reports are attached to a lead as duplicates. */
  duplicateCount(leadId: string): Promise<number>
  /** A report of the Org (tenant-scoped), with what the slash command shows. */
  report(orgId: string, id: string): Promise<{ id: string; app_id: string; status: string; duplicate_of_id: string | null } | null>
  latestPrUrl(feedbackId: string): Promise<string | null>
  appInOrg(orgId: string, appId: string): Promise<boolean>
  orgExists(orgId: string): Promise<boolean>
}

