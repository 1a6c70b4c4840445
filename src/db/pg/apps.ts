/** PostgreSQL side of modules/apps/repo.ts. */
import { and, asc, eq, isNull } from 'drizzle-orm'
import { apps } from './schema'
import type { AppsRepo } from '../../modules/apps/repo'
import type { PgStorage } from './storage'

export function createPgAppsRepo({ db }: PgStorage): AppsRepo {
  const live = isNull(apps.deletedAt)
  return {
    listForOrg: async (orgId) => db.select().from(apps).where(and(eq(apps.orgId, orgId), live)).orderBy(asc(apps.id)),
    getForOrg: async (orgId, id) => (await db.select().from(apps).where(and(eq(apps.orgId, orgId), eq(apps.id, id), live)))[0],
    // Deleted Apps included: their feedback stays readable (and listable by appId) after the App is gone.
    everInOrg: async (orgId, id) => (await db.select({ id: apps.id }).from(apps).where(and(eq(apps.orgId, orgId), eq(apps.id, id)))).length > 0,
  }
}
