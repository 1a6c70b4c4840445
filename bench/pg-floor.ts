/**
 * The PostgreSQL same-work floor (issue 22): what Bun + node-postgres alone do for fixloop's two hot
 * routes, so fixloop's PostgreSQL mode can be read against the machine and the database rather than
 * against another design. The twin of bench/floor-server.ts (the SQLite floor).
 *
 * - Bun.serve on 127.0.0.1, no framework; a node-postgres pool opened like fixloop's (`openPool`);
 * - the tables are fixloop's own: a fresh database migrated with the real PostgreSQL migrations;
 * - POST /v1/feedback: bearer check (string compare), JSON parse, text and URL checks, then exactly ONE
 *   transaction (BEGIN, INSERT the report, INSERT its `process` job, COMMIT) on one pooled connection,
 *   statements prepared once per connection (named); 201 JSON after COMMIT;
 * - GET /v1/feedback?limit=50[&cursor=ID]: bearer check, the newest rows of one App by keyset
 *   (`app_id = $1 [AND id < $2] ORDER BY id DESC LIMIT 51`, index feedback_app_id_idx), mapped to
 *   fixloop's JSON item shape, nextCursor; over 1,000,000 rows filled with INSERT … SELECT generate_series.
 *
 * `bun bench/pg-floor.ts` starts its own PostgreSQL (test/pg-server.ts), fills it, loads the floor from a
 * child process (keep-alive fetch, bounded by count AND time) and prints req/s, p50 and p99. The pieces
 * are exported so a later bench can run fixloop in PostgreSQL mode beside the floor and print ratios.
 *
 * Env: PG_FLOOR_ROWS (1000000), PG_FLOOR_SECONDS (8, measured per scenario), PG_FLOOR_WARMUP (2),
 * PG_FLOOR_CONCURRENCY (48), PG_FLOOR_POOL (16), PG_FLOOR_MAX_REQUESTS (500000), PG_FLOOR_URL (use this
 * database instead of starting PostgreSQL: it must be empty; it is migrated and filled).
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import type { Pool, PoolClient } from 'pg'
import { openPool } from '../src/db/pg/client-options'
import { applyPgMigrations } from '../src/db/pg/migrate'

export const ORG_ID = '00000000a0a0a0a0a0000001'
export const APP_ID = '00000000b0b0b0b0b0000001'
export const PUB_KEY = 'pub_pgfloor0000000000000000000000'
export const SK_KEY = 'sk_pgfloor00000000000000000000000000'

const ID_RE = /^[0-9a-f]{24}$/
const JSON_HEADERS = { 'content-type': 'application/json' }
const fail = (status: number, code: string) => new Response(`{"error":{"code":"${code}","message":"${code}"}}`, { status, headers: JSON_HEADERS })

const processRandom = randomBytes(5).toString('hex')
let counter = randomBytes(3).readUIntBE(0, 3)
/** fixloop's id layout: 4-byte seconds, 5 random bytes, 3-byte counter (hex). */
function newId(nowMs: number): string {
  counter = (counter + 1) & 0xffffff
  return (Math.floor(nowMs / 1000) >>> 0).toString(16).padStart(8, '0') + processRandom + counter.toString(16).padStart(6, '0')
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

interface Row {
  id: string
  app_id: string
  status: string
  submitted_mode: string
  external_user_id: string | null
  email: string | null
  submitter_name: string | null
  severity: string | null
  text: string
  url: string | null
  created_at: number
  processed_at: number | null
  merge_request_url: string | null
  duplicate_of_id: string | null
  duplicate_count: number
  theme: string | null
  consolidated_text: string | null
  last_duplicate_at: number | null
}

function toItem(r: Row) {
  return {
    id: r.id,
    appId: r.app_id,
    status: r.status,
    submittedBy: { mode: r.submitted_mode, externalUserId: r.external_user_id, email: r.email, name: r.submitter_name },
    severity: r.severity,
    text: r.text,
    url: r.url,
    createdAt: iso(r.created_at),
    processedAt: iso(r.processed_at),
    mergeRequestUrl: r.merge_request_url,
    duplicateOfId: r.duplicate_of_id,
    duplicateCount: r.duplicate_count,
    theme: r.theme,
    consolidatedText: r.consolidated_text,
    lastDuplicateAt: iso(r.last_duplicate_at),
  }
}

/**
 * Migrates the (empty) database at `url` with fixloop's PostgreSQL migrations, adds one Org and one App,
 * and fills `feedback` with `rows` reports of that App (ids ascending over 90 days, like bench/seed.ts).
 */
export async function preparePgFloorDatabase(url: string, rows: number, log: (line: string) => void = () => {}): Promise<void> {
  const pool = openPool(url, 2)
  try {
    await applyPgMigrations(pool)
    const now = Date.now()
    await pool.query('INSERT INTO orgs (id, name, created_at) VALUES ($1, $2, $3)', [ORG_ID, 'Floor', now])
    await pool.query(
      `INSERT INTO apps (id, org_id, slug, name, public_key, signing_secret_enc, created_at, updated_at) VALUES ($1, $2, 'floor', 'Floor', $3, 'v1:none', $4, $4)`,
      [APP_ID, ORG_ID, PUB_KEY, now],
    )
    await fillFeedback(pool, ORG_ID, APP_ID, rows, log)
    const plan = await pool.query(`EXPLAIN SELECT ${COLS} FROM feedback WHERE app_id = $1 AND duplicate_of_id IS NULL ORDER BY id DESC LIMIT 51`, [APP_ID])
    log(`pg-floor: GET plan: ${plan.rows.map((r) => String(r['QUERY PLAN']).trim()).join(' / ')}`)
  } finally {
    await pool.end()
  }
}

/**
 * Fills `feedback` with `rows` reports of one App (status awaiting_manual, ids ascending over 90 days in
 * fixloop's layout), dropping the table's indexes first and rebuilding them after (the same definitions).
 * Used for the floor's database and, by bench/pg-intake.ts, for fixloop's own.
 */
export async function fillFeedback(pool: Pool, orgId: string, appId: string, rows: number, log: (line: string) => void = () => {}): Promise<void> {
  const now = Date.now()
  const started = performance.now()
  // The primary key and the indexes are built once after the fill rather than maintained row by row
  // (several times faster); the same definitions are recreated: the table ends up as the migrations made it.
  const secondary = await pool.query<{ name: string; def: string }>(
    `SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'feedback' AND indexname <> 'feedback_pkey'`,
  )
  for (const i of secondary.rows) await pool.query(`DROP INDEX "${i.name}"`)
  await pool.query('ALTER TABLE feedback DROP CONSTRAINT feedback_pkey')
  const start = Math.floor(now / 1000) - 90 * 86_400
  const chunk = 250_000
  for (let from = 1; from <= rows; from += chunk) {
    const to = Math.min(rows, from + chunk - 1)
    // One statement per chunk: ids are <seconds><10 fixed hex><counter>, ascending with g.
    await pool.query(
      `INSERT INTO feedback (id, org_id, app_id, status, severity, text, url, user_agent, submitted_mode, created_at, updated_at)
       SELECT lpad(to_hex(s), 8, '0') || 'f100f100f1' || lpad(to_hex(g), 6, '0'), $1, $2, 'awaiting_manual',
              (ARRAY['low','medium','high'])[1 + g % 3],
              'The ' || (ARRAY['checkout button','chart','search box','login form','invoice PDF'])[1 + g % 5] || ' ' ||
              (ARRAY['does not respond','is cut off on mobile','shows the wrong total','loads forever'])[1 + g % 4] || ' (report ' || g || ')',
              'https://shop.example/p/' || (g % 500), 'Mozilla/5.0 (X11; Linux x86_64)', 'public', s::bigint * 1000, s::bigint * 1000
       FROM (SELECT g, $3::bigint + (g::bigint * 90 * 86400) / $4::bigint AS s FROM generate_series($5::int, $6::int) AS g) AS t`,
      [orgId, appId, start, rows, from, to],
    )
    log(`pg-floor: filled ${to}/${rows} rows`)
  }
  await pool.query("SET maintenance_work_mem = '256MB'")
  await pool.query('ALTER TABLE feedback ADD CONSTRAINT feedback_pkey PRIMARY KEY (id)')
  for (const i of secondary.rows) await pool.query(i.def)
  await pool.query('ANALYZE feedback')
  await pool.query('ANALYZE jobs')
  log(`pg-floor: ${rows} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`)
}

export interface PgFloor {
  url: string
  port: number
  pool: Pool
  stop(): Promise<void>
}

const COLS = 'id, app_id, status, submitted_mode, external_user_id, email, submitter_name, severity, text, url, created_at, processed_at, merge_request_url, duplicate_of_id, duplicate_count, theme, consolidated_text, last_duplicate_at'

/** Starts the floor server on 127.0.0.1 (`port` 0: any free port) over the prepared database at `databaseUrl`. */
export function startPgFloor(opts: { databaseUrl: string; port?: number; poolSize?: number }): PgFloor {
  const pool = openPool(opts.databaseUrl, opts.poolSize ?? 16)
  const pubAuth = `Bearer ${PUB_KEY}`
  const skAuth = `Bearer ${SK_KEY}`
  // Named statements: each connection parses and plans them once, then only binds and executes.
  const insertFeedback = {
    name: 'floor_insert_feedback',
    text: `INSERT INTO feedback (id, org_id, app_id, status, severity, text, url, user_agent, viewport, console_logs, metadata, submitted_mode, created_at, updated_at)
           VALUES ($1, $2, $3, 'received', $4, $5, $6, $7, $8, $9, $10, 'public', $11, $11)`,
  }
  const insertJob = { name: 'floor_insert_job', text: `INSERT INTO jobs (kind, feedback_id, app_id, run_after, created_at) VALUES ('process', $1, $2, $3, $3)` }
  const newest = { name: 'floor_newest', text: `SELECT ${COLS} FROM feedback WHERE app_id = $1 AND duplicate_of_id IS NULL ORDER BY id DESC LIMIT $2` }
  const after = { name: 'floor_after', text: `SELECT ${COLS} FROM feedback WHERE app_id = $1 AND duplicate_of_id IS NULL AND id < $2 ORDER BY id DESC LIMIT $3` }

  async function post(req: Request): Promise<Response> {
    if (req.headers.get('authorization') !== pubAuth) return fail(401, 'unknown_app')
    let parsed: unknown
    try {
      parsed = await req.json()
    } catch {
      return fail(400, 'invalid_body')
    }
    if (typeof parsed !== 'object' || parsed === null) return fail(400, 'invalid_body')
    const { text, url, severity, viewport, consoleLogs, metadata } = parsed as Record<string, unknown>
    if (typeof text !== 'string' || text.length < 1 || text.length > 8192) return fail(400, 'invalid_body')
    if (url !== undefined && (typeof url !== 'string' || url.length > 2048 || !URL.canParse(url))) return fail(400, 'invalid_body')
    const now = Date.now()
    const id = newId(now)
    const client: PoolClient = await pool.connect()
    let broken: Error | undefined
    try {
      // Exactly one transaction: the report and its job commit together, then the 201.
      await client.query('BEGIN')
      await client.query({
        ...insertFeedback,
        values: [
          id, ORG_ID, APP_ID, typeof severity === 'string' ? severity : null, text, (url as string | undefined) ?? null,
          req.headers.get('user-agent')?.slice(0, 512) ?? null,
          viewport === undefined ? null : JSON.stringify(viewport),
          consoleLogs === undefined ? null : JSON.stringify(consoleLogs),
          metadata === undefined ? null : JSON.stringify(metadata),
          now,
        ],
      })
      await client.query({ ...insertJob, values: [id, APP_ID, now] })
      await client.query('COMMIT')
    } catch (e) {
      await client.query('ROLLBACK').catch((err: Error) => (broken = err))
      return fail(500, 'internal')
    } finally {
      client.release(broken)
    }
    return new Response(JSON.stringify({ id, status: 'received' }), { status: 201, headers: JSON_HEADERS })
  }

  async function list(req: Request, url: URL): Promise<Response> {
    if (req.headers.get('authorization') !== skAuth) return fail(401, 'invalid_authorization')
    const limitText = url.searchParams.get('limit')
    const limit = limitText === null ? 50 : Number(limitText)
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) return fail(400, 'invalid_body')
    const cursor = url.searchParams.get('cursor')
    if (cursor !== null && !ID_RE.test(cursor)) return fail(400, 'invalid_body')
    const result = cursor === null
      ? await pool.query<Row>({ ...newest, values: [APP_ID, limit + 1] })
      : await pool.query<Row>({ ...after, values: [APP_ID, cursor, limit + 1] })
    const rows = result.rows
    const more = rows.length > limit
    const page = more ? rows.slice(0, limit) : rows
    return new Response(JSON.stringify({ data: page.map(toItem), nextCursor: more ? page[page.length - 1]!.id : null }), { headers: JSON_HEADERS })
  }

  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: opts.port ?? 0,
    fetch(req) {
      const url = new URL(req.url)
      if (url.pathname === '/v1/feedback') {
        if (req.method === 'POST') return post(req)
        if (req.method === 'GET') return list(req, url)
      }
      if (url.pathname === '/healthz') return new Response('ok')
      return fail(404, 'route_not_found')
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}`,
    port: server.port!,
    pool,
    async stop() {
      server.stop(true)
      await pool.end()
    },
  }
}

/** One request of a load: method, path, headers and body (a function of the request's number). */
export interface LoadSpec {
  base: string
  method: 'GET' | 'POST'
  path: (i: number) => string
  /** The same for every request, or request `i`'s (several keys taking turns). */
  headers: Record<string, string> | ((i: number) => Record<string, string>)
  body?: (i: number) => string
  /** Requests in flight at once (32-64 is the range fixloop's benches use). */
  concurrency: number
  /** Bounds: whichever comes first. */
  maxRequests: number
  maxSeconds: number
  /** The status a success answers with. */
  okStatus: number
}

export interface LoadResult {
  requests: number
  errors: number
  seconds: number
  rps: number
  p50Ms: number
  p99Ms: number
}

const percentile = (sorted: Float64Array, p: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!)

/** Keep-alive fetch from this process, `concurrency` loops, bounded by count and time; latencies of successes. */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const latencies = new Float64Array(spec.maxRequests)
  let ok = 0
  let errors = 0
  let issued = 0
  const started = performance.now()
  const deadline = started + spec.maxSeconds * 1000
  const loop = async () => {
    while (issued < spec.maxRequests && performance.now() < deadline) {
      const i = issued++
      const t0 = performance.now()
      try {
        const headers = typeof spec.headers === 'function' ? spec.headers(i) : spec.headers
        const res = await fetch(spec.base + spec.path(i), { method: spec.method, headers, body: spec.body?.(i), keepalive: true })
        await res.arrayBuffer()
        if (res.status === spec.okStatus) latencies[ok++] = performance.now() - t0
        else errors++
      } catch {
        errors++
      }
    }
  }
  await Promise.all(Array.from({ length: spec.concurrency }, loop))
  const seconds = (performance.now() - started) / 1000
  const sorted = latencies.subarray(0, ok).sort()
  return { requests: ok, errors, seconds, rps: ok / seconds, p50Ms: percentile(sorted, 0.5), p99Ms: percentile(sorted, 0.99) }
}

const BODIES = Array.from({ length: 64 }, (_, i) =>
  JSON.stringify({ text: `The checkout button does nothing on step ${i}: clicking it shows a spinner forever`, url: `https://shop.example/p/${i}` }),
)

