/** PostgreSQL side of modules/tenants/repo.ts. */
import { and, asc, eq, isNull } from 'drizzle-orm'
import { apiKeys, apps, orgs } from './schema'
import type { Clock } from '../../core/clock'
import type { AuditEntry } from '../../modules/audit/entry'
import type { TenantsRepo } from '../../modules/tenants/repo'
import { isUniqueViolation, type PgDb, type PgStorage } from './storage'
import { pgAudited } from './audit-writer'

export function createPgTenantsRepo(storage: PgStorage, clock: Clock): TenantsRepo {
  const { db } = storage
  const live = isNull(apps.deletedAt)
  const first = <T>(rows: T[]): T | undefined => rows[0]
  const audited = pgAudited(storage, clock)
  const slugTaken = (e: unknown) => isUniqueViolation(e, 'apps_org_slug_uq')
  /** Runs `change`; false (and nothing written, nothing audited) when it broke the live-slug index. */
  const unlessSlugTaken = async (audit: AuditEntry[], change: (tx: PgDb) => Promise<unknown>): Promise<boolean> => {
    try {
      return await audited(audit, async (_client, tx) => {
        await change(tx)
        return true
      })
    } catch (e) {
      if (slugTaken(e)) return false
      throw e
    }
  }
  const revoke = async (tx: PgDb, orgId: string, keyId: string, at: number): Promise<number> => {
    // FOR UPDATE: two revocations at once agree on the first one's time.
    const row = first(await tx.select({ revokedAt: apiKeys.revokedAt }).from(apiKeys).where(and(eq(apiKeys.id, keyId), eq(apiKeys.orgId, orgId))).for('update'))
    if (row?.revokedAt) return row.revokedAt
    await tx.update(apiKeys).set({ revokedAt: at }).where(and(eq(apiKeys.id, keyId), eq(apiKeys.orgId, orgId)))
    return at
  }
  return {
    insertOrg: (row, audit) => audited(audit, async (_client, tx) => void (await tx.insert(orgs).values(row))),
    org: async (orgId) => first(await db.select().from(orgs).where(eq(orgs.id, orgId))),
    orgs: async () => db.select().from(orgs).orderBy(asc(orgs.id)),

    insertKey: (row, createdBy, audit) =>
      audited(audit, async (client, tx) => {
        await tx.insert(apiKeys).values(row)
        if (createdBy) {
          await client.query(
            'INSERT INTO api_key_activity (key_id, created_by) VALUES ($1, $2) ON CONFLICT (key_id) DO UPDATE SET created_by = excluded.created_by',
            [row.id, createdBy],
          )
        }
      }),
    key: async (keyId) => first(await db.select().from(apiKeys).where(eq(apiKeys.id, keyId))),
    keys: async (orgId) => db.select().from(apiKeys).where(eq(apiKeys.orgId, orgId)).orderBy(asc(apiKeys.id)),
    revokeKey: (orgId, keyId, at, audit) => audited(audit, (_client, tx) => revoke(tx, orgId, keyId, at)),
    rotateKey: (fresh, oldKeyId, at, audit) =>
      audited(audit, async (_client, tx) => {
        await tx.insert(apiKeys).values(fresh)
        await revoke(tx, fresh.orgId, oldKeyId, at)
      }),

    insertApp: (row, audit) => unlessSlugTaken(audit, (tx) => tx.insert(apps).values(row)),
    liveApp: async (appId) => first(await db.select().from(apps).where(and(eq(apps.id, appId), live))),
    appInOrg: async (orgId, appId) => first(await db.select().from(apps).where(and(eq(apps.id, appId), eq(apps.orgId, orgId), live))),
    apps: async (orgId) => db.select().from(apps).where(and(eq(apps.orgId, orgId), live)).orderBy(asc(apps.id)),
    appBySlug: async (orgId, slug) => first(await db.select({ id: apps.id }).from(apps).where(and(eq(apps.orgId, orgId), eq(apps.slug, slug), live))),
    updateApp: (orgId, appId, patch, audit) => unlessSlugTaken(audit, (tx) => tx.update(apps).set(patch).where(and(eq(apps.id, appId), eq(apps.orgId, orgId)))),
  }
}
