/**
 * A reporter's erasure on PostgreSQL (POST /v1/reporters/erase): where a batch's time goes and how long a
 * large reporter takes. An in-process server in PostgreSQL mode (bench/cluster-services.ts: a throw-away
 * PostgreSQL with fsync off and pg_stat_statements, redis-server, s3rver; workers not started) over a
 * seeded Org as a busy one looks: BACKGROUND reports of 40,000 other reporters (a tenth of them
 * duplicates), each with its `feedback.created` event, an idempotency record for a third, a mail row
 * for a tenth; the reporter's N reports among them (by email and externalUserId), a tenth of them leads
 * of another reporter's duplicate, a tenth duplicates of another's lead, a tenth resolved (its
 * `feedback.resolved` event names them).
 *
 * Prints `PG_ERASE {...}` (the erasure's seconds, ms per 1,000 reports, statements per batch), the
 * statements that took the most time, and EXPLAIN ANALYZE of the batch's read of the reporter's ids.
 * Bounded: N at most 100,000, the background at most 1,000,000, one erasure.
 *
 * Usage: bun bench/pg-erase.ts [N=10000] [BACKGROUND=300000]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../src/config'
import { Logger } from '../src/core/logger'
import { startServer } from '../src/runtime/server'
import { createTenantsService } from '../src/modules/tenants/service'
import { openPool } from '../src/db/pg/client-options'
import { startClusterServices, nodeEnv } from './cluster-services'
import { cleanup, compact } from '../src/db/sql/report-removal'
import { PG_ERASE_BATCH } from '../src/db/pg/reporters'

const N = Math.min(100_000, Number(process.argv[2] ?? 10_000))
const BACKGROUND = Math.min(1_000_000, Number(process.argv[3] ?? 300_000))
const EMAIL = 'Erin.Erasable@example.com'
const UID = 'erin-4471'

const log = (line: string) => process.stderr.write(`[pg-erase ${new Date().toISOString().slice(11, 19)}] ${line}\n`)

const services = await startClusterServices({ statements: true })
const dataDir = mkdtempSync(join(tmpdir(), 'fixloop-pg-erase-'))
try {
  const url = await services.pg.createDatabase('erase', { migrated: true })
  const env = nodeEnv(services, url, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100000' })
  const config = loadConfig({ host: '127.0.0.1', port: '0', dataDir }, env)
  const server = await startServer(config, { log: new Logger('silent'), worker: { autoStart: false } })
  const db = openPool(url, 2)
  try {
    const admin = createTenantsService(server.ctx)
    const org = await admin.createOrg('Erase')
    const app = await admin.createApp(org.id, { name: 'Erase App' })
    const key = await admin.createKey(org.id, 'bench')
    const total = BACKGROUND + N
    log(`seeding ${BACKGROUND} reports of others and ${N} of the reporter`)
    // Ids as intake makes them (8 hex digits of the second, then random), ascending with time over 60 days;
    // every (BACKGROUND / N)th report is the reporter's.
    const every = Math.max(1, Math.floor(total / N))
    const t0s = Math.floor(Date.now() / 1000) - 60 * 86400
    const seed = `
      WITH s AS (SELECT g, (${t0s} + g::bigint * (60 * 86400) / ${total})::bigint AS sec, (g % ${every} = 0 AND g / ${every} < ${N}) AS hers FROM generate_series(0, ${total - 1}) g)
      INSERT INTO feedback (id, org_id, app_id, status, version, text, submitted_mode, external_user_id, email, redactions, created_at, updated_at, processed_at)
      SELECT lpad(to_hex(sec), 8, '0') || lpad(to_hex(g), 16, '0'), $1, $2, CASE WHEN g % 10 = 3 THEN 'resolved' ELSE 'awaiting_manual' END, 3,
        'The checkout page is slow, report ' || g, 'public',
        CASE WHEN hers THEN '${UID}' ELSE 'user-' || (g % 40000) END,
        CASE WHEN hers THEN '${EMAIL}' ELSE 'user' || (g % 40000) || '@example.com' END, '{}', sec * 1000, sec * 1000, sec * 1000
      FROM s`
    await db.query(seed, [org.id, app.id])
    // Clusters: every 10th report (g % 10 = 1) is a duplicate of the report 5 before it (g % 10 = 6 of the previous ten).
    await db.query(`WITH r AS (SELECT id, row_number() OVER (ORDER BY id COLLATE "C") - 1 AS g FROM feedback WHERE org_id = $1)
      UPDATE feedback f SET duplicate_of_id = l.id FROM r d JOIN r l ON l.g = d.g - 5 WHERE f.id = d.id AND d.g % 10 = 1 AND d.g >= 5`, [org.id])
    await db.query(`UPDATE feedback f SET duplicate_count = c.n FROM (SELECT duplicate_of_id AS id, count(*) AS n FROM feedback WHERE duplicate_of_id IS NOT NULL GROUP BY 1) c WHERE f.id = c.id`)
    await db.query(`INSERT INTO events (id, org_id, app_id, seq, type, data, created_at, feedback_id)
      SELECT 'e' || f.id, f.org_id, f.app_id, row_number() OVER (ORDER BY f.id COLLATE "C"), 'feedback.created', '{"status":"received"}', f.created_at, f.id FROM feedback f`)
    await db.query(`INSERT INTO events (id, org_id, app_id, seq, type, data, created_at, feedback_id)
      SELECT 'r' || f.id, f.org_id, f.app_id, ${total} + row_number() OVER (ORDER BY f.id COLLATE "C"), 'feedback.resolved', json_build_object('externalUserId', f.external_user_id)::text, f.created_at + 1, f.id FROM feedback f WHERE status = 'resolved'`)
    await db.query(`INSERT INTO idempotency_keys (app_id, key, request_hash, status_code, response_body, created_at)
      SELECT app_id, 'k' || id, 'h', 201, '{"id":"' || id || '","status":"received"}', created_at FROM feedback WHERE right(id, 1) IN ('0', '5', 'a', 'f')`)
    await db.query(`INSERT INTO mail_outbox (feedback_id, org_id, app_id, email_hash, email_masked, state, next_attempt_at, created_at)
      SELECT id, org_id, app_id, md5(lower(email)), 'u***@example.com', 'sent', 0, created_at FROM feedback WHERE status = 'resolved'`)
    await db.query('VACUUM ANALYZE')
    const mine = Number((await db.query('SELECT count(*) AS n FROM feedback WHERE external_user_id = $1', [UID])).rows[0].n)
    log(`${total} reports, ${mine} of the reporter; erasing`)

    await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements')
    const plan = (await db.query(`EXPLAIN (ANALYZE, BUFFERS) SELECT id FROM feedback WHERE org_id = $1 AND LOWER(email) = LOWER($2) ORDER BY id COLLATE "C" DESC LIMIT 200`, [org.id, EMAIL])).rows.map((r) => r['QUERY PLAN'])
    // A batch's removal statements, EXPLAIN ANALYZEd on the reporter's newest batch and rolled back: the slowest.
    const batch = (await db.query(`SELECT id FROM feedback WHERE org_id = $1 AND external_user_id = $2 ORDER BY id COLLATE "C" DESC LIMIT 200`, [org.id, UID])).rows.map((r) => r.id)
    const dialect = { ids: '(SELECT unnest($1::text[]))', org: '$2', scrubbedEventData: `(data::jsonb || '{"externalUserId": null}'::jsonb)::text`, pairs: 'unnest($3::text[], $4::text[]) AS p(lead, next)' }
    const explained: { ms: number; sql: string; plan: string[] }[] = []
    const client = await db.connect()
    try {
      await client.query('BEGIN')
      for (const text of cleanup(dialect)) {
        const { sql, pick } = compact(text, '$')
        const rows = (await client.query(`EXPLAIN (ANALYZE) ${sql}`, pick([batch, org.id]))).rows.map((r) => r['QUERY PLAN'] as string)
        const ms = Number(/Execution Time: ([\d.]+)/.exec(rows[rows.length - 1])?.[1] ?? 0)
        explained.push({ ms, sql: sql.replace(/\s+/g, ' ').slice(0, 110), plan: rows })
      }
    } finally {
      await client.query('ROLLBACK')
      client.release()
    }
    await db.query('SELECT pg_stat_statements_reset()')
    const t0 = performance.now()
    const res = await fetch(`${server.url}/v1/reporters/erase`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ email: EMAIL }) })
    const body = (await res.json()) as { erased?: number }
    const seconds = (performance.now() - t0) / 1000
    if (res.status !== 200 || body.erased !== mine) throw new Error(`erase: ${res.status} ${JSON.stringify(body)} (expected ${mine})`)
    const dbid = '(SELECT oid FROM pg_database WHERE datname = current_database())'
    const own = "query NOT LIKE '%pg_stat_statements%'"
    const batches = Math.ceil(mine / PG_ERASE_BATCH)
    const calls = Number((await db.query(`SELECT COALESCE(sum(calls), 0) AS n FROM pg_stat_statements WHERE dbid = ${dbid} AND ${own}`)).rows[0].n)
    const top = (await db.query(`SELECT calls, round(total_exec_time::numeric, 1) AS ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 140) AS query FROM pg_stat_statements WHERE dbid = ${dbid} AND ${own} ORDER BY total_exec_time DESC LIMIT 10`)).rows
    const result = { reporter: mine, reports: total, seconds: Number(seconds.toFixed(2)), msPer1000: Math.round((seconds * 1e6) / mine), statementsPerBatch: Number((calls / batches).toFixed(1)) }
    process.stdout.write(`PG_ERASE ${JSON.stringify(result)}\n`)
    for (const r of top) process.stdout.write(`  ${String(r.ms).padStart(9)} ms ${String(r.calls).padStart(6)}x  ${r.query}\n`)
    process.stdout.write(`EXPLAIN ANALYZE of a batch's read of the reporter's ids (before the erasure):\n${plan.map((l) => `  ${l}`).join('\n')}\n`)
    explained.sort((a, b) => b.ms - a.ms)
    process.stdout.write(`EXPLAIN ANALYZE of one batch's cleanup statements (rolled back), the 3 slowest of ${explained.length}:\n`)
    for (const e of explained.slice(0, 3)) process.stdout.write(`  ${e.ms} ms  ${e.sql}\n${e.plan.map((l) => `      ${l}`).join('\n')}\n`)
    await db.end()
    await server.stop()
  } catch (e) {
    await db.end().catch(() => {})
    await server.stop().catch(() => {})
    throw e
  }
} finally {
  await services.stop()
  rmSync(dataDir, { recursive: true, force: true })
}
