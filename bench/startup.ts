/**
 * CPU of a CLI command's and a server start's cold start: user+sys of the process (its threads included),
 * the median of BENCH_STARTUP_RUNS runs (default 7) per binary, the binaries taking turns so the machine's
 * load hits each alike. Nothing here is part of the test suite.
 *
 *   bun bench/startup.ts                                          # dist/fixloop
 *   BENCH_BASELINE_BIN=/tmp/fixloop-old bun bench/startup.ts      # before (baseline) and after, side by side
 *
 * Bounded: every command is killed after 20 s; a server is given 5 s to answer /healthz, then SIGTERM.
 * Each run works in a fresh temp dir (removed); "existing" runs on a copy of a data dir made once.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

const RUNS = Math.max(1, Math.min(50, Number(process.env.BENCH_STARTUP_RUNS ?? 7)))
const AFTER = resolve(process.env.FIXLOOP_BIN ?? 'dist/fixloop')
const BEFORE = process.env.BENCH_BASELINE_BIN ? resolve(process.env.BENCH_BASELINE_BIN) : undefined
const bins = BEFORE ? [BEFORE, AFTER] : [AFTER]
const ENV = { ...process.env, FIXLOOP_LOG_LEVEL: 'warn' }

const cpuMs = (u: { cpuTime: { user: number | bigint; system: number | bigint } }) => (Number(u.cpuTime.user) + Number(u.cpuTime.system)) / 1000

function run(cmd: string[]): { ms: number; out: string } {
  const p = Bun.spawnSync(cmd, { env: ENV, stdout: 'pipe', stderr: 'ignore', timeout: 20_000 })
  if (!p.success) throw new Error(`${cmd.join(' ')} failed (${p.exitCode})`)
  return { ms: cpuMs(p.resourceUsage!), out: p.stdout.toString() }
}

/** A data dir with an Org and an App, made by `bin` (the older binary when comparing: the newer one migrates it further if it must). */
function seed(bin: string): { dir: string; org: string; app: string } {
  const dir = join(mkdtempSync(join(tmpdir(), 'fixloop-startup-')), 'data')
  const org = JSON.parse(run([bin, 'org', 'create', '--name', 'bench', '--json', '--data-dir', dir]).out).id
  const app = JSON.parse(run([bin, 'app', 'create', '--org', org, '--name', 'bench', '--json', '--data-dir', dir]).out).id
  return { dir, org, app }
}

async function serve(bin: string, dataDir: string): Promise<number> {
  const port = 20_000 + Math.floor(Math.random() * 30_000)
  const p = Bun.spawn([bin, 'serve', '--data-dir', dataDir, '--port', String(port)], { env: ENV, stdout: 'ignore', stderr: 'ignore' })
  try {
    for (let i = 0; i < 200; i++) {
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false)
      if (ok) break
      if (i === 199) throw new Error(`${bin} serve: no /healthz in 5 s`)
      await Bun.sleep(25)
    }
  } finally {
    p.kill('SIGTERM')
    await Promise.race([p.exited, Bun.sleep(20_000).then(() => p.kill('SIGKILL'))])
  }
  return cpuMs(p.resourceUsage()!)
}

type Case = { name: string; once: (bin: string, scratch: string, seeded: { dir: string; org: string; app: string }) => number | Promise<number> }
const CASES: Case[] = [
  { name: 'version --json', once: (bin) => run([bin, 'version', '--json']).ms },
  { name: 'serve --help', once: (bin) => run([bin, 'serve', '--help']).ms },
  { name: 'org create (fresh data dir)', once: (bin, scratch) => run([bin, 'org', 'create', '--name', 'x', '--json', '--data-dir', join(scratch, 'd')]).ms },
  { name: 'org create (existing)', once: (bin, scratch) => run([bin, 'org', 'create', '--name', 'x', '--json', '--data-dir', join(scratch, 'd')]).ms },
  { name: 'key create (existing)', once: (bin, scratch, s) => run([bin, 'key', 'create', '--org', s.org, '--json', '--data-dir', join(scratch, 'd')]).ms },
  { name: 'app list (existing)', once: (bin, scratch, s) => run([bin, 'app', 'list', '--org', s.org, '--json', '--data-dir', join(scratch, 'd')]).ms },
  { name: 'migrate (existing)', once: (bin, scratch) => run([bin, 'migrate', '--json', '--data-dir', join(scratch, 'd')]).ms },
  { name: 'serve to /healthz, SIGTERM (fresh)', once: (bin, scratch) => serve(bin, join(scratch, 'd')) },
  { name: 'serve to /healthz, SIGTERM (existing)', once: (bin, scratch) => serve(bin, join(scratch, 'd')) },
]

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
const seeded = new Map(bins.map((b) => [b, seed(BEFORE ?? b)]))
const rows: string[] = []
for (const c of CASES) {
  const ms = new Map<string, number[]>(bins.map((b) => [b, []]))
  for (let i = 0; i < RUNS; i++) {
    for (const bin of bins) {
      const scratch = mkdtempSync(join(tmpdir(), 'fixloop-startup-'))
      try {
        const s = seeded.get(bin)!
        if (c.name.includes('existing')) cpSync(s.dir, join(scratch, 'd'), { recursive: true })
        ms.get(bin)!.push(await c.once(bin, scratch, s))
      } finally {
        rmSync(scratch, { recursive: true, force: true })
      }
    }
  }
  const [a, b] = bins.map((bin) => median(ms.get(bin)!) / 1000)
  rows.push(BEFORE ? `| ${c.name} | ${a.toFixed(3)} | ${b.toFixed(3)} | ${(((b - a) / a) * 100).toFixed(0)}% |` : `| ${c.name} | ${a.toFixed(3)} |`)
  console.error(rows[rows.length - 1])
}
for (const { dir } of seeded.values()) rmSync(resolve(dir, '..'), { recursive: true, force: true })
console.log(`CPU-s (user+sys), median of ${RUNS} runs${BEFORE ? `; before: ${BEFORE}, after: ${AFTER}` : `: ${AFTER}`}`)
console.log(BEFORE ? '| command | before | after | change |\n| --- | --- | --- | --- |' : '| command | CPU-s |\n| --- | --- |')
for (const r of rows) console.log(r)
