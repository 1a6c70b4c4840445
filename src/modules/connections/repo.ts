/**
 * Repository connections: one row per App (the token sealed), read by the runner when a run starts.
 * The port: a SQLite side (src/db/sqlite/connections.ts) and a PostgreSQL side
 * (src/db/pg/connections.ts), held to test/repos/connections.test.ts.
 */
import type { repoConnections } from '../../db/schema'
import type { AuditEntry } from '../audit/entry'

export type ConnectionRow = typeof repoConnections.$inferSelect
export type NewConnection = typeof repoConnections.$inferInsert

export interface ConnectionsRepo {
  /** Is `appId` a live App of `orgId`? */
  appInOrg(orgId: string, appId: string): Promise<boolean>
  get(appId: string): Promise<ConnectionRow | undefined>
  /**
   * Creates or replaces the App's connection (keeping its creation time) and queues an agent run for
   * each report of the App that waited in `queued` for a repository, with the audit rows, in one
   * transaction; the stored row.
   */
  connect(row: NewConnection, audit: AuditEntry[]): Promise<ConnectionRow>
  /** Removes the App's connection; false (and nothing recorded) when it had none. */
  remove(appId: string, audit: AuditEntry[]): Promise<boolean>
  /** Replaces the App's sealed webhook secret with the audit rows; false (nothing recorded) when it has no connection. */
  setWebhookSecret(appId: string, sealed: string, audit: AuditEntry[]): Promise<boolean>
  /** How many Apps have a repository connected (agents can run for them). */
  count(): Promise<number>
}

