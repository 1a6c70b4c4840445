/**
 * Cluster mode on this machine (issue 23): 1, 2 and 3 `fixloop serve` nodes on one PostgreSQL, one
 * redis-server and s3rver, all on loopback. For each node count, on a fresh database:
 * - intake: POST /v1/feedback spread evenly over the nodes (one load child per node, keep-alive fetch,
 *   NODES_CONCURRENCY requests in flight in all), NODES_SECONDS measured after NODES_WARMUP;
 * - drain: the `process` backlog the burst left, timed until it is empty or NODES_DRAIN_MAX s have passed
 *   (the rate is what was processed in that time):
 *   sanitizing and clustering run on the node holding the `processing` role only;
 * - round trips per submitted report: Redis commands (INFO commandstats, every node's) and PostgreSQL
 *   statements (pg_stat_statements, preloaded by restarting the throw-away server once), over the
 *   measured intake window (the worker's statements included: it runs during the burst, paced);
 * - the event hubs' reads of `event_counters` (the SUM and the full scan, issue 38.4) per submitted report
 *   during intake and per processed report during the drain.
 * On 2 cores this shows the overhead of more nodes, not scaling: every node, PostgreSQL, Redis and the
 * load share the same two cores.
 *
 * Usage: bun bench/nodes.ts
 * NODES_APPS Apps (1 by default) take turns in the submissions: with several, their partitions of Apps
 * (src/nodes/partitions.ts) spread the clustering over the nodes.
 * Env: NODES_COUNTS (1,2,3) NODES_APPS (1) NODES_SECONDS (6) NODES_WARMUP (2) NODES_CONCURRENCY (48)
 *      NODES_MAX_REQUESTS (200000) NODES_WARMUP_REQUESTS (600) NODES_DRAIN_MAX (60) FIXLOOP_BIN (dist/fixloop)
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import type { Subprocess } from 'bun'
import type { Pool } from 'pg'
import { openPool } from '../src/db/pg/client-options'
import { runLoadInChild, type LoadResult } from './pg-floor'
import { cliAsync, freePort, startClusterServices, waitReady } from './cluster-services'

const envInt = (name: string, fallback: number) => (process.env[name] === undefined ? fallback : Number(process.env[name]))
const COUNTS = (process.env.NODES_COUNTS ?? '1,2,3').split(',').map(Number)
const SECONDS = envInt('NODES_SECONDS', 6)
const WARMUP = envInt('NODES_WARMUP', 2)
const CONCURRENCY = envInt('NODES_CONCURRENCY', 48)
const MAX_REQUESTS = envInt('NODES_MAX_REQUESTS', 200_000)
const DRAIN_MAX = envInt('NODES_DRAIN_MAX', 60)
const APPS = envInt('NODES_APPS', 1)
const WARMUP_REQUESTS = envInt('NODES_WARMUP_REQUESTS', 600)
const BIN = process.env.FIXLOOP_BIN ?? join(import.meta.dir, '..', 'dist', 'fixloop')

const log = (line: string) => process.stderr.write(`[nodes ${new Date().toISOString().slice(11, 19)}] ${line}\n`)
const uptime = () => Bun.spawnSync(['uptime']).stdout.toString().trim().replace(/^.*load average/, 'load average')




/** The event hubs' reads of the Orgs' counters since the last reset: the cheap SUM and the full scan. */
async function counterReads(db: Pool): Promise<{ sums: number; scans: number }> {
  const { rows } = await db.query<{ sums: string; scans: string }>(
    `SELECT COALESCE(sum(calls) FILTER (WHERE query LIKE '%SUM(last_seq)%FROM event_counters%'), 0) AS sums,
       COALESCE(sum(calls) FILTER (WHERE query LIKE '%FROM event_counters ORDER BY org_id%'), 0) AS scans
     FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  )
  return { sums: Number(rows[0].sums), scans: Number(rows[0].scans) }
}

/**
 * Round trips Redis has answered so far: top-level commands only (EVALSHA, EVAL, PING …). Commands a
 * script runs inside (TIME, HMGET, HSET, PEXPIRE) are counted by Redis too, but cost no round trip.
 */
async function redisRoundTrips(port: number): Promise<number> {
  const { RedisClient } = await import('bun')
  const c = new RedisClient(`redis://127.0.0.1:${port}`)
  try {
    const info = String(await c.send('INFO', ['commandstats']))
    let n = 0
    for (const m of info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)) if (!['time', 'hmget', 'hset', 'pexpire', 'info'].includes(m[1])) n += Number(m[2])
    return n
  } finally {
    c.close()
  }
}

