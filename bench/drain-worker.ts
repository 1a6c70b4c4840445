/**
 * The worker's work per report, alone: an in-process server (real SQLite data dir in a temp dir, worker not
 * started) takes N widget reports over loopback (the 64 bodies of bench/widget.lua, cycled, so a burst makes
 * a few huge clusters), then `worker.tick()` drains the `process` backlog on this thread while the clock and
 * the process's CPU time are read. No HTTP load runs during the drain: the figure is the worker's own cost.
 *
 * Prints `DRAIN_WORKER {...}`: reports, seconds, reports/s, CPU seconds, reports per CPU-second, the load
 * average, and the clusters the drain made (leads, largest cluster) so a faster run can be checked to have
 * done the same work. Bounded: N reports (default 4000), the drain stops after MAX_SECONDS (default 60).
 *
 * `DRAIN_CORPUS=1`: the bodies are the labelled corpora's 763 reports instead (test/fixtures: short end-user
 * notes with their pages, components and console errors, and long technical reports), in a fixed shuffled
 * order; each pass after the first adds a line to every text ("Seen again …", outside the title), so a
 * burst is realistic: few exact repeats, clusters of paraphrases, many singletons.
 *
 * Usage: bun bench/drain-worker.ts [N=4000] [MAX_SECONDS=60]
 *   profile the drain alone: bun bench/drain-worker.ts 4000 60 --seed-only /tmp/d   (intake, then exit)
 *                            bun --cpu-prof-md --cpu-prof-dir=P bench/drain-worker.ts 0 60 --drain-only /tmp/d
 */
import { readFileSync, rmSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { loadConfig } from '../src/config'
import { Logger } from '../src/core/logger'
import { startServer } from '../src/runtime/server'
import { createTenantsService } from '../src/modules/tenants/service'
import { bodies, corpusBodies } from './drain-bodies'
import { sqliteOf } from '../test/sqlite-of'

/** CPU seconds of this process's main thread (the one draining), from /proc: other threads (GC, checkpoints) apart. */
function threadCpuSeconds(): number {
  try {
    const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return NaN
  }
}

const N = Number(process.argv[2] ?? 4000)
const MAX_MS = Number(process.argv[3] ?? 60) * 1000
const mode = process.argv[4] as '--seed-only' | '--drain-only' | undefined
const givenDir = process.argv[5]
if (mode && !givenDir) throw new Error(`${mode} needs a data dir`)
const CONCURRENCY = 32

const corpus = process.env.DRAIN_CORPUS === '1' && mode !== '--drain-only' ? corpusBodies(N) : null

const dataDir = givenDir ?? mkdtempSync(join(tmpdir(), 'fixloop-drain-'))
const config = loadConfig({ host: '127.0.0.1', port: '0', dataDir }, { FIXLOOP_LOG_LEVEL: 'silent', FIXLOOP_RATE_LIMIT_MULTIPLIER: '100000', FIXLOOP_AGENT_SANDBOX: 'off' })
const server = await startServer(config, { log: new Logger('silent'), worker: { autoStart: false } })
try {
  const admin = createTenantsService(server.ctx)
  const org = mode === '--drain-only' ? null : await admin.createOrg('Drain')
  const app = org ? await admin.createApp(org.id, { name: 'Drain App' }) : { publicKey: '' }
  const headers = { authorization: `Bearer ${app.publicKey}`, 'content-type': 'application/json', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0' }

  // Intake: N reports, CONCURRENCY in flight (bounded by N).
  let sent = 0
  let failed = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (sent < N && mode !== '--drain-only') {
        const body = corpus ? corpus[sent++] : bodies[sent++ % bodies.length]
        const res = await fetch(`${server.url}/v1/feedback`, { method: 'POST', headers, body })
        if (res.status !== 201) failed++
        await res.arrayBuffer()
      }
    }),
  )
  if (failed > 0) throw new Error(`${failed} submissions failed`)
  const sqlite = sqliteOf(server.ctx)
  const backlog = () => (sqlite.query("SELECT count(*) AS n FROM jobs WHERE kind = 'process'").get() as { n: number }).n
  const start = backlog()
  if (mode === '--seed-only') {
    process.stdout.write(`seeded ${start} process jobs into ${dataDir}\n`)
    process.exit(0)
  }

  // Drain: the worker's own loop, on this thread, bounded in time.
  const cpu0 = process.cpuUsage()
  const thread0 = threadCpuSeconds()
  const t0 = performance.now()
  while (backlog() > 0 && performance.now() - t0 < MAX_MS) await server.worker.tick(500)
  const seconds = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  const cpuSeconds = (cpu.user + cpu.system) / 1e6
  const threadSeconds = threadCpuSeconds() - thread0
  const done = start - backlog()
  const clusters = sqlite
    .query("SELECT count(*) AS leads, max(duplicate_count) AS largest FROM feedback WHERE duplicate_of_id IS NULL AND status <> 'received'")
    .get() as { leads: number; largest: number }
  process.stdout.write(
    `DRAIN_WORKER ${JSON.stringify({
      reports: done,
      left: start - done,
      seconds: Number(seconds.toFixed(2)),
      rate: Math.round(done / seconds),
      cpuSeconds: Number(cpuSeconds.toFixed(2)),
      perCpuSecond: Math.round(done / cpuSeconds),
      msPerReport: Number(((cpuSeconds * 1000) / done).toFixed(3)),
      drainThreadCpuSeconds: Number(threadSeconds.toFixed(2)),
      perDrainThreadCpuSecond: Math.round(done / threadSeconds),
      load: loadavg().map((l) => Number(l.toFixed(2))),
      cpus: cpus().length,
      ...clusters,
    })}\n`,
  )
  if (process.env.DRAIN_DEBUG) console.log(sqlite.query("SELECT substr(text, 85, 11) AS t, count(*) AS leads, sum(duplicate_count) AS dups FROM feedback WHERE duplicate_of_id IS NULL GROUP BY 1 ORDER BY 2 DESC LIMIT 70").all())
} finally {
  await server.stop()
  if (!givenDir) rmSync(dataDir, { recursive: true, force: true })
}
