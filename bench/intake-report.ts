/**
 * Prints bench/intake.sh's result: per database size, req/s, p50, p99 of the bare floor, the same-work
 * floor and fixloop (best round of each by req/s), the ratios the issue sets targets for, the load
 * average at each run, and the backlog drain rate. Writes summary.md next to the raw files.
 *
 * Usage: bun bench/intake-report.ts OUT_DIR
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

interface Run {
  rps: number
  p50_us: number
  p99_us: number
  non2xx: number
  errors: number
  load: number
  /** Requests per CPU-second of the server during the measured run. */
  perCpu: number
  perMainCpu: number
  rounds: number[]
}

const out = process.argv[2] ?? 'bench/out/intake'
const runs = new Map<string, Map<string, Run>>()
/** intake.sh lets the server's threads use both cores during the drain unless BENCH_DRAIN_PINNED=1 (pinning.log says which). */
const drainOnBothCores = (() => {
  try {
    return readFileSync(join(out, 'pinning.log'), 'utf8').includes('drain: every thread')
  } catch {
    return false
  }
})()
const drains = new Map<string, { backlog: number; left: number; seconds: number; rate: number; perCpuSecond?: number | null }>()
for (const f of readdirSync(out).sort()) {
  const text = readFileSync(join(out, f), 'utf8')
  let m = /^(\d+)\.(bare|floor|fixloop|baseline)\.r\d+\.txt$/.exec(f)
  if (m) {
    const r = JSON.parse(/^RESULT (.*)$/m.exec(text)?.[1] ?? 'null')
    if (!r) continue
    const load = Number(/^LOAD (\S+)$/m.exec(text)?.[1] ?? NaN)
    const ticks = /^CPU_TICKS (\d+) (\d+)$/m.exec(text)
    const perCpu = ticks && Number(ticks[1]) > 0 ? r.requests / (Number(ticks[1]) / Number(ticks[2])) : NaN
    // The HTTP thread alone (the floors have no other busy thread; fixloop's processing thread is left out).
    const main = /^MAIN_TICKS (\d+) (\d+)$/m.exec(text)
    const perMainCpu = main && Number(main[1]) > 0 ? r.requests / (Number(main[1]) / Number(main[2])) : NaN
    const bySize = runs.get(m[1]) ?? new Map<string, Run>()
    runs.set(m[1], bySize)
    const prev = bySize.get(m[2])
    const rounds = [...(prev?.rounds ?? []), Math.round(r.rps)]
    const errors = r.connect_errors + r.read_errors + r.write_errors + r.timeouts
    const cur: Run = { rps: r.rps, p50_us: r.p50_us, p99_us: r.p99_us, non2xx: r.non2xx, errors, load, perCpu, perMainCpu, rounds }
    bySize.set(m[2], !prev || cur.rps > prev.rps ? cur : { ...prev, rounds })
    continue
  }
  m = /^(\d+)\.(fixloop|baseline)\.drain\.txt$/.exec(f)
  const drain = m && /^DRAIN (.*)$/m.exec(text)
  if (m && drain) drains.set(`${m[1]}.${m[2]}`, JSON.parse(drain[1]))
}

const n = (v: number) => Math.round(v).toLocaleString('en-US')
const ms = (us: number) => (us / 1000).toFixed(1)
const x = (a: number, b: number) => `${(a / b).toFixed(2)}×`
const lines: string[] = []
for (const [size, bySize] of [...runs].sort((a, b) => Number(a[0]) - Number(b[0]))) {
  lines.push(`## ${n(Number(size))} rows before the run`, '', '```')
  lines.push('server      req/s   p50 ms  p99 ms  non2xx  errors  load  req/cpu-s  http-thread req/cpu-s  rounds (req/s)')
  for (const name of ['bare', 'floor', 'fixloop', 'baseline']) {
    const r = bySize.get(name)
    if (!r) continue
    lines.push(
      `${name.padEnd(9)}${n(r.rps).padStart(8)}${ms(r.p50_us).padStart(9)}${ms(r.p99_us).padStart(8)}${String(r.non2xx).padStart(8)}${String(r.errors).padStart(8)}${r.load.toFixed(1).padStart(6)}${(Number.isNaN(r.perCpu) ? '-' : n(r.perCpu)).padStart(11)}${(Number.isNaN(r.perMainCpu) ? '-' : n(r.perMainCpu)).padStart(23)}  ${r.rounds.map(n).join(', ')}`,
    )
  }
  lines.push('```', '')
  const bare = bySize.get('bare')
  const floor = bySize.get('floor')
  const fix = bySize.get('fixloop')
  if (bare && fix) lines.push(`- fixloop / bare floor: req/s **${x(fix.rps, bare.rps)}** (target ≥ 1.0×), p99 **${x(fix.p99_us, bare.p99_us)}** (target ≤ 1.5×), req per CPU-second ${x(fix.perCpu, bare.perCpu)} (HTTP thread alone ${x(fix.perMainCpu, bare.perMainCpu)})`)
  if (floor && fix) lines.push(`- fixloop / same-work floor: req/s **${x(fix.rps, floor.rps)}** (target ≥ 1.5×), p99 ${x(fix.p99_us, floor.p99_us)}`)
  const base = bySize.get('baseline')
  if (base && bare && floor) {
    lines.push(`- baseline / bare floor: req/s ${x(base.rps, bare.rps)}, p99 ${x(base.p99_us, bare.p99_us)}, req per CPU-second ${x(base.perCpu, bare.perCpu)}; baseline / same-work floor: req/s ${x(base.rps, floor.rps)}`)
  }
  for (const name of ['fixloop', 'baseline']) {
    const d = drains.get(`${size}.${name}`)
    if (d) lines.push(`- ${name}: backlog drain after the bursts (${drainOnBothCores ? 'server alone, its threads on both cores' : 'threads pinned as in the load phase'}): ${n(d.backlog)} reports, ${n(d.backlog - d.left)} processed in ${d.seconds} s = **${n(d.rate)} reports/s** (target ≥ 2,000/s)${d.perCpuSecond ? `, ${n(d.perCpuSecond)} per CPU-second of the server` : ''}${d.left > 0 ? `, ${n(d.left)} still waiting at the time limit` : ''}`)
  }
  lines.push('')
}
let machine = ''
try {
  machine = readFileSync(join(out, 'machine.txt'), 'utf8')
} catch {}
const text = `${machine}\n${lines.join('\n')}`
writeFileSync(join(out, 'summary.md'), text)
process.stdout.write(text)
