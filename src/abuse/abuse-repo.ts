/**
 * The abuse defence's rows: spent proof-of-work solutions (single use) and each App's learned spam
 * factors. The port: a SQLite side (src/db/sqlite/abuse.ts) and a PostgreSQL side (src/db/pg/abuse.ts),
 * held to test/repos/abuse.test.ts.
 */

/** Spent solutions one statement of the purge deletes at most (a few milliseconds' work). */
export const POW_PURGE_BATCH = 5_000

export interface SpamLearningRow {
  appId: string
  /** JSON object: reason → weight factor (src/abuse/learn.ts). */
  factors: string
  notSpam: number
  markedSpam: number
  updatedAt: number
  /** JSON array: the App's reports declared "not spam" by hand lately, `{id, at}` (src/abuse/spam-cleared.ts). */
  cleared: string
}

export interface AbuseRepo {
  /**
   * Claims a solution's signature until `expiresAt` (epoch ms): true the first time, false when it was
   * claimed before (a replay). `INSERT … ON CONFLICT DO NOTHING`: the unique key settles two racing claims.
   */
  claimPow(signature: string, expiresAt: number): Promise<boolean>
  /**
   * Forgets spent solutions that expired before `now`; how many. In batches of POW_PURGE_BATCH rows, each
   * its own statement: after a long flood one DELETE of them all passed the server's statement_timeout
   * (FIXLOOP_PG_STATEMENT_TIMEOUT_SECONDS), was rolled back whole, and the table only grew.
   */
  purgePow(now: number): Promise<number>
  /** An App's learned factors, when it has any. */
  learning(appId: string): Promise<SpamLearningRow | undefined>
  /** Stores an App's factors and its recent "not spam" list (`cleared`), and counts one decision by hand (`not_spam` or `spam`). */
  saveLearning(appId: string, factors: string, decision: 'not_spam' | 'spam', now: number, cleared?: string): Promise<void>
  /** The Apps (deleted ones too) whose spam folder has a retention: `spamRetentionDays` above 0. */
  spamRetainingApps(): Promise<SpamRetainingApp[]>
  /**
   * The spam retention's delete (src/abuse/spam-retention.ts), one bounded batch in one transaction: up
   * to `limit` of the App's reports in the spam folder since before `before` (epoch ms of `spam_marked_at`;
   * a lead that gathered duplicates is never deleted) go, with their jobs, read marks and triage
   * decisions; their uploads are detached (no report, issued at 0) so their objects can be removed, and by
   * the upload collection should that fail. Returns how many reports went and the detached upload keys.
   */
  deleteExpiredSpam(app: { id: string; orgId: string }, before: number, limit: number): Promise<{ deleted: number; uploadKeys: string[] }>
}

export interface SpamRetainingApp {
  id: string
  orgId: string
  days: number
}

