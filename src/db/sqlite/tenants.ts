/** SQLite side of modules/tenants/repo.ts. */
import { and, asc, eq, isNull } from 'drizzle-orm'
import { apiKeys, apps, orgs } from '../schema'
import type { Clock } from '../../core/clock'
import type { TenantsRepo } from '../../modules/tenants/repo'
import type { SqliteStorage } from './storage'
import { isSqliteUniqueViolation } from './errors'
import { sqliteAudited } from './audit-writer'

export function createSqliteTenantsRepo({ sqlite, db }: SqliteStorage, clock: Clock): TenantsRepo {
  const live = isNull(apps.deletedAt)
  const keyCreator = sqlite.query('INSERT INTO api_key_activity (key_id, created_by) VALUES (?, ?) ON CONFLICT (key_id) DO UPDATE SET created_by = excluded.created_by')
  const audited = sqliteAudited(sqlite, clock)
  /** False when the write hit the live-slug unique index (nothing was written). */
  const unlessSlugTaken = (write: () => unknown): boolean => {
    try {
      write()
      return true
    } catch (e) {
      if (isSqliteUniqueViolation(e, 'apps.org_id, apps.slug')) return false
      throw e
    }
  }
  const revoke = (orgId: string, keyId: string, at: number): number => {
    const row = db.select({ revokedAt: apiKeys.revokedAt }).from(apiKeys).where(and(eq(apiKeys.id, keyId), eq(apiKeys.orgId, orgId))).get()
    if (row?.revokedAt) return row.revokedAt
    db.update(apiKeys).set({ revokedAt: at }).where(and(eq(apiKeys.id, keyId), eq(apiKeys.orgId, orgId))).run()
    return at
  }
  return {
    insertOrg: async (row, audit) => audited(audit, () => void db.insert(orgs).values(row).run()),
    org: async (orgId) => db.select().from(orgs).where(eq(orgs.id, orgId)).get(),
    orgs: async () => db.select().from(orgs).orderBy(asc(orgs.id)).all(),

    insertKey: async (row, createdBy, audit) =>
      audited(audit, () => {
        db.insert(apiKeys).values(row).run()
        if (createdBy) keyCreator.run(row.id, createdBy)
      }),
    key: async (keyId) => db.select().from(apiKeys).where(eq(apiKeys.id, keyId)).get(),
    keys: async (orgId) => db.select().from(apiKeys).where(eq(apiKeys.orgId, orgId)).orderBy(asc(apiKeys.id)).all(),
    revokeKey: async (orgId, keyId, at, audit) => audited(audit, () => revoke(orgId, keyId, at)),
    rotateKey: async (fresh, oldKeyId, at, audit) =>
      audited(audit, () => {
        db.insert(apiKeys).values(fresh).run()
        revoke(fresh.orgId, oldKeyId, at)
      }),

    insertApp: async (row, audit) => audited(audit, () => unlessSlugTaken(() => db.insert(apps).values(row).run())),
    liveApp: async (appId) => db.select().from(apps).where(and(eq(apps.id, appId), live)).get(),
    appInOrg: async (orgId, appId) => db.select().from(apps).where(and(eq(apps.id, appId), eq(apps.orgId, orgId), live)).get(),
    apps: async (orgId) => db.select().from(apps).where(and(eq(apps.orgId, orgId), live)).orderBy(asc(apps.id)).all(),
    appBySlug: async (orgId, slug) => db.select({ id: apps.id }).from(apps).where(and(eq(apps.orgId, orgId), eq(apps.slug, slug), live)).get(),
    updateApp: async (orgId, appId, patch, audit) =>
      audited(audit, () => unlessSlugTaken(() => db.update(apps).set(patch).where(and(eq(apps.id, appId), eq(apps.orgId, orgId))).run())),
  }
}