/**
 * POST /v1/feedback with the floor's public key (fixloop: an App's pub_ key; several, comma-separated, take
 * turns: several Apps), 64 bodies cycled.
 */
export function postSpec(base: string, auth: string, o: { concurrency: number; maxRequests: number; maxSeconds: number }): LoadSpec {
  const keys = auth.split(',').map((key) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' }))
  return { base, method: 'POST', path: () => '/v1/feedback', headers: (i) => keys[i % keys.length]!, body: (i) => BODIES[i % BODIES.length]!, okStatus: 201, ...o }
}

/** GET /v1/feedback?limit=50 (the newest page) with the floor's sk_ key (fixloop: an Org's sk_ key). */
export function getSpec(base: string, auth: string, o: { concurrency: number; maxRequests: number; maxSeconds: number }): LoadSpec {
  return { base, method: 'GET', path: () => '/v1/feedback?limit=50', headers: { authorization: `Bearer ${auth}` }, okStatus: 200, ...o }
}

/**
 * Runs a load in a child process (`bun bench/pg-floor.ts --load`), so the load generator does not share
 * the server's JavaScript thread. Functions cannot cross the process boundary: POST and GET are named.
 */
export async function runLoadInChild(kind: 'post' | 'get', base: string, auth: string, o: { concurrency: number; maxRequests: number; maxSeconds: number }): Promise<LoadResult> {
  const proc = Bun.spawn(['bun', join(import.meta.dir, 'pg-floor.ts'), '--load', JSON.stringify({ kind, base, auth, ...o })], { stdout: 'pipe', stderr: 'inherit' })
  const out = await new Response(proc.stdout).text()
  if ((await proc.exited) !== 0) throw new Error(`the load child failed: ${out}`)
  return JSON.parse(out) as LoadResult
}

const envInt = (name: string, fallback: number) => {
  const v = process.env[name]
  return v === undefined ? fallback : Number(v)
}

async function main(): Promise<void> {
  const rows = envInt('PG_FLOOR_ROWS', 1_000_000)
  const seconds = envInt('PG_FLOOR_SECONDS', 8)
  const warmup = envInt('PG_FLOOR_WARMUP', 2)
  const concurrency = envInt('PG_FLOOR_CONCURRENCY', 48)
  const maxRequests = envInt('PG_FLOOR_MAX_REQUESTS', 500_000)
  const log = (line: string) => process.stderr.write(line + '\n')
  let stopPg = async () => {}
  let databaseUrl = process.env.PG_FLOOR_URL
  if (!databaseUrl) {
    const { startPostgres } = await import('../test/pg-server')
    const pg = await startPostgres()
    stopPg = () => pg.stop()
    databaseUrl = await pg.createDatabase('pgfloor')
    log('pg-floor: PostgreSQL started (test/pg-server.ts: fsync=off, synchronous_commit=off, shared_buffers=64MB)')
  }
  const floor = { stop: async () => {} } as Pick<PgFloor, 'stop'>
  try {
    await preparePgFloorDatabase(databaseUrl, rows, log)
    const server = startPgFloor({ databaseUrl, poolSize: envInt('PG_FLOOR_POOL', 16) })
    floor.stop = () => server.stop()
    const results: Record<string, LoadResult> = {}
    for (const [name, kind, auth] of [['POST', 'post', PUB_KEY], ['GET newest', 'get', SK_KEY]] as const) {
      await runLoadInChild(kind, server.url, auth, { concurrency, maxRequests, maxSeconds: warmup })
      results[name] = await runLoadInChild(kind, server.url, auth, { concurrency, maxRequests, maxSeconds: seconds })
    }
    const uptime = Bun.spawnSync(['uptime']).stdout.toString().trim()
    const lines = [
      `pg-floor: ${rows} rows, concurrency ${concurrency}, ${seconds} s per scenario (after ${warmup} s warm-up), pool ${envInt('PG_FLOOR_POOL', 16)}`,
      `uptime: ${uptime}`,
      '| scenario | requests | errors | req/s | p50 ms | p99 ms |',
      '| --- | ---: | ---: | ---: | ---: | ---: |',
      ...Object.entries(results).map(([name, r]) => `| ${name} | ${r.requests} | ${r.errors} | ${r.rps.toFixed(0)} | ${r.p50Ms.toFixed(2)} | ${r.p99Ms.toFixed(2)} |`),
    ]
    process.stdout.write(lines.join('\n') + '\n')
    if (process.argv.includes('--json')) process.stdout.write(JSON.stringify({ rows, concurrency, seconds, uptime, results }) + '\n')
  } finally {
    await floor.stop()
    await stopPg()
  }
}

if (import.meta.main) {
  const at = process.argv.indexOf('--load')
  if (at >= 0) {
    const o = JSON.parse(process.argv[at + 1]!) as { kind: 'post' | 'get'; base: string; auth: string; concurrency: number; maxRequests: number; maxSeconds: number }
    const spec = (o.kind === 'post' ? postSpec : getSpec)(o.base, o.auth, o)
    process.stdout.write(JSON.stringify(await runLoad(spec)) + '\n')
  } else {
    await main()
  }
}
