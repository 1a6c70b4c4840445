/** Issue-tracker sync: the PostgreSQL twin of src/db/schema/trackers.ts. */
import { index, integer, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { epochMs } from './columns'

export const trackerConnections = pgTable('tracker_connections', {
  appId: text('app_id').primaryKey(),
  orgId: text('org_id').notNull(),
  kind: text('kind').notNull(),
  apiUrl: text('api_url').notNull(),
  project: text('project').notNull(),
  account: text('account'),
  tokenSealed: text('token_sealed').notNull(),
  webhookSecretSealed: text('webhook_secret_sealed').notNull(),
  actor: text('actor'),
  stateMap: text('state_map').notNull().default('{}'),
  rules: text('rules').notNull().default('{"minDuplicates":null,"onAwaitingManual":[]}'),
  eventCursor: epochMs('event_cursor').notNull().default(0),
  lastError: text('last_error'),
  lastErrorAt: epochMs('last_error_at'),
  retryAt: epochMs('retry_at'),
  createdAt: epochMs('created_at').notNull(),
  updatedAt: epochMs('updated_at').notNull(),
})

export const trackerIssues = pgTable(
  'tracker_issues',
  {
    feedbackId: text('feedback_id').primaryKey(),
    orgId: text('org_id').notNull(),
    appId: text('app_id').notNull(),
    kind: text('kind').notNull(),
    project: text('project').notNull().default(''),
    issueId: text('issue_id'),
    issueKey: text('issue_key'),
    issueUrl: text('issue_url'),
    stateName: text('state_name'),
    stateCategory: text('state_category'),
    pushedSize: integer('pushed_size').notNull().default(0),
    commentedAt: epochMs('commented_at'),
    syncState: text('sync_state').notNull(),
    lastError: text('last_error'),
    attempts: integer('attempts').notNull().default(0),
    retryAt: epochMs('retry_at'),
    syncedAt: epochMs('synced_at'),
    createdAt: epochMs('created_at').notNull(),
    updatedAt: epochMs('updated_at').notNull(),
  },
  (t) => [uniqueIndex('tracker_issues_issue_uq').on(t.appId, t.kind, t.project, t.issueId), index('tracker_issues_app_state_idx').on(t.appId, t.syncState)],
)
