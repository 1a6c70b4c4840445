/** SQLite side of modules/connections/repo.ts. */
import type { Database } from 'bun:sqlite'
import { and, count, eq, isNull } from 'drizzle-orm'
import { apps, repoConnections } from '../schema'
import type { Clock } from '../../core/clock'
import type { ConnectionsRepo } from '../../modules/connections/repo'
import type { SqliteLifecycle } from './lifecycle'
import type { SqliteStorage } from './storage'
import { sqliteAuditWriter } from './audit-writer'

export function createSqliteConnectionsRepo({ sqlite, db }: SqliteStorage, lifecycle: SqliteLifecycle, clock: Clock): ConnectionsRepo {
  const writeAudit = sqliteAuditWriter(sqlite, clock)
  const get = (appId: string) => db.select().from(repoConnections).where(eq(repoConnections.appId, appId)).get()
  return {
    appInOrg: async (orgId, appId) =>
      db.select({ id: apps.id }).from(apps).where(and(eq(apps.id, appId), eq(apps.orgId, orgId), isNull(apps.deletedAt))).get() !== undefined,
    get: async (appId) => get(appId),
    connect: async (row, audit) =>
      sqlite
        .transaction(() => {
          db.insert(repoConnections)
            .values(row)
            .onConflictDoUpdate({ target: repoConnections.appId, set: { ...row, createdAt: undefined } })
            .run()
          // Reports that were waiting in `queued` for a repository get their run now.
          lifecycle.enqueueWaitingRuns(row.appId)
          for (const e of audit) writeAudit(e)
          return get(row.appId)!
        })
        .immediate(),
    remove: async (appId, audit) =>
      sqlite
        .transaction(() => {
          const removed = (db.delete(repoConnections).where(eq(repoConnections.appId, appId)).run() as unknown as { changes: number }).changes > 0
          if (removed) for (const e of audit) writeAudit(e)
          return removed
        })
        .immediate(),
    setWebhookSecret: async (appId, sealed, audit) =>
      sqlite
        .transaction(() => {
          const set = (db.update(repoConnections).set({ webhookSecretEnc: sealed, updatedAt: clock.now() }).where(eq(repoConnections.appId, appId)).run() as unknown as { changes: number }).changes > 0
          if (set) for (const e of audit) writeAudit(e)
          return set
        })
        .immediate(),
    count: async () => db.select({ n: count() }).from(repoConnections).get()?.n ?? 0,
  }
}

/** For startServer, still synchronous (SQLite only): how many Apps have a repository connected. */
export function countRepoConnectionsSync(sqlite: Database): number {
  return (sqlite.query('SELECT count(*) AS n FROM repo_connections').get() as { n: number }).n
}
