/**
 * Facts about the instance itself, one row per key: the master key check value (so a wrong or missing
 * master.key is refused at start instead of failing every request) and the fixloop version that last
 * migrated the schema (so an older binary can name it when it refuses a newer database).
 */
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

export const instanceMeta = sqliteTable('instance_meta', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  updatedAt: integer('updated_at').notNull(),
})

/**
 * Reports removed for good (a reporter's erasure, the report retention), one row per report, in the order
 * their removals committed (`seq`, 1, 2, 3…: the removals take their numbers one at a time). Cluster mode
 * only (src/nodes/removal-follower.ts): each node reads what was removed since its cursor and drops those
 * reports from its similarity indexes; rows are kept about an hour. An embedded fixloop is one process and
 * tells its index directly: the table stays empty on SQLite.
 */
export const removedReports = sqliteTable('removed_reports', {
  seq: integer('seq').primaryKey(),
  feedbackId: text('feedback_id').notNull(),
  removedAt: integer('removed_at').notNull(),
})

/**
 * The fixloop processes serving this database (cluster mode): each `serve` registers itself at start and
 * beats every few seconds; a node whose beat is older than the dead-node limit is gone, and the
 * maintenance leader frees the job leases it held. Times are epoch ms on the database's clock.
 */
export const clusterNodes = sqliteTable('cluster_nodes', {
  id: text('id').primaryKey(),
  host: text('host').notNull(),
  pid: integer('pid').notNull(),
  version: text('version').notNull(),
  startedAt: integer('started_at').notNull(),
  heartbeatAt: integer('heartbeat_at').notNull(),
  /** The leases it held at its last beat, comma-separated (for /readyz and the operator). */
  roles: text('roles').notNull().default(''),
  /**
   * Its FIXLOOP_NODE_LEASE_SECONDS in ms (it beats every third of it): it is dead once silent this long,
   * whatever lease the node that sweeps uses (null: a node before migration 0042, judged by the sweeper's).
   */
  leaseMs: integer('lease_ms'),
})

/**
 * Singleton leases (cluster mode): one row per role (`processing`, `maintenance`, `dispatch`); the holder
 * renews before `expires_at` (database clock); another node takes it only after. `token` rises with each
 * new holder: a fencing token that writes made under the lease compare.
 */
export const leases = sqliteTable('leases', {
  name: text('name').primaryKey(),
  holder: text('holder').notNull(),
  token: integer('token').notNull(),
  expiresAt: integer('expires_at').notNull(),
  acquiredAt: integer('acquired_at').notNull(),
})
