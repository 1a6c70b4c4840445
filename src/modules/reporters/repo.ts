/**
 * A reporter's reports and removing reports for good (a data-subject export or erasure; the report
 * retention). The port: a SQLite (src/db/sqlite/reporters.ts) and a PostgreSQL (src/db/pg/reporters.ts)
 * side over one set of statements (src/db/sql/report-removal.ts), held to test/repos/reporters.test.ts.
 */

/** Whose reports: an end user's id (from the user token's sub, or a public identity) or an email (any case). */
export type Reporter = { externalUserId: string; email?: undefined } | { email: string; externalUserId?: undefined }

export interface ReporterQuery {
  orgId: string
  who: Reporter
  /** One App of the Org; absent: every App. */
  appId?: string
  /** Ids below this one (newest first). */
  before?: string
  limit: number
}

export interface ReportersRepo {
  /**
   * How many reports one `removeReports` transaction of an erasure takes. SQLite: 200 (its one write lock
   * holds intake back for the batch; the pacer makes it smaller while intake is busy). PostgreSQL: 1,000
   * (row locks only, so intake goes on beside it, and the ~40 statements and round trips per batch were most
   * of an erasure's time: bench/pg-erase.ts, 10,000 reports of 110,000 in 1.9-2.6 s instead of 3.3-5.2 s).
   */
  readonly eraseBatch: number
  /** The reporter's report ids, newest first. */
  reportIds(q: ReporterQuery): Promise<string[]>
  /**
   * Deletes these reports of the Org (ids of other Orgs are ignored) in one transaction, with everything
   * that holds their text or their reporter's identity: jobs, read marks, triage decisions, agent runs,
   * reviews, tracker and Slack links, mail outbox rows, idempotency records that name them, the
   * `externalUserId` of their `feedback.resolved` events (and those events' webhook delivery log). Events
   * themselves stay (ids and states only). A removed lead hands its cluster to its oldest surviving
   * duplicate (the new lead); a lead that lost duplicates is recounted; suggestions of a removed lead are
   * cleared. Uploads are detached (no report, issued at 0) so their objects can be removed after the
   * commit, and by the upload collection should that fail. Returns how many went and the upload keys.
   */
  removeReports(orgId: string, ids: readonly string[]): Promise<{ removed: number; uploadKeys: string[] }>
  /**
   * The addresses the reports name, per App: the submitter's email and the keyed hash of each reporter-mail
   * row (`mail_outbox.email_hash`, the address a "fixed" mail goes to). Read before an erasure.
   */
  addressesOf(orgId: string, ids: readonly string[]): Promise<{ appId: string; email: string | null; emailHash: string | null }[]>
  /** Deletes the unsubscribe and double opt-in records of these (App, address hash) pairs; how many went. */
  forgetAddresses(pairs: readonly { appId: string; emailHash: string }[]): Promise<number>
  /** The Apps (deleted ones too) with a report retention: `retention_days` above 0. */
  retainingApps(): Promise<RetainingApp[]>
  /** Up to `limit` of the App's report ids created before `before` (epoch ms), oldest first. */
  expiredIds(app: { id: string; orgId: string }, before: number, limit: number): Promise<string[]>
}

export interface RetainingApp {
  id: string
  orgId: string
  days: number
}
