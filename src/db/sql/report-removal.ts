/**
 * Removing reports for good (a reporter's erasure, src/modules/reporters; the report retention): the
 * statements both dialects run in one transaction (src/db/sqlite/reporters.ts, src/db/pg/reporters.ts),
 * written once with `${IDS}` (the id list), `${ORG}` (the Org) and the dialect's table of (lead, successor)
 * pairs for each side to fill in. The rules they apply are the port's (src/modules/reporters/repo.ts).
 */
import { handOverSharedSql } from './upload-shares'

export interface RemovalDialect {
  /** The id list as a subquery: `(SELECT value FROM json_each(?1))` or `(SELECT unnest($1::text[]))`. */
  ids: string
  /** The Org's placeholder. */
  org: string
  /** An event's data without the reporter's id (`feedback.resolved` carries `externalUserId`). */
  scrubbedEventData: string
  /** The (lead, successor) pairs of the promotion as a table `p (lead, next)`, from the third value on. */
  pairs: string
}

const fill = (sql: string, d: RemovalDialect) => sql.replaceAll('${IDS}', d.ids).replaceAll('${ORG}', d.org)

/** The reports of the list that are the Org's (anything else is left alone). */
export const ownIds = (d: RemovalDialect) => fill('SELECT id FROM feedback WHERE org_id = ${ORG} AND id IN ${IDS}', d)

/** First: the objects the reports own that a surviving report also lists pass to it (src/db/sql/upload-shares.ts). */
export const handOverShared = (d: RemovalDialect) => handOverSharedSql(d.ids)

/** Then the upload keys the reports still own (detached below, their objects removed after the commit). */
export const uploadKeysOf = (d: RemovalDialect) => fill('SELECT key FROM uploads WHERE feedback_id IN ${IDS}', d)

/**
 * Each removed lead's successor, its oldest duplicate that is not removed too, for the whole batch in one
 * statement (`lead`, `next`). It was one lead at a time: four statements per lead (its successor, the
 * promotion's two updates, whether it waits), so a batch of a reporter whose reports lead clusters made
 * hundreds of round trips (80 of a batch's 120 on PostgreSQL in bench/pg-erase.ts).
 */
export const successors = (d: RemovalDialect) =>
  fill('SELECT duplicate_of_id AS lead, MIN(id) AS next FROM feedback WHERE duplicate_of_id IN ${IDS} AND id NOT IN ${IDS} GROUP BY duplicate_of_id', d)

/**
 * The promotion, for every (lead, successor) pair at once (`${PAIRS}`: the side's table of them, columns
 * `lead` and `next`): the other surviving duplicates follow their successor, which becomes a lead with its
 * own count. The theme and consolidated text were written from the old lead's words: cleared (the next
 * clustering writes them again). The subqueries read the pairs, not the rows being updated.
 */
export const promote = (d: RemovalDialect) => [
  fill(
    `UPDATE feedback SET duplicate_of_id = (SELECT p.next FROM ${d.pairs} WHERE p.lead = feedback.duplicate_of_id)
     WHERE duplicate_of_id IN (SELECT p.lead FROM ${d.pairs}) AND id NOT IN (SELECT p.next FROM ${d.pairs}) AND id NOT IN \${IDS}`,
    d,
  ),
  fill(
    `UPDATE feedback SET duplicate_of_id = NULL, merge_score = NULL, merge_reason = NULL, theme = NULL, consolidated_text = NULL,
       duplicate_count = (SELECT COUNT(*) FROM feedback x WHERE x.duplicate_of_id = feedback.id),
       last_duplicate_at = (SELECT MAX(x.created_at) FROM feedback x WHERE x.duplicate_of_id = feedback.id)
     WHERE id IN (SELECT p.next FROM ${d.pairs})`,
    d,
  ),
]

/**
 * The promoted successors that must be moved on as leads: a duplicate waits in `sanitized` (it takes no
 * lifecycle steps of its own), and a lead left there has no job that routes it: it stayed `sanitized` for
 * good (never awaiting a decision, never queued for the agent on an automatic App). Its `process` job
 * routes it, as an unmerge's does; one already queued (a report merged before it was processed) is enough.
 */
export const successorsWaiting = (d: RemovalDialect) =>
  fill(
    `SELECT id FROM feedback WHERE id IN (SELECT p.next FROM ${d.pairs}) AND status = 'sanitized' AND duplicate_of_id IS NULL
       AND NOT EXISTS (SELECT 1 FROM jobs WHERE kind = 'process' AND jobs.feedback_id = feedback.id)`,
    d,
  )

