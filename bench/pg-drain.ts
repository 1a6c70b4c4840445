/**
 * The PostgreSQL processing engine's work per report, alone (issue 38), beside the embedded one's: an
 * in-process server in PostgreSQL mode (a throw-away PostgreSQL with fsync off and pg_stat_statements,
 * redis-server and s3rver: bench/cluster-services.ts; workers not started) takes N reports over loopback,
 * then the `processing` worker drains the backlog on this thread (`tick`), as the node holding the
 * processing role does, while the clock, this process's CPU time and PostgreSQL's statements are read.
 * Then the same N reports through bench/drain-worker.ts (embedded SQLite, a child process), for the ratio.
 *
 * Prints `PG_DRAIN {...}`: reports, seconds, reports/s, CPU seconds of this process and of PostgreSQL's
 * processes (every `postgres` process on the machine: run it on a quiet one), statements per
 * processed report (every statement PostgreSQL ran during the drain, BEGIN/COMMIT included), the busiest
 * statements by calls and by execution time (pg_stat_statements), the clusters made; then `EMBEDDED {...}`
 * and the ratio PostgreSQL / embedded.
 *
 * Usage: bun bench/pg-drain.ts [N=20000] [MAX_SECONDS=120]
 * Env: DRAIN_CORPUS=1 (the labelled corpora's long varied reports instead of the widget burst: see
 *      bench/drain-bodies.ts), PG_DRAIN_EMBEDDED=0 (skip the embedded run).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../src/config'
import { Logger } from '../src/core/logger'
import { startServer } from '../src/runtime/server'
import { createTenantsService } from '../src/modules/tenants/service'
import { openPool } from '../src/db/pg/client-options'
import { startClusterServices, nodeEnv } from './cluster-services'
import { bodies, corpusBodies } from './drain-bodies'

const N = Number(process.argv[2] ?? 20_000)
const MAX_MS = Number(process.argv[3] ?? 120) * 1000
const CONCURRENCY = 32
const corpus = process.env.DRAIN_CORPUS === '1' ? corpusBodies(N) : null
/** CPU seconds of every `postgres` process on the machine (the throw-away server's backends; run on a quiet machine). */
function postgresCpuSeconds(): number {
  let ticks = 0
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      if (!stat.includes('(postgres)')) continue
      const fields = stat.split(') ')[1].split(' ')
      ticks += Number(fields[11]) + Number(fields[12])
    } catch {
      // Gone meanwhile.
    }
  }
  return ticks / 100
}

const log = (line: string) => process.stderr.write(`[pg-drain ${new Date().toISOString().slice(11, 19)}] ${line}\n`)

