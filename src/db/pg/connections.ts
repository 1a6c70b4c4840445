/** PostgreSQL side of modules/connections/repo.ts. */
import { and, count, eq, isNull } from 'drizzle-orm'
import { apps, repoConnections } from './schema'
import type { Clock } from '../../core/clock'
import type { ConnectionsRepo } from '../../modules/connections/repo'
import type { PgLifecycle } from './lifecycle'
import type { PgStorage } from './storage'
import { writeAuditPg } from './audit-writer'

export function createPgConnectionsRepo(storage: PgStorage, lifecycle: PgLifecycle, clock: Clock): ConnectionsRepo {
  const { db } = storage
  return {
    appInOrg: async (orgId, appId) =>
      (await db.select({ id: apps.id }).from(apps).where(and(eq(apps.id, appId), eq(apps.orgId, orgId), isNull(apps.deletedAt)))).length > 0,
    get: async (appId) => (await db.select().from(repoConnections).where(eq(repoConnections.appId, appId)))[0],
    connect: (row, audit) =>
      storage.tx(async (client, tx, onCommit) => {
        const [stored] = await tx
          .insert(repoConnections)
          .values(row)
          .onConflictDoUpdate({ target: repoConnections.appId, set: { ...row, createdAt: undefined } })
          .returning()
        // Reports that were waiting in `queued` for a repository get their run now (woken after COMMIT).
        await lifecycle.enqueueWaitingRuns({ client, onCommit }, row.appId)
        for (const e of audit) await writeAuditPg(client, clock, e)
        return stored
      }),
    remove: (appId, audit) =>
      storage.tx(async (client, tx) => {
        const removed = (await tx.delete(repoConnections).where(eq(repoConnections.appId, appId)).returning({ appId: repoConnections.appId })).length > 0
        if (removed) for (const e of audit) await writeAuditPg(client, clock, e)
        return removed
      }),
    setWebhookSecret: (appId, sealed, audit) =>
      storage.tx(async (client, tx) => {
        const set = (await tx.update(repoConnections).set({ webhookSecretEnc: sealed, updatedAt: clock.now() }).where(eq(repoConnections.appId, appId)).returning({ appId: repoConnections.appId })).length > 0
        if (set) for (const e of audit) await writeAuditPg(client, clock, e)
        return set
      }),
    count: async () => (await db.select({ n: count() }).from(repoConnections))[0]?.n ?? 0,
  }
}
