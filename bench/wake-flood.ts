/**
 * Forged wake-ups against cluster nodes (docs/security.md, the attack on session 36): anyone who can
 * publish on the Redis channel can pose as a live node (its id is in every message), and a job-kind or
 * `events` wake-up sends a node's workers claiming (a read of the jobs table) or its event hub reading the
 * outbox's counters. Two `fixloop serve` nodes (the compiled binary) on one PostgreSQL with
 * pg_stat_statements, a redis-server and s3rver; each node's id is forged by turns (a node ignores its own),
 * so both nodes hear every other message. For each binary, three windows of WINDOW_MS: quiet, a flood of
 * `process`, a flood of plain `events`; for each, the messages published and the statements that read the
 * jobs table and the event counters (pg_stat_statements calls, both nodes).
 *
 * Prints `WAKE_FLOOD {...}` per binary. Usage:
 *   BENCH_BASELINE_BIN=/path/to/old/fixloop bun bench/wake-flood.ts [WINDOW_MS=2000]
 * (FIXLOOP_BIN: the binary measured, default dist/fixloop.) Bounded: WINDOW_MS at most 10,000; every wait
 * bounded; the nodes and services are stopped at the end.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { RedisClient } from 'bun'
import { openPool } from '../src/db/pg/client-options'
import { freePort, startClusterServices, waitReady, nodeEnv } from './cluster-services'

const WINDOW_MS = Math.min(10_000, Number(process.argv[2] ?? 2_000))
const BIN = process.env.FIXLOOP_BIN ?? join(import.meta.dir, '..', 'dist', 'fixloop')
const bins = [...(process.env.BENCH_BASELINE_BIN ? [['baseline', process.env.BENCH_BASELINE_BIN]] : []), ['measured', BIN]]
const log = (line: string) => process.stderr.write(`[wake-flood ${new Date().toISOString().slice(11, 19)}] ${line}\n`)

const services = await startClusterServices({ statements: true })
try {
  for (const [name, bin] of bins) {
    const url = await services.pg.createDatabase(`flood_${name}`, { migrated: true })
    const db = openPool(url, 2)
    await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements')
    const env = nodeEnv(services, url, { FIXLOOP_LOG_LEVEL: 'warn' })
    const nodes: { proc: ReturnType<typeof Bun.spawn>; dir: string }[] = []
    try {
      for (let i = 0; i < 2; i++) {
        const dir = mkdtempSync(join(tmpdir(), 'fixloop-flood-'))
        const port = await freePort()
        const proc = Bun.spawn([bin, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dir], { env: { ...process.env, ...env }, stdout: 'ignore', stderr: 'inherit' })
        nodes.push({ proc, dir })
        await waitReady(`http://127.0.0.1:${port}`, proc)
      }
      // Each node hears the other from its next beat on (it must be alive in the database then).
      await Bun.sleep(6_000)
      const ids = (await db.query<{ id: string }>('SELECT id FROM cluster_nodes ORDER BY id')).rows.map((r) => r.id)
      if (ids.length < 2) throw new Error(`nodes in the database: ${ids.length}`)
      const dbid = '(SELECT oid FROM pg_database WHERE datname = current_database())'
      const reads = async () => {
        const rows = (await db.query<{ calls: string; query: string }>(`SELECT calls, query FROM pg_stat_statements WHERE dbid = ${dbid} AND query NOT LIKE '%pg_stat_statements%'`)).rows
        const sum = (re: RegExp) => rows.filter((r) => re.test(r.query)).reduce((n, r) => n + Number(r.calls), 0)
        if (process.env.WAKE_FLOOD_SHOW) for (const r of rows.filter((r) => /\bjobs\b|event_counters/i.test(r.query))) log(`${r.calls}x ${r.query.replace(/\s+/g, ' ').slice(0, 160)}`)
        return { jobs: sum(/\bjobs\b/i), counters: sum(/event_counters/i), all: sum(/./) }
      }
      const window = async (what: string | null) => {
        await db.query('SELECT pg_stat_statements_reset()')
        const began = performance.now()
        let sent = 0
        if (what) {
          const pub = new RedisClient(services.redis.url)
          await pub.connect()
          while (performance.now() - began < WINDOW_MS) {
            const batch: Promise<unknown>[] = []
            for (let i = 0; i < 1_000; i++) batch.push(pub.send('PUBLISH', ['fixloop:wake', `${ids[sent++ % 2]} ${what}`]))
            await Promise.all(batch)
          }
          pub.close()
        } else await Bun.sleep(WINDOW_MS)
        const ms = performance.now() - began
        // What the nodes were asked meanwhile reaches the database a moment later.
        await Bun.sleep(200)
        const r = await reads()
        const perS = (n: number) => Math.round((n * 1000) / ms)
        return { sent, ms: Math.round(ms), jobsReads: r.jobs, jobsPerS: perS(r.jobs), counterReads: r.counters, counterPerS: perS(r.counters), statements: r.all }
      }
      const quiet = await window(null)
      const process_ = await window('process')
      await Bun.sleep(1_000)
      const events = await window('events')
      process.stdout.write(`WAKE_FLOOD ${JSON.stringify({ bin: name, windowMs: WINDOW_MS, quiet, process: process_, events })}\n`)
    } finally {
      for (const n of nodes) {
        n.proc.kill('SIGTERM')
        await Promise.race([n.proc.exited, Bun.sleep(10_000)])
        if (n.proc.exitCode === null) n.proc.kill('SIGKILL')
        rmSync(n.dir, { recursive: true, force: true })
      }
      await db.end()
    }
    log(`${name} done`)
  }
} finally {
  await services.stop()
}
