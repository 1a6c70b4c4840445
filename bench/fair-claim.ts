/**
 * Issue 38: the cost of one claim against a huge backlog, fair (src/db/fair-claim.ts) and in plain queue
 * order, on both dialects, with the query plans. The backlog: App A with BACKLOG due `process` jobs (a
 * broken release), 20 more Apps with 5 each, and 20 Apps whose only job is a batch window closing later.
 * Each side claims with the processing thread's kinds: single claims (`claim`), then batches of 511
 * (`claimBatch`, the drain's batch size less the one claimed first), each claim's jobs finished at once.
 *
 * Prints `FAIR_CLAIM {...}`: µs per single claim and per batched job for the fair claim, and the same for
 * the queue-order statements it falls back to (the claim of the versions before issue 38), and the
 * share of App A in the first 100 jobs claimed. The plans go to stdout before it.
 *
 * Usage: bun bench/fair-claim.ts [BACKLOG=100000] [sqlite|pg|both]
 */
import { Database } from 'bun:sqlite'
import { applyMigrations } from '../src/db/sqlite/migrate'
import { createSqliteJobs } from '../src/db/sqlite/jobs'
import { createPgJobs } from '../src/db/pg/jobs'
import { openPool } from '../src/db/pg/client-options'
import { pgStorage } from '../src/db/pg/storage'
import { startPostgres } from '../test/pg-server'
import { loadavg } from 'node:os'

const BACKLOG = Number(process.argv[2] ?? 100_000)
const WHICH = process.argv[3] ?? 'both'
const KINDS = ['process', 'batch_release'] as const
const LEASE = 60_000
const SINGLES = 2000
const BATCHES = 20

/** The backlog's rows as one INSERT's VALUES, in chunks (ids in queue order: A's flood first). */
function backlogRows(now: number): string[] {
  const rows: string[] = []
  for (let i = 0; i < BACKLOG; i++) rows.push(`('process', 'A-${i}', 'appA', ${now - 60_000}, ${now - 60_000})`)
  for (let a = 0; a < 20; a++) for (let i = 0; i < 5; i++) rows.push(`('process', 'S${a}-${i}', 'app${String(a).padStart(2, '0')}', ${now - 1000}, ${now - 1000})`)
  for (let a = 0; a < 20; a++) rows.push(`('batch_release', NULL, 'win${String(a).padStart(2, '0')}', ${now + 3_600_000}, ${now})`)
  const chunks: string[] = []
  for (let i = 0; i < rows.length; i += 5000) chunks.push(`INSERT INTO jobs (kind, feedback_id, app_id, run_after, created_at) VALUES ${rows.slice(i, i + 5000).join(', ')}`)
  return chunks
}

type Jobs = {
  claim(now: number, leaseMs: number, owner: string): unknown
  claimBatch(kind: string, n: number, now: number, leaseMs: number, owner: string): unknown
  finish(id: number): unknown
}

async function measure(jobs: Jobs, now: number): Promise<{ singleUs: number; batchUsPerJob: number; firstHundredA: number }> {
  const first: string[] = []
  let t0 = performance.now()
  for (let i = 0; i < SINGLES; i++) {
    const job = (await jobs.claim(now, LEASE, 'bench')) as { id: number; app_id: string } | null
    if (!job) break
    if (first.length < 100) first.push(job.app_id)
    await jobs.finish(job.id)
  }
  const singleUs = ((performance.now() - t0) * 1000) / SINGLES
  let n = 0
  t0 = performance.now()
  for (let i = 0; i < BATCHES; i++) {
    const batch = (await jobs.claimBatch('process', 511, now, LEASE, 'bench')) as { id: number }[]
    n += batch.length
    for (const j of batch) await jobs.finish(j.id)
  }
  return { singleUs: Math.round(singleUs), batchUsPerJob: Number((((performance.now() - t0) * 1000) / Math.max(1, n)).toFixed(1)), firstHundredA: first.filter((a) => a === 'appA').length }
}

