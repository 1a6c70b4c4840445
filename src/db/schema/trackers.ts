/**
 * Issue-tracker sync (docs/trackers.md): one tracker connection per App (the token and the webhook secret
 * sealed, the token's own user to recognise echoes, the state mapping and push rules, the health the
 * dashboard and /readyz show) and one tracker issue per lead report (the link, what was last pushed, the
 * sync state and its retry time).
 */
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

export const trackerConnections = sqliteTable('tracker_connections', {
  appId: text('app_id').primaryKey(),
  orgId: text('org_id').notNull(),
  /** github | gitlab | gitea | jira | linear */
  kind: text('kind').notNull(),
  apiUrl: text('api_url').notNull(),
  project: text('project').notNull(),
  /** Jira Cloud: the e-mail the API token belongs to. */
  account: text('account'),
  /** Sealed with the master key; never returned, never logged. */
  tokenSealed: text('token_sealed').notNull(),
  webhookSecretSealed: text('webhook_secret_sealed').notNull(),
  /** Who the token acts as (TrackerIdentity.actor): news made by it is fixloop's own echo. */
  actor: text('actor'),
  /** JSON {trackerStateName(lower case): 'resolved'|'reopen'|'ignore'} */
  stateMap: text('state_map').notNull().default('{}'),
  /** JSON {minDuplicates: number|null, onAwaitingManual: string[]} */
  rules: text('rules').notNull().default('{"minDuplicates":null,"onAwaitingManual":[]}'),
  /** The Org's event seq the push rules have read up to (src/modules/trackers/rules-watcher.ts). */
  eventCursor: integer('event_cursor').notNull().default(0),
  lastError: text('last_error'),
  lastErrorAt: integer('last_error_at'),
  retryAt: integer('retry_at'),
  createdAt: integer('created_at').notNull(),
  updatedAt: integer('updated_at').notNull(),
})

export const trackerIssues = sqliteTable(
  'tracker_issues',
  {
    /** The lead report: one issue per lead. */
    feedbackId: text('feedback_id').primaryKey(),
    orgId: text('org_id').notNull(),
    appId: text('app_id').notNull(),
    kind: text('kind').notNull(),
    /**
     * The connection's project when the link was made (owner/repo, group/project, Jira key, Linear team):
     * issue numbers are per project, so a link is synced only while the connection is of this kind and
     * project (modules/trackers/repo.ts linkFollows). '' for a link whose project was unknown at the migration.
     */
    project: text('project').notNull().default(''),
    /** The id API calls take (number, iid, key, id); null until the issue is created. */
    issueId: text('issue_id'),
    issueKey: text('issue_key'),
    issueUrl: text('issue_url'),
    /** The tracker's state name and its category (open | done | canceled), as last seen. */
    stateName: text('state_name'),
    stateCategory: text('state_category'),
    /** The cluster size (1 + duplicates) the issue's text last said, and when a growth comment was last posted. */
    pushedSize: integer('pushed_size').notNull().default(0),
    commentedAt: integer('commented_at'),
    /** pending (work queued) | synced | failing (retrying) | deleted (gone on the tracker side: no more syncing) */
    syncState: text('sync_state').notNull(),
    lastError: text('last_error'),
    attempts: integer('attempts').notNull().default(0),
    retryAt: integer('retry_at'),
    syncedAt: integer('synced_at'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [uniqueIndex('tracker_issues_issue_uq').on(t.appId, t.kind, t.project, t.issueId), index('tracker_issues_app_state_idx').on(t.appId, t.syncState)],
)
