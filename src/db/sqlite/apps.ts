/** SQLite side of modules/apps/repo.ts. */
import { and, asc, eq, isNull, sql } from 'drizzle-orm'
import { apps } from '../schema'
import type { AppsRepo } from '../../modules/apps/repo'
import type { SqliteStorage } from './storage'

export function createSqliteAppsRepo({ db }: SqliteStorage): AppsRepo {
  const live = isNull(apps.deletedAt)
  const listForOrg = db
    .select()
    .from(apps)
    .where(and(eq(apps.orgId, sql.placeholder('orgId')), live))
    .orderBy(asc(apps.id))
    .prepare()
  const getForOrg = db
    .select()
    .from(apps)
    .where(and(eq(apps.orgId, sql.placeholder('orgId')), eq(apps.id, sql.placeholder('id')), live))
    .prepare()
  // Deleted Apps included: their feedback stays readable (and listable by appId) after the App is gone.
  const everInOrg = db
    .select({ id: apps.id })
    .from(apps)
    .where(and(eq(apps.orgId, sql.placeholder('orgId')), eq(apps.id, sql.placeholder('id'))))
    .prepare()

  return {
    listForOrg: async (orgId) => listForOrg.all({ orgId }),
    getForOrg: async (orgId, id) => getForOrg.get({ orgId, id }),
    everInOrg: async (orgId, id) => everInOrg.get({ orgId, id }) !== undefined,
  }
}