interface Row {
  nodes: number
  intake: LoadResult
  drain: { backlog: number; seconds: number; rate: number; left: number }
  redisPerReport: number
  pgPerReport: number
  load: string
}

async function main(): Promise<void> {
  const cleanups: (() => Promise<void>)[] = []
  const rows: Row[] = []
  try {
    log(`start; ${uptime()}`)
    const services = await startClusterServices({ statements: true })
    cleanups.push(() => services.stop())
    const { pg, redis, s3Port } = services
    const masterKey = randomBytes(32).toString('hex')

    for (const count of COUNTS) {
      const databaseUrl = await pg.createDatabase(`nodes${count}`)
      const env: Record<string, string> = {
        FIXLOOP_DATABASE_URL: databaseUrl,
        FIXLOOP_REDIS_URL: redis.url,
        FIXLOOP_MASTER_KEY: masterKey,
        FIXLOOP_S3_ENDPOINT: `http://127.0.0.1:${s3Port}`,
        FIXLOOP_S3_BUCKET: 'feedback',
        FIXLOOP_S3_ACCESS_KEY: 'S3RVER',
        FIXLOOP_S3_SECRET_KEY: 'S3RVER',
        FIXLOOP_RATE_LIMIT_MULTIPLIER: '100000',
        FIXLOOP_LOG_LEVEL: 'warn',
      }
      const setupDir = mkdtempSync(join(tmpdir(), 'fixloop-nodes-cli-'))
      const org = await cliAsync(BIN, ['org', 'create', '--name', 'Bench'], env, setupDir)
      const apps: { publicKey: string }[] = []
      for (let i = 0; i < APPS; i++) apps.push(await cliAsync(BIN, ['app', 'create', '--org', org.id, '--name', `Shop ${i}`], env, setupDir))
      const keys = apps.map((a) => a.publicKey).join(',')
      rmSync(setupDir, { recursive: true, force: true })
      const db = openPool(databaseUrl, 2)
      await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements')
      const nodes: { url: string; proc: Subprocess; dir: string }[] = []
      try {
        for (let i = 0; i < count; i++) {
          const port = await freePort()
          const dir = mkdtempSync(join(tmpdir(), 'fixloop-nodes-'))
          const proc = Bun.spawn([BIN, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dir], { env: { ...process.env, ...env }, stdout: 'ignore', stderr: 'inherit' })
          nodes.push({ url: `http://127.0.0.1:${port}`, proc, dir })
        }
        await Promise.all(nodes.map((n) => waitReady(n.url, n.proc)))
        log(`${count} node(s) ready`)
        const spread = (seconds: number, maxRequests = MAX_REQUESTS) =>
          Promise.all(nodes.map((n) => runLoadInChild('post', n.url, keys, { concurrency: Math.max(1, Math.round(CONCURRENCY / count)), maxRequests: Math.ceil(maxRequests / count), maxSeconds: seconds })))
        // A short warm-up (JIT, pools, the App's index), small enough to drain before the measured run.
        await spread(WARMUP, WARMUP_REQUESTS)
        const pending = async () => Number((await db.query("SELECT count(*) AS n FROM jobs WHERE kind = 'process'")).rows[0].n)
        // Start from an empty backlog: the warm-up's reports processed first (bounded).
        for (let i = 0; i < 60 * 5 && (await pending()) > 0; i++) await Bun.sleep(200)
        await db.query('SELECT pg_stat_statements_reset()')
        const redis0 = await redisRoundTrips(redis.port)
        const parts = await spread(SECONDS)
        const redis1 = await redisRoundTrips(redis.port)
        const statements = Number((await db.query(`SELECT COALESCE(sum(calls), 0) AS n FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`)).rows[0].n)
        const intakeCounterReads = await counterReads(db)
        const load = uptime()
        const requests = parts.reduce((n, p) => n + p.requests, 0)
        const intake: LoadResult = {
          requests,
          errors: parts.reduce((n, p) => n + p.errors, 0),
          seconds: Math.max(...parts.map((p) => p.seconds)),
          rps: parts.reduce((n, p) => n + p.rps, 0),
          p50Ms: Math.max(...parts.map((p) => p.p50Ms)),
          p99Ms: Math.max(...parts.map((p) => p.p99Ms)),
        }
        const backlog = await pending()
        await db.query('SELECT pg_stat_statements_reset()')
        const t0 = performance.now()
        let left = backlog
        while (left > 0 && performance.now() - t0 < DRAIN_MAX * 1000) {
          await Bun.sleep(250)
          left = await pending()
        }
        const seconds = (performance.now() - t0) / 1000
        const drain = { backlog, seconds, rate: (backlog - left) / seconds, left }
        // What the processing node asks PostgreSQL per processed report (its first bottleneck).
        const top = await db.query<{ calls: string; query: string }>(
          `SELECT calls, query FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY calls DESC LIMIT 14`,
        )
        const processed = Math.max(1, backlog - left)
        const drainCounterReads = await counterReads(db)
        const perReport = (n: number, per: number) => (n / Math.max(1, per)).toFixed(3)
        log(`${count} node(s) event_counters reads (issue 38.4): intake ${perReport(intakeCounterReads.sums, requests)} SUM + ${perReport(intakeCounterReads.scans, requests)} scans per submitted report; drain ${perReport(drainCounterReads.sums, processed)} SUM + ${perReport(drainCounterReads.scans, processed)} scans per processed report`)
        const drainStatements = top.rows.reduce((n, r) => n + Number(r.calls), 0)
        log(`${count} node(s) drain: ~${(drainStatements / processed).toFixed(1)} statements per processed report (top 14):`)
        for (const r of top.rows) log(`  ${(Number(r.calls) / processed).toFixed(3)}  ${r.query.replace(/\s+/g, ' ').slice(0, 130)}`)
        // Every statement of the drain but this loop's backlog reads, and intake's per second (a per-report
        // figure for intake also moves with the rate: the nodes' background statements are per second).
        const drainAll = Number(
          (await db.query(`SELECT COALESCE(sum(calls), 0) AS n FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE 'SELECT count(*) AS n FROM jobs%'`)).rows[0].n,
        )
        log(`${count} node(s) drain: ${(drainAll / processed).toFixed(3)} statements per processed report in all; intake: ${(statements / intake.seconds).toFixed(0)} statements/s`)
        const row: Row = { nodes: count, intake, drain, redisPerReport: (redis1 - redis0) / Math.max(1, requests), pgPerReport: statements / Math.max(1, requests), load }
        rows.push(row)
        log(`${count} node(s): ${intake.rps.toFixed(0)} req/s (p99 ${intake.p99Ms.toFixed(1)} ms, errors ${intake.errors}), drain ${drain.rate.toFixed(0)} reports/s (${backlog} in ${seconds.toFixed(1)} s, ${left} left), ${row.redisPerReport.toFixed(2)} Redis and ${row.pgPerReport.toFixed(2)} PostgreSQL round trips per report; ${load}`)
      } finally {
        for (const n of nodes) {
          n.proc.kill('SIGTERM')
          await n.proc.exited
          rmSync(n.dir, { recursive: true, force: true })
        }
        await db.end()
      }
    }
    const lines = [
      `nodes: ${new Date().toISOString()}; ${APPS} App(s); ${SECONDS} s measured after ${WARMUP} s warm-up; ${CONCURRENCY} POSTs in flight spread over the nodes; cores: ${navigator.hardwareConcurrency}`,
      'PostgreSQL: test/pg-server.ts (fsync=off, synchronous_commit=off); redis-server and s3rver; loopback, nothing pinned',
      '',
      '| nodes | intake req/s | p99 ms | errors | backlog after the burst | drain reports/s | Redis round trips per report | PostgreSQL statements per report (worker included) | load |',
      '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
      ...rows.map((r) => `| ${r.nodes} | ${r.intake.rps.toFixed(0)} | ${r.intake.p99Ms.toFixed(1)} | ${r.intake.errors} | ${r.drain.backlog} | ${r.drain.rate.toFixed(0)}${r.drain.left > 0 ? ` (${r.drain.left} left at ${DRAIN_MAX} s)` : ''} | ${r.redisPerReport.toFixed(2)} | ${r.pgPerReport.toFixed(2)} | ${r.load} |`),
      '',
      'On 2 cores every node, PostgreSQL, Redis and the load generator share the same cores: more nodes show the overhead of coordination, not scaling.',
    ]
    process.stdout.write(lines.join('\n') + '\n')
  } finally {
    for (const c of cleanups.reverse()) await c().catch((e: Error) => log(`cleanup: ${e.message}`))
  }
}

await main()