/** Everything else, in order: nothing that holds the reports' text or their reporter's identity stays. */
export const cleanup = (d: RemovalDialect) =>
  [
    // A surviving lead that lost duplicates: its count again, and no theme quoting the removed words.
    `UPDATE feedback SET theme = NULL, consolidated_text = NULL,
       duplicate_count = (SELECT COUNT(*) FROM feedback x WHERE x.duplicate_of_id = feedback.id AND x.id NOT IN \${IDS})
     WHERE org_id = \${ORG} AND id NOT IN \${IDS} AND id IN (SELECT duplicate_of_id FROM feedback WHERE id IN \${IDS} AND duplicate_of_id IS NOT NULL)`,
    // A suggestion's reason may quote the suggested lead's words. (No Org condition: the ids are the Org's
    // own, a suggestion of a removed report is void whoever holds it, and SQLite would pick the Org's index
    // over feedback_suggested_idx and read every report of the Org.)
    'UPDATE feedback SET suggested_lead_id = NULL, suggested_score = NULL, suggested_reason = NULL WHERE suggested_lead_id IN ${IDS}',
    // The submission's replayable response names the report; its request hash is of the report's body.
    // A record is written in its report's transaction with the report's created_at, so only the records of
    // those instants are read (idempotency_created_idx). Before, every record of the reports' Apps was
    // matched against every id of the batch: 200 LIKEs per record, ~25 s per batch of an App with a day's
    // 100,000 keyed submissions, the write lock held all along (a 3,000-report erasure took 4.5 minutes).
    `DELETE FROM idempotency_keys WHERE created_at IN (SELECT created_at FROM feedback WHERE id IN \${IDS})
       AND EXISTS (SELECT 1 FROM feedback f WHERE f.id IN \${IDS} AND f.app_id = idempotency_keys.app_id
         AND f.created_at = idempotency_keys.created_at AND idempotency_keys.response_body LIKE '%"' || f.id || '"%')`,
    // Webhook deliveries of events that named the reporter (feedback.resolved: externalUserId): the signed payloads go.
    `DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE event_id IN
       (SELECT id FROM events WHERE org_id = \${ORG} AND feedback_id IN \${IDS} AND type = 'feedback.resolved'))`,
    `DELETE FROM webhook_deliveries WHERE event_id IN (SELECT id FROM events WHERE org_id = \${ORG} AND feedback_id IN \${IDS} AND type = 'feedback.resolved')`,
    `UPDATE events SET data = ${d.scrubbedEventData} WHERE org_id = \${ORG} AND feedback_id IN \${IDS} AND type = 'feedback.resolved'`,
    'UPDATE uploads SET feedback_id = NULL, created_at = 0 WHERE feedback_id IN ${IDS}',
    'DELETE FROM jobs WHERE feedback_id IN ${IDS}',
    'DELETE FROM admin_reads WHERE feedback_id IN ${IDS}',
    'DELETE FROM triage_decisions WHERE feedback_id IN ${IDS} OR lead_id IN ${IDS}',
    'DELETE FROM agent_runs WHERE feedback_id IN ${IDS}',
    'DELETE FROM pending_reviews WHERE feedback_id IN ${IDS}',
    'DELETE FROM closed_pull_requests WHERE feedback_id IN ${IDS}',
    'DELETE FROM deferred_pr_changes WHERE feedback_id IN ${IDS}',
    'DELETE FROM tracker_issues WHERE feedback_id IN ${IDS}',
    'DELETE FROM slack_threads WHERE lead_feedback_id IN ${IDS}',
    'DELETE FROM mail_outbox WHERE feedback_id IN ${IDS}',
    'DELETE FROM feedback WHERE id IN ${IDS}',
  ].map((sql) => fill(sql, d))

/**
 * How a reporter's reports are found: `sql`, the condition (`p` the placeholder of `value`), and `keep`,
 * the rows' emails to keep of what it finds, when it finds more than the reporter's.
 *
 * An email is compared without case. An ASCII one is lowered by the database on both sides (never in
 * JavaScript against the database's: SQLite's LOWER folds ASCII only). One with other letters ("jörg@…")
 * could not be found in another case ("JÖRG@…") on SQLite, whose LOWER leaves Ö as it is: it is found by
 * LIKE with each such letter a one-character wildcard (a superset, ASCII still compared without case),
 * and the rows are kept whose email JavaScript folds to the same text, on both dialects alike.
 */
export interface ReporterMatch {
  sql: string
  value: string
  keep?: (email: string | null) => boolean
}
export function reporterMatch(who: { externalUserId?: string; email?: string }, p: string): ReporterMatch {
  if (who.externalUserId !== undefined) return { sql: `external_user_id = ${p}`, value: who.externalUserId }
  const email = who.email!
  if (!NON_ASCII.test(email)) return { sql: `LOWER(email) = LOWER(${p})`, value: email }
  const folded = email.toLowerCase()
  const pattern = [...email].map((ch) => (NON_ASCII.test(ch) ? '_' : /[%_\\]/.test(ch) ? `\\${ch}` : ch.toLowerCase())).join('')
  return { sql: `LOWER(email) LIKE ${p} ESCAPE '\\'`, value: pattern, keep: (stored) => stored !== null && stored.toLowerCase() === folded }
}
const NON_ASCII = /[^\x00-\x7f]/

/**
 * A page of the reporter's report ids, newest first, at most `limit`, when the match finds a superset
 * (`keep`): pages of candidates are read (`read`: ids and emails below `before`, newest first) and
 * narrowed until `limit` are kept or none are left.
 */
export async function narrowedIds(
  read: (before: string | undefined, limit: number) => Promise<{ id: string; email: string | null }[]>,
  keep: (email: string | null) => boolean,
  before: string | undefined,
  limit: number,
): Promise<string[]> {
  const out: string[] = []
  for (let cursor = before; out.length < limit; ) {
    const rows = await read(cursor, limit)
    for (const r of rows) if (keep(r.email) && out.length < limit) out.push(r.id)
    if (rows.length < limit) break
    cursor = rows[rows.length - 1]!.id
  }
  return out
}

/**
 * A statement with only the numbered placeholders it uses (`?n` or `$n`), renumbered from 1, and which of
 * the caller's values go where: both drivers refuse values a statement does not take (PostgreSQL cannot
 * type an unused one). `pick` maps the caller's full value list to the statement's.
 */
export function compact(sql: string, mark: '?' | '$'): { sql: string; pick: <T>(values: readonly T[]) => T[] } {
  const re = mark === '?' ? /\?(\d+)/g : /\$(\d+)/g
  const used = [...new Set([...sql.matchAll(re)].map((m) => Number(m[1])))].sort((a, b) => a - b)
  const renumbered = sql.replace(re, (_, n: string) => `${mark}${used.indexOf(Number(n)) + 1}`)
  return { sql: renumbered, pick: (values) => used.map((n) => values[n - 1]) }
}