const services = await startClusterServices({ statements: true })
const dataDir = mkdtempSync(join(tmpdir(), 'fixloop-pg-drain-'))
try {
  const url = await services.pg.createDatabase('drain')
  const env = nodeEnv(services, url, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100000' })
  const config = loadConfig({ host: '127.0.0.1', port: '0', dataDir }, env)
  const server = await startServer(config, { log: new Logger('silent'), worker: { autoStart: false } })
  const db = openPool(url, 2)
  try {
    const admin = createTenantsService(server.ctx)
    const org = await admin.createOrg('Drain')
    const app = await admin.createApp(org.id, { name: 'Drain App' })
    const headers = { authorization: `Bearer ${app.publicKey}`, 'content-type': 'application/json', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0' }
    let sent = 0
    let failed = 0
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (sent < N) {
          const body = corpus ? corpus[sent++] : bodies[sent++ % bodies.length]
          const res = await fetch(`${server.url}/v1/feedback`, { method: 'POST', headers, body })
          if (res.status !== 201) failed++
          await res.arrayBuffer()
        }
      }),
    )
    if (failed > 0) throw new Error(`${failed} submissions failed`)
    const backlog = async () => Number((await db.query("SELECT count(*) AS n FROM jobs WHERE kind = 'process'")).rows[0].n)
    const start = await backlog()
    log(`${start} reports queued; draining`)
    const worker = server.services.processingWorker
    if (!worker) throw new Error('no processing worker in PostgreSQL mode')
    // The worker claims only the Apps of the partitions its node holds (src/nodes/partitions.ts), and the
    // server takes none with its workers off: this node takes them all (alone, its share is every one).
    const partitions = server.services.partitions
    await partitions?.start()
    while (partitions && partitions.partitions().length === 0) await Bun.sleep(50)
    await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements')
    await db.query('SELECT pg_stat_statements_reset()')
    const cpu0 = process.cpuUsage()
    const pgCpu0 = postgresCpuSeconds()
    const t0 = performance.now()
    let left = start
    while (left > 0 && performance.now() - t0 < MAX_MS) {
      await worker.tick(1000)
      left = await backlog()
    }
    const seconds = (performance.now() - t0) / 1000
    const cpu = process.cpuUsage(cpu0)
    const pgCpu = postgresCpuSeconds() - pgCpu0
    const done = start - left
    const dbid = '(SELECT oid FROM pg_database WHERE datname = current_database())'
    // The backlog reads of this loop are the bench's own: not counted.
    const own = "query NOT LIKE 'SELECT count(*) AS n FROM jobs%' AND query NOT LIKE '%pg_stat_statements%'"
    const total = Number((await db.query(`SELECT COALESCE(sum(calls), 0) AS n FROM pg_stat_statements WHERE dbid = ${dbid} AND ${own}`)).rows[0].n)
    const top = (await db.query(`SELECT calls, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS query FROM pg_stat_statements WHERE dbid = ${dbid} AND ${own} ORDER BY calls DESC LIMIT 12`)).rows
    const clusters = (await db.query("SELECT count(*)::int AS leads, max(duplicate_count)::int AS largest FROM feedback WHERE duplicate_of_id IS NULL AND status <> 'received'")).rows[0]
    const result = {
      reports: done,
      left,
      seconds: Number(seconds.toFixed(2)),
      rate: Math.round(done / seconds),
      cpuSeconds: Number(((cpu.user + cpu.system) / 1e6).toFixed(2)),
      msPerReport: Number(((cpu.user + cpu.system) / 1e3 / Math.max(1, done)).toFixed(3)),
      postgresCpuSeconds: Number(pgCpu.toFixed(2)),
      postgresMsPerReport: Number(((pgCpu * 1000) / Math.max(1, done)).toFixed(3)),
      statementsPerReport: Number((total / Math.max(1, done)).toFixed(3)),
      load: loadavg().map((l) => Number(l.toFixed(2))),
      cpus: cpus().length,
      ...clusters,
    }
    process.stdout.write(`PG_DRAIN ${JSON.stringify(result)}\n`)
    for (const r of top) process.stdout.write(`  ${(Number(r.calls) / Math.max(1, done)).toFixed(4)}/report  ${r.query}\n`)
    // Where PostgreSQL's time went: a statement whose plan turned into a scan shows here first (a count does not move).
    const slowest = (await db.query(`SELECT calls, total_exec_time AS ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 100) AS query FROM pg_stat_statements WHERE dbid = ${dbid} AND ${own} ORDER BY total_exec_time DESC LIMIT 10`)).rows
    process.stdout.write('PostgreSQL execution time, busiest statements:\n')
    for (const r of slowest) process.stdout.write(`  ${(Number(r.ms) / Math.max(1, done)).toFixed(4)} ms/report  ${(Number(r.ms) / Number(r.calls)).toFixed(2)} ms x ${r.calls}  ${r.query}\n`)
    await db.end()
    await server.stop()
    if (process.env.PG_DRAIN_EMBEDDED !== '0') {
      const child = Bun.spawn(['bun', join(import.meta.dir, 'drain-worker.ts'), String(N), String(MAX_MS / 1000)], { env: { ...process.env }, stdout: 'pipe', stderr: 'inherit' })
      const out = await new Response(child.stdout).text()
      await child.exited
      const line = out.split('\n').find((l) => l.startsWith('DRAIN_WORKER '))
      if (line) {
        const embedded = JSON.parse(line.slice('DRAIN_WORKER '.length))
        process.stdout.write(`EMBEDDED ${JSON.stringify(embedded)}\n`)
        process.stdout.write(`RATIO PostgreSQL/embedded drain: ${(result.rate / embedded.rate).toFixed(2)} (${result.rate} vs ${embedded.rate} reports/s)\n`)
      }
    }
  } catch (e) {
    await db.end().catch(() => {})
    await server.stop().catch(() => {})
    throw e
  }
} finally {
  await services.stop()
  rmSync(dataDir, { recursive: true, force: true })
}
