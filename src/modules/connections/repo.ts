/** Repository connections: one row per App (the token sealed), read by the runner when a run starts. */
import { and, count, eq, isNull } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { apps, repoConnections } from '../../db/schema'

export type ConnectionRow = typeof repoConnections.$inferSelect

export function createConnectionsRepo(db: Db) {
  return {
    /** Is `appId` a live App of `orgId`? */
    appInOrg: (orgId: string, appId: string): boolean =>
      db.select({ id: apps.id }).from(apps).where(and(eq(apps.id, appId), eq(apps.orgId, orgId), isNull(apps.deletedAt))).get() !== undefined,
    get: (appId: string): ConnectionRow | undefined => db.select().from(repoConnections).where(eq(repoConnections.appId, appId)).get(),
    /** Creates or replaces the App's connection (keeping its creation time). */
    upsert(row: typeof repoConnections.$inferInsert): void {
      db.insert(repoConnections)
        .values(row)
        .onConflictDoUpdate({ target: repoConnections.appId, set: { ...row, createdAt: undefined } })
        .run()
    },
    /** How many Apps have a repository connected (agents can run for them). */
    count: (): number => db.select({ n: count() }).from(repoConnections).get()?.n ?? 0,
    remove: (appId: string): boolean => (db.delete(repoConnections).where(eq(repoConnections.appId, appId)).run() as unknown as { changes: number }).changes > 0,
  }
}
