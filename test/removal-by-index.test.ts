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
import { cleanup, compact, handOverShared, leadsWithDuplicates, ownIds, promote, successorOf, uploadKeysOf } from '../src/db/sql/report-removal'

const DIALECT = { ids: '(SELECT value FROM json_each(?1))', org: '?2', scrubbedEventData: "json_set(data, '$.externalUserId', NULL)" }

describe('report removal statements', () => {
  const sqlite = new Database(':memory:')
  applyMigrations(sqlite)
  const statements = [ownIds(DIALECT), ...handOverShared(DIALECT), uploadKeysOf(DIALECT), leadsWithDuplicates(DIALECT), successorOf(DIALECT, '?3'), ...promote(DIALECT, '?3', '?4'), ...cleanup(DIALECT)]

  test.each(statements.map((s) => [s.replace(/\s+/g, ' ').slice(0, 90), s]))('%s reads by an index', (_, text) => {
    const { sql, pick } = compact(text, '?')
    const plan = sqlite
      .prepare<{ detail: string }, string[]>(`EXPLAIN QUERY PLAN ${sql}`)
      .all(...pick(['["a","b"]', 'org', 'lead', 'next']))
      .map((r) => r.detail)
    // The id list itself (json_each) is the only thing read whole.
    const scans = plan.filter((d) => /^SCAN /.test(d) && !/^SCAN json_each/.test(d))
    expect(scans).toEqual([])
    expect(plan.some((d) => /^SEARCH /.test(d))).toBe(true)
  })
})
