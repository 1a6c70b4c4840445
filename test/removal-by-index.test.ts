/**
 * Removing reports (a reporter's erasure, the report retention, the spam folder's) reads every table by an
 * index: a statement that scans a table costs a batch time in proportion to everything the Org ever
 * stored, and a batch holds the HTTP thread. Found by bench/retention-intake.ts: clearing suggestions
 * scanned the Org's reports (2 ms per batch at 20,000 reports, whatever the batch size), so intake p99
 * rose while the retention swept. Checked on a migrated SQLite file with EXPLAIN QUERY PLAN.
 */
import { Database } from 'bun:sqlite'
import { describe, expect, test } from 'bun:test'
import { applyMigrations } from '../src/db/sqlite/migrate'
import { cleanup, compact, handOverShared, ownIds, promote, successors, successorsWaiting, uploadKeysOf } from '../src/db/sql/report-removal'

const DIALECT = {
  ids: '(SELECT value FROM json_each(?1))',
  org: '?2',
  scrubbedEventData: "json_set(data, '$.externalUserId', NULL)",
  pairs: "(SELECT json_extract(value, '$[0]') AS lead, json_extract(value, '$[1]') AS next FROM json_each(?3)) AS p",
}

describe('report removal statements', () => {
  const sqlite = new Database(':memory:')
  applyMigrations(sqlite)
  const statements = [ownIds(DIALECT), ...handOverShared(DIALECT), uploadKeysOf(DIALECT), successors(DIALECT), ...promote(DIALECT), successorsWaiting(DIALECT), ...cleanup(DIALECT)]

  test.each(statements.map((s) => [s.replace(/\s+/g, ' ').slice(0, 90), s]))('%s reads by an index', (_, text) => {
    const { sql, pick } = compact(text, '?')
    const plan = sqlite
      .prepare<{ detail: string }, string[]>(`EXPLAIN QUERY PLAN ${sql}`)
      .all(...pick(['["a","b"]', 'org', '[["a","c"]]']))
      .map((r) => r.detail)
    // The id list and the (lead, successor) pairs themselves (json_each) are the only things read whole.
    const scans = plan.filter((d) => /^SCAN /.test(d) && !/^SCAN json_each/.test(d))
    expect(scans).toEqual([])
    expect(plan.some((d) => /^SEARCH /.test(d))).toBe(true)
  })
})
