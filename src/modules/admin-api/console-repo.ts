/**
 * The dashboard's own reads around Orgs, Apps and keys (the tenants service owns the rest): existence
 * checks scoped by Org, the sealed signing secret, key activity, agent cost per App, audit names.
 *
 * The port: one interface, a SQLite (src/db/sqlite/console.ts) and a PostgreSQL (src/db/pg/console.ts)
 * implementation, both held to test/repos/console.test.ts.
 */

export interface KeyActivityRow {
  id: string
  createdBy: string | null
  lastUsedAt: number | null
}

export interface AppCostRow {
  appId: string
  runs: number
  tokensIn: number
  tokensOut: number
  costUsd: number
}

export interface ConsoleRepo {
  orgExists(orgId: string): Promise<boolean>
  /** A live App of the Org. */
  appInOrg(orgId: string, appId: string): Promise<boolean>
  keyInOrg(orgId: string, keyId: string): Promise<boolean>
  feedbackInOrg(orgId: string, id: string): Promise<boolean>
  /** The App's sealed signing secret (undefined: no such App of the Org). */
  sealedSecret(orgId: string, appId: string): Promise<string | undefined>
  /** Creator and last use of each of the Org's keys, by key id. */
  keyActivity(orgId: string): Promise<Map<string, KeyActivityRow>>
  /** "admin:<id>" → email, to show who created a key. */
  adminEmails(): Promise<Map<string, string>>
  /**
   * Names for one audit page, by id: admins (email), and the Org's own Apps (deleted ones too, as the
   * log outlives them), keys (name or prefix) and the Org itself. Ids of anything else stay unnamed.
   */
  auditNames(orgId: string, ids: string[]): Promise<Map<string, string>>
  /** Agent runs, tokens and cost per live App of the Org since `since`, by App id. */
  costsSince(orgId: string, since: number): Promise<AppCostRow[]>
}

/** The ids worth naming: distinct, and shaped like fixloop ids. */
export const nameableIds = (ids: string[]): string[] => [...new Set(ids)].filter((id) => /^[0-9a-f]{24}$/.test(id))

