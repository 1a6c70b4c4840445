/** Facts about the instance (master key check, schema version): the PostgreSQL twin of src/db/schema/ops.ts. */
import { integer, pgTable, text } from 'drizzle-orm/pg-core'
import { counter, epochMs } from './columns'

export const instanceMeta = pgTable('instance_meta', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  updatedAt: epochMs('updated_at').notNull(),
})

/** Reports removed for good, in their removals' commit order: the twin of src/db/schema/ops.ts `removedReports`. */
export const removedReports = pgTable('removed_reports', {
  seq: counter('seq').primaryKey(),
  feedbackId: text('feedback_id').notNull(),
  removedAt: epochMs('removed_at').notNull(),
})

/** Nodes serving this database: the twin of src/db/schema/ops.ts `clusterNodes`. */
export const clusterNodes = pgTable('cluster_nodes', {
  id: text('id').primaryKey(),
  host: text('host').notNull(),
  pid: integer('pid').notNull(),
  version: text('version').notNull(),
  startedAt: epochMs('started_at').notNull(),
  heartbeatAt: epochMs('heartbeat_at').notNull(),
  roles: text('roles').notNull().default(''),
  /** Its FIXLOOP_NODE_LEASE_SECONDS in ms: it is dead once silent this long (null: a node before 0028, judged by the sweeper's own). */
  leaseMs: integer('lease_ms'),
})

/** Singleton leases with a fencing token: the twin of src/db/schema/ops.ts `leases`. */
export const leases = pgTable('leases', {
  name: text('name').primaryKey(),
  holder: text('holder').notNull(),
  token: counter('token').notNull(),
  expiresAt: epochMs('expires_at').notNull(),
  acquiredAt: epochMs('acquired_at').notNull(),
})
