/**
 * App queries. Every read takes the Org in its signature, so a cross-Org id simply finds nothing.
 */
import { and, asc, eq, isNull, sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { apps } from '../../db/schema'
import { isoUtc } from '../../core/clock'
import type { App, ProcessingMode } from './model'

export type AppRow = typeof apps.$inferSelect

export function toApp(row: AppRow): App {
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    description: row.description,
    publicKey: row.publicKey,
    publicSubmissionEnabled: row.publicSubmissionEnabled,
    processingMode: row.processingMode as ProcessingMode,
    batchEnabled: row.batchEnabled,
    batchWindowHours: row.batchWindowHours,
    allowedOrigins: JSON.parse(row.allowedOrigins) as string[],
    createdAt: isoUtc(row.createdAt),
  }
}

export function createAppsRepo(db: Db) {
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
    listForOrg: (orgId: string): AppRow[] => listForOrg.all({ orgId }),
    getForOrg: (orgId: string, id: string): AppRow | undefined => getForOrg.get({ orgId, id }),
    /** True when the App belongs (or belonged, before it was deleted) to the Org. */
    everInOrg: (orgId: string, id: string): boolean => everInOrg.get({ orgId, id }) !== undefined,
  }
}
export type AppsRepo = ReturnType<typeof createAppsRepo>
