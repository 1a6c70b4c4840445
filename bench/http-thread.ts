/**
 * What one widget submission costs the HTTP thread, as requests per CPU-second of that thread (the task
 * whose id is the process id, utime+stime from /proc): the figure that does not depend on how much of the
 * core the process got on a shared machine. The server runs in this process (worker not started, so only
 * intake runs), wrk loads it from the other core with bench/widget.lua's bodies.
 *
 * A/B in one process: pass a second source tree (e.g. `git worktree add /tmp/main main`, with
 * node_modules and widget/dist present) and both servers start here; wrk loads them in turn, rounds
 * alternate, so load from elsewhere on the machine hits both alike. Each round prints its figure; the
 * summary gives the median per tree.
 *
 * Usage (server thread on core 0, wrk on core 1):
 *   taskset -c 0 bun bench/http-thread.ts [OTHER_TREE] [--rounds 6] [--seconds 4]
 *   taskset -c 0 bun --cpu-prof-md --cpu-prof-dir=P bench/http-thread.ts --rounds 1 --seconds 8   # profile
 * Bounded: rounds × trees wrk runs of `seconds` each, plus a 3 s warm-up per tree.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

const args = process.argv.slice(2)
const option = (name: string, fallback: number): number => {
  const i = args.indexOf(name)
  return i === -1 ? fallback : Number(args[i + 1])
}
const rounds = Math.max(1, Math.min(50, option('--rounds', 6)))
const seconds = Math.max(1, Math.min(60, option('--seconds', 4)))
const other = args.find((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'))
const here = resolve(import.meta.dir, '..')
const trees = other ? [here, resolve(other)] : [here]
const LOAD_CPU = process.env.BENCH_LOAD_CPU ?? '1'

/** CPU seconds of this process's main thread (the HTTP thread), from /proc. */
function threadCpuSeconds(): number {
  const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

interface Target {
  tree: string
  url: string
  key: string
  stop: () => Promise<void>
  dataDir: string
}

async function start(tree: string): Promise<Target> {
  const { loadConfig } = await import(join(tree, 'src/config'))
  const { Logger } = await import(join(tree, 'src/core/logger'))
  const { startServer } = await import(join(tree, 'src/server'))
  const { createTenantsService } = await import(join(tree, 'src/modules/tenants/service'))
  const dataDir = mkdtempSync(join(tmpdir(), 'fixloop-http-thread-'))
  const env = { FIXLOOP_LOG_LEVEL: 'warn', FIXLOOP_RATE_LIMIT_MULTIPLIER: '100000', FIXLOOP_AGENT_SANDBOX: 'off' }
  const config = loadConfig({ host: '127.0.0.1', port: '0', dataDir }, env)
  const server = await startServer(config, { log: new Logger('error'), worker: { autoStart: false } })
  const admin = createTenantsService(server.ctx)
  const org = await admin.createOrg('Bench')
  const app = await admin.createApp(org.id, { name: 'Bench App' })
  return { tree, url: `http://127.0.0.1:${server.port}`, key: app.publicKey, stop: () => server.stop(), dataDir }
}

async function wrk(t: Target, secs: number): Promise<{ requests: number; non2xx: number }> {
  const script = join(here, 'bench/widget.lua')
  const p = Bun.spawn(['taskset', '-c', LOAD_CPU, 'wrk', '-t1', '-c64', `-d${secs}s`, '-s', script, t.url, '--', t.key], { stdout: 'pipe', stderr: 'pipe' })
  const out = await new Response(p.stdout).text()
  await p.exited
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN)
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0)
  return { requests, non2xx }
}

const targets: Target[] = []
for (const tree of trees) targets.push(await start(tree))
try {
  for (const t of targets) await wrk(t, 3)
  const figures: number[][] = targets.map(() => [])
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < targets.length; k++) {
      const cpu0 = threadCpuSeconds()
      const w = await wrk(targets[k], seconds)
      const cpu = threadCpuSeconds() - cpu0
      const perCpuSecond = w.requests / cpu
      figures[k].push(perCpuSecond)
      console.log(
        `round ${r + 1} ${targets[k].tree}: ${w.requests} requests (${w.non2xx} not 2xx), HTTP thread ${cpu.toFixed(2)} CPU-s, ` +
          `${perCpuSecond.toFixed(0)} req per CPU-second (${((cpu * 1e6) / w.requests).toFixed(1)} µs a request), load ${loadavg()[0].toFixed(2)}`,
      )
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const summary = targets.map((t, k) => ({ tree: t.tree, medianReqPerCpuSecond: Math.round(median(figures[k])), medianUsPerRequest: Number((1e6 / median(figures[k])).toFixed(1)) }))
  console.log(`HTTP_THREAD ${JSON.stringify({ rounds, seconds, load: loadavg().map((l) => Number(l.toFixed(2))), summary })}`)
} finally {
  for (const t of targets) {
    await t.stop()
    rmSync(t.dataDir, { recursive: true, force: true })
  }
}
process.exit(0)
