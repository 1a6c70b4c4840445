/**
 * fixloop in PostgreSQL mode against the PostgreSQL same-work floor (bench/pg-floor.ts), in ONE run, on
 * loopback (issue 22): POST /v1/feedback and GET /v1/feedback?limit=50 (the newest page) at 1,000,000
 * stored reports, the same load spec for both servers, and the ratios fixloop/floor.
 *
 * - One PostgreSQL (test/pg-server.ts: a throw-away cluster with fsync=off, synchronous_commit=off,
 *   full_page_writes=off, shared_buffers=64MB: commits cost no disk flush, so this measures CPU and round
 *   trips, not the disk), two databases in it: the floor's and fixloop's. A redis-server and s3rver for
 *   fixloop's cluster-mode dependencies (test/cluster-env.ts's startRedis; s3rver as there).
 * - The floor's database: migrated, one Org/App, 1M reports (preparePgFloorDatabase). fixloop's: the
 *   compiled binary's CLI creates it (`org create`, `key create`, `app create`: migrations, master-key
 *   check value, a real sealed signing secret, an sk_ key), then the same 1M-row fill for that Org/App.
 * - fixloop: `dist/fixloop serve` (or FIXLOOP_BIN) with FIXLOOP_DATABASE_URL, FIXLOOP_REDIS_URL,
 *   FIXLOOP_MASTER_KEY, FIXLOOP_S3_*, FIXLOOP_RATE_LIMIT_MULTIPLIER=100000, FIXLOOP_LOG_LEVEL=warn; its
 *   worker running as in production. One report first, processed before the rounds (the first report
 *   after a start builds the App's similarity index over its newest 100k reports: a one-time cost).
 * - The floor runs in this process (Bun.serve + node-postgres); the load comes from a child process
 *   (runLoadInChild: keep-alive fetch, `concurrency` loops, bounded by count AND time). Nothing is
 *   pinned: PostgreSQL's backends, the server and the load generator share the machine's cores.
 * - Rounds: GET then POST, floor and fixloop taking turns (A/B/A/B), PG_INTAKE_ROUNDS rounds, each a
 *   warm-up (discarded) then the measured run; the best round per server counts. During the floor's
 *   turns fixloop is stopped (SIGSTOP), so its worker draining a POST backlog never takes the floor's CPU.
 *
 * Usage: bun bench/pg-intake.ts
 * Env: PG_INTAKE_ROWS (1000000), PG_INTAKE_SECONDS (8), PG_INTAKE_WARMUP (2), PG_INTAKE_CONCURRENCY (48),
 *      PG_INTAKE_ROUNDS (2), PG_INTAKE_MAX_REQUESTS (500000), PG_FLOOR_POOL (16), FIXLOOP_BIN (dist/fixloop),
 *      PG_INTAKE_STATEMENTS=1 (also count the statements per request with pg_stat_statements, a profile).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { openPool } from '../src/db/pg/client-options'
import { fillFeedback, PUB_KEY, SK_KEY, preparePgFloorDatabase, runLoadInChild, startPgFloor, type LoadResult } from './pg-floor'
import { cliAsync, freePort, startClusterServices, waitReady } from './cluster-services'

const envInt = (name: string, fallback: number) => (process.env[name] === undefined ? fallback : Number(process.env[name]))
const ROWS = envInt('PG_INTAKE_ROWS', 1_000_000)
const SECONDS = envInt('PG_INTAKE_SECONDS', 8)
const WARMUP = envInt('PG_INTAKE_WARMUP', 2)
const CONCURRENCY = envInt('PG_INTAKE_CONCURRENCY', 48)
const ROUNDS = envInt('PG_INTAKE_ROUNDS', 2)
const MAX_REQUESTS = envInt('PG_INTAKE_MAX_REQUESTS', 500_000)
const POOL = envInt('PG_FLOOR_POOL', 16)
const STATEMENTS = process.env.PG_INTAKE_STATEMENTS === '1'
const BIN = process.env.FIXLOOP_BIN ?? join(import.meta.dir, '..', 'dist', 'fixloop')

const log = (line: string) => process.stderr.write(`[pg-intake ${new Date().toISOString().slice(11, 19)}] ${line}\n`)
const uptime = () => Bun.spawnSync(['uptime']).stdout.toString().trim()




interface Statements {
  calls: number
  top: { calls: number; query: string }[]
}

async function main(): Promise<void> {
  const cleanups: (() => Promise<void>)[] = []
  try {
    log(`start; ${uptime()}`)
    const services = await startClusterServices({ statements: STATEMENTS })
    cleanups.push(() => services.stop())
    const { pg, redis, s3Port } = services
    log(`PostgreSQL (fsync=off), redis-server and s3rver up`)

    // --- the floor's database ----------------------------------------------------------------------
    const floorUrl = await pg.createDatabase('pgfloor')
    await preparePgFloorDatabase(floorUrl, ROWS, log)

    // --- fixloop's database: the CLI sets it up as an operator would, then the same fill -------------
    const fixloopUrl = await pg.createDatabase('fixloop')
    const dataDir = mkdtempSync(join(tmpdir(), 'fixloop-pg-intake-'))
    cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }))
    const env: Record<string, string> = {
      FIXLOOP_DATABASE_URL: fixloopUrl,
      FIXLOOP_REDIS_URL: redis.url,
      FIXLOOP_MASTER_KEY: randomBytes(32).toString('hex'),
      FIXLOOP_S3_ENDPOINT: `http://127.0.0.1:${s3Port}`,
      FIXLOOP_S3_BUCKET: 'feedback',
      FIXLOOP_S3_ACCESS_KEY: 'S3RVER',
      FIXLOOP_S3_SECRET_KEY: 'S3RVER',
      FIXLOOP_RATE_LIMIT_MULTIPLIER: '100000',
      FIXLOOP_LOG_LEVEL: 'warn',
    }
    const org = await cliAsync(BIN, ['org', 'create', '--name', 'Bench'], env, dataDir)
    const key = await cliAsync(BIN, ['key', 'create', '--org', org.id], env, dataDir)
    const app = await cliAsync(BIN, ['app', 'create', '--org', org.id, '--name', 'Shop'], env, dataDir)
    const tenant = { orgId: org.id as string, appId: app.id as string, pub: app.publicKey as string, sk: key.key as string }
    const admin = openPool(fixloopUrl, 2)
    cleanups.push(() => admin.end())
    await fillFeedback(admin, tenant.orgId, tenant.appId, ROWS, (l) => log(l.replace('pg-floor', 'fixloop db')))

    // --- the servers ------------------------------------------------------------------------------------
    const floor = startPgFloor({ databaseUrl: floorUrl, poolSize: POOL })
    cleanups.push(() => floor.stop())
    const port = await freePort()
    const fixloopBase = `http://127.0.0.1:${port}`
    const proc = Bun.spawn([BIN, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir], {
      env: { ...process.env, ...env },
      stdout: 'inherit',
      stderr: 'inherit',
    })
    cleanups.push(async () => {
      proc.kill('SIGCONT')
      proc.kill('SIGTERM')
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000)
      await proc.exited
      clearTimeout(timer)
    })
    await waitReady(fixloopBase, proc)
    log(`floor on ${floor.url}, fixloop (${BIN}) on ${fixloopBase}`)

    // Steady state: one report, processed (the App's similarity index is built on the first one).
    const first = await fetch(`${fixloopBase}/v1/feedback`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.pub}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'warm-up report: the checkout button does nothing' }),
    })
    if (first.status !== 201) throw new Error(`fixloop answered the warm-up report with ${first.status}: ${await first.text()}`)
    const pendingJobs = async () => Number((await admin.query("SELECT count(*) AS n FROM jobs WHERE kind = 'process'")).rows[0].n)
    for (let i = 0; i < 600 && (await pendingJobs()) > 0; i++) await Bun.sleep(200)
    log(`warm-up report processed (jobs left: ${await pendingJobs()})`)

    // --- the rounds ----------------------------------------------------------------------------------
    const o = { concurrency: CONCURRENCY, maxRequests: MAX_REQUESTS }
    const results: Record<string, { result: LoadResult; uptime: string }[]> = {}
    const only = (who: 'floor' | 'fixloop') => proc.kill(who === 'fixloop' ? 'SIGCONT' : 'SIGSTOP')
    const stats = STATEMENTS ? openPool(pg.adminUrl.replace(/\/postgres$/, new URL(fixloopUrl).pathname), 1) : undefined
    if (stats) {
      cleanups.push(() => stats.end())
      await stats.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements').catch((e: Error) => log(`pg_stat_statements: ${e.message}`))
    }
    const statementsPerRequest: Record<string, Statements> = {}
    for (const [scenario, kind] of [['GET newest', 'get'], ['POST', 'post']] as const) {
      for (let round = 1; round <= ROUNDS; round++) {
        for (const who of ['floor', 'fixloop'] as const) {
          only(who)
          const base = who === 'floor' ? floor.url : fixloopBase
          const auth = kind === 'post' ? (who === 'floor' ? PUB_KEY : tenant.pub) : who === 'floor' ? SK_KEY : tenant.sk
          await runLoadInChild(kind, base, auth, { ...o, maxSeconds: WARMUP })
          const reset = stats && who === 'fixloop' && round === 1 ? await stats.query('SELECT pg_stat_statements_reset()').then(() => true, () => false) : false
          const result = await runLoadInChild(kind, base, auth, { ...o, maxSeconds: SECONDS })
          const at = uptime()
          ;(results[`${scenario} ${who}`] ??= []).push({ result, uptime: at })
          log(`${scenario} ${who} round ${round}: ${result.rps.toFixed(0)} req/s, p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms, errors ${result.errors}; ${at}`)
          if (reset && stats) {
            const { rows } = await stats.query<{ calls: number; query: string }>(
              `SELECT calls, query FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY calls DESC LIMIT 15`,
            )
            const calls = rows.reduce((n, r) => n + Number(r.calls), 0)
            statementsPerRequest[scenario] = { calls, top: rows.map((r) => ({ calls: Number(r.calls), query: r.query.replace(/\s+/g, ' ').slice(0, 140) })) }
            log(`${scenario} fixloop: ${(calls / Math.max(1, result.requests)).toFixed(2)} statements per request (worker included)`)
            for (const r of rows) log(`  ${(Number(r.calls) / Math.max(1, result.requests)).toFixed(2)}/req  ${r.query.replace(/\s+/g, ' ').slice(0, 140)}`)
          }
        }
      }
    }
    only('fixloop')
    log(`fixloop's process backlog after the POST rounds: ${await pendingJobs()} jobs`)

    // --- the report ------------------------------------------------------------------------------------
    const best = (name: string) => results[name]!.reduce((a, b) => (b.result.rps > a.result.rps ? b : a))
    const lines = [
      `pg-intake: ${new Date().toISOString()}; ${ROWS} rows; concurrency ${CONCURRENCY}; ${WARMUP} s warm-up + ${SECONDS} s measured per turn; ${ROUNDS} rounds (A/B), best round per server; floor pool ${POOL}`,
      `PostgreSQL ${(await admin.query('SHOW server_version')).rows[0].server_version} (test/pg-server.ts: fsync=off, synchronous_commit=off, full_page_writes=off, shared_buffers=64MB), loopback, nothing pinned; cores: ${navigator.hardwareConcurrency}`,
      '',
      '| scenario | server | requests | errors | req/s | p50 ms | p99 ms | uptime at the end of the round |',
      '| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |',
    ]
    for (const scenario of ['POST', 'GET newest']) {
      for (const who of ['floor', 'fixloop']) {
        const { result: r, uptime: at } = best(`${scenario} ${who}`)
        lines.push(`| ${scenario} | ${who} | ${r.requests} | ${r.errors} | ${r.rps.toFixed(0)} | ${r.p50Ms.toFixed(2)} | ${r.p99Ms.toFixed(2)} | ${at.replace(/^.*load average/, 'load average')} |`)
      }
    }
    const post = { floor: best('POST floor').result, fixloop: best('POST fixloop').result }
    const get = { floor: best('GET newest floor').result, fixloop: best('GET newest fixloop').result }
    const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED')
    const postRps = post.fixloop.rps / post.floor.rps
    const postP99 = post.fixloop.p99Ms / post.floor.p99Ms
    const getRps = get.fixloop.rps / get.floor.rps
    lines.push(
      '',
      `POST req/s fixloop/floor: ${postRps.toFixed(2)}x (target >= 1.0x): ${verdict(postRps >= 1)}`,
      `POST p99 fixloop/floor:   ${postP99.toFixed(2)}x (target <= 1.5x): ${verdict(postP99 <= 1.5)}`,
      `GET req/s fixloop/floor:  ${getRps.toFixed(2)}x (target >= 0.8x): ${verdict(getRps >= 0.8)}`,
      `every round: ${Object.entries(results).map(([k, rs]) => `${k} ${rs.map((r) => r.result.rps.toFixed(0)).join('/')}`).join('; ')}`,
    )
    process.stdout.write(lines.join('\n') + '\n')
    if (process.argv.includes('--json')) process.stdout.write(JSON.stringify({ results, ratios: { postRps, postP99, getRps }, statementsPerRequest }) + '\n')
  } finally {
    for (const c of cleanups.reverse()) await c().catch((e: Error) => log(`cleanup: ${e.message}`))
  }
}

await main()
