/**
 * Query plans the worker's speed depends on (bench/intake.sh measures the speed itself): a lead's
 * summary after each attach reads its newest 200 duplicates and their count. With an index on
 * duplicate_of_id alone, SQLite read and sorted EVERY duplicate per attach, so a cluster of 10k
 * duplicates made each new report cost 10k row reads (the backlog drained at ~130 reports/s).
 */
import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { applyMigrations } from '../src/db/sqlite/migrate'
import { HISTORY_SQL } from '../src/db/sqlite/inbox'
import { LAST_SEQ_SQL } from '../src/db/sqlite/outbox'
import { pageSql, PURGE_SQL } from '../src/db/sqlite/events'
import { listSql } from '../src/db/sqlite/feedback'

/** `db` as a module sees it, with every statement it prepares told to `onQuery` first. */
function recordingQueries(db: Database, onQuery: (sql: string) => void): Database {
  const query = db.query.bind(db)
  return Object.assign(Object.create(db), {
    query(sql: string) {
      onQuery(sql)
      return query(sql)
    },
  }) as Database
}

function plan(db: Database, sql: string): string {
  return (db.query(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail).join(' | ')
}

describe('cluster summary queries', () => {
  const db = new Database(':memory:')
  applyMigrations(db)

  test("a lead's newest duplicates come from the index in order, with no sort of all duplicates", () => {
    const p = plan(db, "SELECT text, created_at FROM feedback WHERE duplicate_of_id = 'x' ORDER BY id DESC LIMIT 200")
    expect(p).toContain('feedback_dup_recent_idx')
    expect(p).not.toContain('TEMP B-TREE')
  })

  test("a lead's duplicate count and latest time are read from the index alone", () => {
    const p = plan(db, "SELECT COUNT(*) AS n, MAX(created_at) AS last FROM feedback WHERE duplicate_of_id = 'x'")
    expect(p).toContain('COVERING INDEX feedback_dup_recent_idx')
  })

  test('the old single-column index is gone (every duplicate update would write two indexes)', () => {
    const names = (db.query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'feedback'").all() as { name: string }[]).map((r) => r.name)
    expect(names).toContain('feedback_dup_recent_idx')
    expect(names).not.toContain('feedback_dup_idx')
  })
})

describe('event log of one report', () => {
  const db = new Database(':memory:')
  applyMigrations(db)

  test("a report's history reads the feedback_id index, and events stored before it the legacy expression index, neither sorted", () => {
    const p = plan(db, HISTORY_SQL.replaceAll('?1', "'o'").replaceAll('?2', "'f'"))
    expect(p).toContain('events_feedback_id_idx (org_id=? AND feedback_id=?)')
    expect(p).toContain('events_legacy_feedback_idx (org_id=? AND <expr>=?)')
    expect(p).not.toContain('TEMP B-TREE')
  })

  test('a new event is indexed without parsing its JSON: the expression index only holds rows without feedback_id', () => {
    const sql = (db.query("SELECT sql FROM sqlite_master WHERE name = 'events_legacy_feedback_idx'").get() as { sql: string }).sql
    expect(sql).toContain('WHERE feedback_id IS NULL')
    expect(db.query("SELECT 1 FROM sqlite_master WHERE name = 'events_feedback_idx'").get()).toBeNull()
  })
})

/**
 * Every event on the intake path reads its Org's next seq instead of upserting a counter row (migration
 * 0015): the read must be two index seeks whatever the size of the Org's history, and retention, which
 * lost its created_at index, must find old events through the primary key's index.
 */
describe('event seq and retention', () => {
  const db = new Database(':memory:')
  applyMigrations(db)

  test("the next seq is a seek to the Org's newest event plus a primary-key read of its floor, no scan", () => {
    const p = plan(db, LAST_SEQ_SQL)
    expect(p).toContain('COVERING INDEX events_org_seq_uq (org_id=?)')
    expect(p).toContain('event_counters USING INDEX sqlite_autoindex_event_counters_1 (org_id=?)')
    expect(p).not.toContain('SCAN events')
    expect(p).not.toContain('TEMP B-TREE')
  })

  test('retention ranges on the id (time-ordered) through the primary key, and no created_at index is written per event', () => {
    const p = plan(db, PURGE_SQL.replace('?1', "'69230000'").replace('?2', '1'))
    expect(p).toContain('sqlite_autoindex_events_1 (id<?)')
    expect(p).not.toContain('SCAN events')
    expect(db.query("SELECT 1 FROM sqlite_master WHERE name = 'events_created_idx'").get()).toBeNull()
  })

  test("the floor trigger's check of a deleted event is a seek too", () => {
    const p = plan(db, "SELECT 1 FROM events WHERE org_id = 'o' AND seq > 5")
    expect(p).toContain('COVERING INDEX events_org_seq_uq (org_id=? AND seq>?)')
  })
})

/**
 * The list page and the event pages bind their tenant values as `+?` (same plan, ~6 µs less per execution
 * with bun's SQLite): every filter combination must still read its index in order, with no sort.
 */
describe('list and event pages', () => {
  const db = new Database(':memory:')
  applyMigrations(db)

  test('every list filter combination walks its index in id order', () => {
    for (const appId of [undefined, 'a'])
      for (const status of [undefined, 'received'])
        for (const cursor of [undefined, 'c'])
          for (const includeDuplicates of [false, true]) {
            const sql = listSql({ appId, status, cursor, includeDuplicates })
            const p = plan(db, sql.replace(/\$(\w+)/g, (_, name: string) => (name === 'limit' ? '51' : `'${name}'`)))
            const index = `feedback_${appId ? 'app' : 'org'}_${status ? 'status' : 'id'}_idx`
            expect(p).toContain(index)
            expect(p).not.toContain('TEMP B-TREE')
          }
  })

  test('every event page (types, App filter) seeks events_org_seq_uq past the cursor, no sort', () => {
    for (const types of [0, 3])
      for (const withApp of [false, true]) {
        let n = 0
        const p = plan(db, pageSql(types, withApp).replace(/\?/g, () => (n++ === 0 ? "'o'" : "'1'")))
        expect(p).toContain('events_org_seq_uq (org_id=? AND seq>?)')
        expect(p).not.toContain('TEMP B-TREE')
      }
  })
})

/**
 * Each thread claims only its own job kinds (src/lifecycle/jobs-repo.ts). Under a burst there are ~200k due
 * `process` jobs: the HTTP thread's claim for `agent`/`uploads_gc` jobs scanned all of them (80-130 ms
 * on the HTTP thread, once a second, measured) until the kind index; the processing thread's claim must
 * keep walking the due-time index in order instead of sorting every due job.
 */
describe('job claims by kind', () => {
  const db = new Database(':memory:')
  applyMigrations(db)
  const plans: string[] = []
  const spy = recordingQueries(db, (sql) => {
    if (/^\s*(UPDATE jobs SET lease_until = \$leaseUntil|SELECT 1 FROM jobs WHERE run_after)/.test(sql)) plans.push(plan(db, sql))
  })

  test("the HTTP thread's claims find its few kinds through the kind index", async () => {
    const { createSqliteJobs } = await import('../src/db/sqlite/jobs')
    plans.length = 0
    createSqliteJobs(spy, ['agent', 'uploads_gc'])
    expect(plans.length).toBeGreaterThanOrEqual(2)
    for (const p of plans) expect(p).toContain('jobs_kind_due_idx')
  })

  test("the processing thread's claim walks the due-time index in order (no sort of every due job)", async () => {
    const { createSqliteJobs } = await import('../src/db/sqlite/jobs')
    plans.length = 0
    createSqliteJobs(spy, ['process', 'batch_release'])
    const single = plans.find((p) => p.includes('SCALAR SUBQUERY'))!
    expect(single).toContain('jobs_due_idx')
    expect(single).not.toContain('TEMP B-TREE')
    const batch = plans.find((p) => p.includes('LIST SUBQUERY'))!
    expect(batch).toContain('jobs_kind_due_idx (kind=? AND run_after<?)')
    expect(batch).not.toContain('TEMP B-TREE')
  })
})

/**
 * The fair claim (issue 38, src/db/fair-claim.ts) runs hundreds of times a second against a backlog of
 * 300k queued jobs: each of its reads is an index probe or an index range in order (jobs_app_due_idx for
 * the ring of Apps and an App's jobs, the kind index for the other kinds), never a scan or a sort of the
 * due jobs (the group without an App reads each kind's range on its own; they are merged in JS).
 */
describe('fair claim across Apps', () => {
  const db = new Database(':memory:')
  applyMigrations(db)
  const seen: string[] = []
  const spy = recordingQueries(db, (sql) => seen.push(sql))
  const bound = (sql: string) => plan(db, sql.replace(/\?\d/g, "'x'"))

  test("the ring's next App is one probe, an App's due jobs a range in order, the other kinds each their own range", async () => {
    const { createSqliteJobs } = await import('../src/db/sqlite/jobs')
    seen.length = 0
    createSqliteJobs(spy, ['process', 'batch_release'])
    const next = seen.filter((s) => /^SELECT app_id AS app FROM jobs/.test(s))
    expect(next).toHaveLength(2)
    for (const s of next) expect(bound(s)).toMatch(/^SEARCH jobs USING COVERING INDEX jobs_app_due_idx \(kind=\? AND app_id>\?( AND app_id<\?)?\)$/)
    const app = bound(seen.find((s) => /^SELECT id FROM jobs WHERE kind = 'process' AND app_id = \?1/.test(s))!)
    expect(app).toBe('SEARCH jobs USING INDEX jobs_app_due_idx (kind=? AND app_id=? AND run_after<?)')
    const others = seen.filter((s) => /^SELECT id, run_after FROM jobs WHERE kind = /.test(s)).map(bound)
    expect(others.length).toBeGreaterThanOrEqual(2)
    for (const p of others) {
      expect(p).toMatch(/^SEARCH jobs USING INDEX (jobs_app_due_idx \(kind=\? AND app_id=\? AND run_after<\?\)|jobs_kind_due_idx \(kind=\? AND run_after<\?\))$/)
    }
    expect(others.some((p) => p.includes('jobs_kind_due_idx (kind=? AND run_after<?)'))).toBe(true)
  })
})

/**
 * The sanitize-ahead thread (src/worker/sanitize-ahead.ts) reads a chunk after its cursor every few
 * milliseconds during a 300k-report backlog: through the kind index it read and sorted every `process`
 * job per chunk (measured: its thread at 0.6 ms a report instead of 0.06). And an App's similarity index
 * leaves out reports whose `process` job is still queued: through the kind index that check scanned every
 * queued job once per indexed report.
 */
describe('sanitizing ahead and building an App index during a backlog', () => {
  const db = new Database(':memory:')
  applyMigrations(db)
  const seen: string[] = []
  const spy = recordingQueries(db, (sql) => seen.push(sql))

  test('a chunk is a range of job ids in order, each report found by its id; the head is the first process job by id', async () => {
    const { createSqliteSanitizeAhead } = await import('../src/db/sqlite/sanitize-ahead')
    seen.length = 0
    createSqliteSanitizeAhead(spy)
    const pick = plan(db, seen.find((s) => s.includes('JOIN feedback'))!)
    expect(pick).toContain('SEARCH j USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)')
    expect(pick).toContain('sqlite_autoindex_feedback_1 (id=?)')
    expect(pick).not.toContain('TEMP B-TREE')
    const head = plan(db, seen.find((s) => /ORDER BY id LIMIT 1/.test(s))!)
    expect(head).not.toContain('jobs_kind_due_idx')
    expect(head).not.toContain('TEMP B-TREE')
  })

  test("an App's index build checks each report's queued job by the report's id", async () => {
    const { createSqliteClusterRepo } = await import('../src/db/sqlite/dedup')
    seen.length = 0
    createSqliteClusterRepo(spy)
    const load = plan(db, seen.find((s) => s.includes('NOT EXISTS'))!)
    expect(load).toContain('jobs_feedback_idx (feedback_id=?)')
    expect(load).toContain('feedback_app_id_idx (app_id=?)')
  })
})

/**
 * The webhook dispatcher's pass (5 a second) reads the endpoints behind their Org's newest event: index
 * seeks per Org with live endpoints and a range per Org, no scan of the endpoints (an idle pass at 100 Orgs
 * × 100 endpoints: 0.2 ms, bench/webhook-pass.ts; reading each endpoint, 277 ms).
 */
describe('the webhook dispatcher pass', () => {
  const db = new Database(':memory:')
  applyMigrations(db)

  test('the Orgs are walked by seeks, each Org head one seek, its endpoints behind one range of the live index', async () => {
    const { WEBHOOK_PASS_SQL } = await import('../src/db/sql/webhooks')
    const p = plan(db, WEBHOOK_PASS_SQL.behind)
    expect(p).toContain('SEARCH w USING INDEX webhooks_live_cursor_idx (org_id>?)')
    expect(p).toContain('SEARCH w USING INDEX webhooks_live_cursor_idx (org_id=? AND cursor_seq<?)')
    expect(p).toContain('SEARCH e USING COVERING INDEX events_org_seq_uq (org_id=?)')
    expect(p).not.toMatch(/SCAN (w|webhooks|e|events)\b/)
    const one = plan(db, WEBHOOK_PASS_SQL.behindInOrg('?1'))
    expect(one).toContain('webhooks_live_cursor_idx (org_id=? AND cursor_seq<?)')
    expect(one).not.toMatch(/SCAN (w|e)\b/)
  })

  test("the Slack notifier's pass (every 5 s) reads its connections behind the same way", async () => {
    const { SLACK_PASS_SQL } = await import('../src/db/sql/webhooks')
    const p = plan(db, SLACK_PASS_SQL.behind)
    expect(p).toContain('SEARCH w USING INDEX slack_connections_live_cursor_idx (org_id>?)')
    expect(p).toContain('SEARCH w USING INDEX slack_connections_live_cursor_idx (org_id=? AND cursor_seq<?)')
    expect(p).toContain('SEARCH e USING COVERING INDEX events_org_seq_uq (org_id=?)')
    expect(p).not.toMatch(/SCAN (w|e)\b/)
    expect(plan(db, SLACK_PASS_SQL.behindInOrg('?1'))).toContain('slack_connections_live_cursor_idx (org_id=? AND cursor_seq<?)')
  })
})
