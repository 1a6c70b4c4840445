/**
 * Org, API-key and App rows as administration changes them (the request path reads them through the
 * credential directory and modules/apps/repo.ts). Lookups that take no Org are the operator's: the CLI
 * is given a bare App or key id and finds its Org here.
 *
 * The port: one interface, a SQLite (src/db/sqlite/tenants.ts) and a PostgreSQL (src/db/pg/tenants.ts)
 * implementation, both held to test/repos/tenants.cases.ts.
 */
import type { apiKeys, apps, orgs } from '../../db/schema'
import type { AuditEntry } from '../audit/entry'
import type { AppRow } from '../apps/repo'

export type OrgRow = typeof orgs.$inferSelect
export type KeyRow = typeof apiKeys.$inferSelect
export type NewKey = typeof apiKeys.$inferInsert
export type NewApp = typeof apps.$inferInsert

/**
 * Every write takes the audit rows to record with it (none: `[]`): the change and its audit rows commit
 * in one transaction, or neither does.
 */
export interface TenantsRepo {
  insertOrg(row: OrgRow, audit: AuditEntry[]): Promise<void>
  org(orgId: string): Promise<OrgRow | undefined>
  orgs(): Promise<OrgRow[]>
  /** `createdBy` ("admin:<id>", "cli"…) is kept for the dashboard's key list. */
  insertKey(row: NewKey, createdBy: string | null, audit: AuditEntry[]): Promise<void>
  key(keyId: string): Promise<KeyRow | undefined>
  keys(orgId: string): Promise<KeyRow[]>
  /** Revokes the key unless it already is; the time it is (or was) revoked at. */
  revokeKey(orgId: string, keyId: string, at: number, audit: AuditEntry[]): Promise<number>
  /** A new key and the old one revoked, together: a rotation never leaves the Org with two live keys or none. */
  rotateKey(fresh: NewKey, oldKeyId: string, at: number, audit: AuditEntry[]): Promise<void>
  /** Inserts the App; false (nothing written) when a live App of the Org already uses its slug. */
  insertApp(row: NewApp, audit: AuditEntry[]): Promise<boolean>
  /** A live App by id alone (operator lookups); use `appInOrg` on tenant paths. */
  liveApp(appId: string): Promise<AppRow | undefined>
  appInOrg(orgId: string, appId: string): Promise<AppRow | undefined>
  apps(orgId: string): Promise<AppRow[]>
  /** The live App of the Org using `slug`, if any. */
  appBySlug(orgId: string, slug: string): Promise<{ id: string } | undefined>
  /** Applies the patch; false (nothing written) when it would give the App a slug a live App of its Org uses. */
  updateApp(orgId: string, appId: string, patch: Partial<AppRow>, audit: AuditEntry[]): Promise<boolean>
}