async function sqliteSide(): Promise<Record<string, unknown>> {
  const db = new Database(':memory:')
  applyMigrations(db)
  const now = Date.now()
  const seeded = () => {
    db.run('DELETE FROM jobs')
    for (const chunk of backlogRows(now)) db.run(chunk)
  }
  // The plans, read from the statements the repo prepares.
  const seen: string[] = []
  const spy = Object.assign(Object.create(db), { query: (sql: string) => (seen.push(sql), db.query(sql)) }) as Database
  createSqliteJobs(spy, [...KINDS])
  seeded()
  db.run('ANALYZE')
  for (const sql of new Set(seen.filter((s) => /^SELECT (app_id AS app|id|id, run_after) FROM jobs WHERE kind = '/.test(s)))) {
    const bound = sql.replace(/\?(\d)/g, (_, k) => ({ '1': "'appA'", '2': String(now), '3': '511', '4': "'bench'" })[k as '1'] ?? 'NULL')
    const plan = (db.query(`EXPLAIN QUERY PLAN ${bound}`).all() as { detail: string }[]).map((r) => r.detail)
    console.log(`-- SQLite: ${sql.replace(/\s+/g, ' ').slice(0, 160)}…\n   ${plan.join('\n   ')}`)
  }
  const fair = await measure(createSqliteJobs(db, [...KINDS]), now)
  seeded()
  // The statements before issue 38 (what the fair claim falls back to): the queue-order claim alone.
  const plain = createSqliteJobs(db, [...KINDS])
  const legacy = legacyOf(db, now)
  const before = await measure({ ...plain, claim: legacy.claim, claimBatch: legacy.claimBatch }, now)
  return { fair, queueOrder: before }
}

/** The SQLite claim statements of the versions before issue 38, verbatim. */
function legacyOf(db: Database, _now: number) {
  const claim = db.query(
    `UPDATE jobs SET lease_until = $leaseUntil, lease_owner = $owner, attempts = attempts + 1
     WHERE id = (SELECT id FROM jobs WHERE run_after <= $now AND (lease_until IS NULL OR lease_until < $now) AND +kind IN ('process', 'batch_release')
                 ORDER BY run_after, id LIMIT 1)
     RETURNING *`,
  )
  const anyDue = db.query(`SELECT 1 FROM jobs WHERE run_after <= $now AND (lease_until IS NULL OR lease_until < $now) AND +kind IN ('process', 'batch_release') LIMIT 1`)
  const batch = db.query(
    `UPDATE jobs SET lease_until = $leaseUntil, lease_owner = $owner, attempts = attempts + 1
     WHERE id IN (SELECT id FROM jobs WHERE kind = $kind AND run_after <= $now AND (lease_until IS NULL OR lease_until < $now)
                  ORDER BY run_after, id LIMIT $n)
     RETURNING *`,
  )
  return {
    claim: (now: number, leaseMs: number, owner: string) => (anyDue.get({ now }) === null ? null : claim.get({ now, leaseUntil: now + leaseMs, owner })),
    claimBatch: (kind: string, n: number, now: number, leaseMs: number, owner: string) => batch.all({ kind, n, now, leaseUntil: now + leaseMs, owner }),
  }
}

async function pgSide(): Promise<Record<string, unknown>> {
  const server = await startPostgres()
  const url = await server.createDatabase('fair', { migrated: true })
  const pool = openPool(url, 4)
  try {
    const now = Date.now()
    const seeded = async () => {
      await pool.query('DELETE FROM jobs')
      for (const chunk of backlogRows(now)) await pool.query(chunk)
      await pool.query('VACUUM ANALYZE jobs')
    }
    await seeded()
    const storage = pgStorage(pool, { callerClock: true })
    const jobs = createPgJobs(storage, [...KINDS])
    // The plan of the fair claim (EXPLAIN ANALYZE inside a transaction rolled back: nothing leased).
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      // The statement text as the repo sends it: captured from the pool's first query.
      const sent: string[] = []
      const spyPool = new Proxy(pool, { get: (t, k) => (k === 'query' ? (q: unknown, p: unknown) => (sent.push(typeof q === 'string' ? q : (q as { text: string }).text), t.query(q as string, p as unknown[])) : Reflect.get(t, k)) })
      await createPgJobs({ ...storage, pool: spyPool } as typeof storage, [...KINDS]).claimBatch('process', 511, now, LEASE, 'explain')
      await pool.query('UPDATE jobs SET lease_until = NULL, lease_owner = NULL, attempts = 0')
      // As the processing worker's claim() sends it: one job, the group without an App holding batch releases.
      const plan = await client.query(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) ${sent[0]}`, [now, LEASE, 'explain', ['batch_release'], 1, 'appA', 1 + 32])
      console.log(`-- PostgreSQL: claim() (n = 1, cursor appA) with ${BACKLOG} due jobs of App A\n   ${plan.rows.map((r) => r['QUERY PLAN']).join('\n   ')}`)
      await client.query('ROLLBACK')
    } finally {
      client.release()
    }
    const fair = await measure(jobs, now)
    await seeded()
    const legacyClaim = `WITH clock AS (SELECT $1::bigint AS now),
      next AS (SELECT id FROM jobs WHERE run_after <= (SELECT now FROM clock) AND (lease_until IS NULL OR lease_until < (SELECT now FROM clock))
        AND ($4::text[] IS NULL OR kind = ANY($4::text[])) ORDER BY run_after, id LIMIT $5 FOR UPDATE SKIP LOCKED)
      UPDATE jobs j SET lease_until = (SELECT now FROM clock) + $2::bigint, lease_owner = $3, attempts = j.attempts + 1 FROM next WHERE j.id = next.id RETURNING j.*`
    const before = await measure({
      claim: async (n, l, o) => (await pool.query(legacyClaim, [n, l, o, [...KINDS], 1])).rows[0] ?? null,
      claimBatch: async (k, m, n, l, o) => (await pool.query(legacyClaim, [n, l, o, [k], m])).rows,
      finish: (id) => jobs.finish(id),
    }, now)
    return { fair, queueOrder: before }
  } finally {
    await pool.end()
    await server.stop()
  }
}

const out: Record<string, unknown> = { backlog: BACKLOG, load: loadavg().map((l) => Number(l.toFixed(2))) }
if (WHICH !== 'pg') out.sqlite = await sqliteSide()
if (WHICH !== 'sqlite') out.pg = await pgSide()
console.log(`FAIR_CLAIM ${JSON.stringify(out)}`)
