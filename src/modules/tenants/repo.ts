/**
 * Org, API-key and App rows as administration changes them (the request path reads them through the
 * credential directory and modules/apps/repo.ts). Lookups that take no Org are the operator's: the CLI
 * is given a bare App or key id and finds its Org here.
 */
import { and, eq, isNull } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { apiKeys, apps, orgs } from '../../db/schema'
import type { AppRow } from '../apps/repo'

export type OrgRow = typeof orgs.$inferSelect
export type KeyRow = typeof apiKeys.$inferSelect

export function createTenantsRepo(db: Db) {
  const live = isNull(apps.deletedAt)
  return {
    insertOrg: (row: OrgRow) => db.insert(orgs).values(row).run(),
    org: (orgId: string): OrgRow | undefined => db.select().from(orgs).where(eq(orgs.id, orgId)).get(),
    orgs: (): OrgRow[] => db.select().from(orgs).all(),

    insertKey: (row: typeof apiKeys.$inferInsert) => db.insert(apiKeys).values(row).run(),
    key: (keyId: string): KeyRow | undefined => db.select().from(apiKeys).where(eq(apiKeys.id, keyId)).get(),
    keys: (orgId: string): KeyRow[] => db.select().from(apiKeys).where(eq(apiKeys.orgId, orgId)).all(),
    revokeKey: (orgId: string, keyId: string, at: number) =>
      db.update(apiKeys).set({ revokedAt: at }).where(and(eq(apiKeys.id, keyId), eq(apiKeys.orgId, orgId))).run(),

    insertApp: (row: typeof apps.$inferInsert) => db.insert(apps).values(row).run(),
    /** A live App by id alone (operator lookups); use `appInOrg` on tenant paths. */
    liveApp: (appId: string): AppRow | undefined => db.select().from(apps).where(and(eq(apps.id, appId), live)).get(),
    appInOrg: (orgId: string, appId: string): AppRow | undefined =>
      db.select().from(apps).where(and(eq(apps.id, appId), eq(apps.orgId, orgId), live)).get(),
    apps: (orgId: string): AppRow[] => db.select().from(apps).where(and(eq(apps.orgId, orgId), live)).all(),
    /** The live App of the Org using `slug`, if any. */
    appBySlug: (orgId: string, slug: string): { id: string } | undefined =>
      db.select({ id: apps.id }).from(apps).where(and(eq(apps.orgId, orgId), eq(apps.slug, slug), live)).get(),
    updateApp: (orgId: string, appId: string, patch: Partial<AppRow>) =>
      db.update(apps).set(patch).where(and(eq(apps.id, appId), eq(apps.orgId, orgId))).run(),
  }
}
