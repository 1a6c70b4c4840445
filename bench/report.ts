/**
 * Reads the wrk outputs of one bench/run.sh run (the RESULT line common.lua prints, the CPU line run.sh
 * appends) and prints the table: req/s, p50, p99 for the floor and fixloop per scenario, and the ratios
 * fixloop/floor against the targets. With several rounds of a scenario, the round with the most req/s
 * counts (the one least disturbed by other work on the machine). Also writes summary.md and
 * summary.json next to the raw output.
 *
 * Usage: bun bench/report.ts bench/out
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

interface Result {
  requests: number
  rps: number
  p50_us: number
  p90_us: number
  p99_us: number
  max_us: number
  non2xx: number
  connect_errors: number
  read_errors: number
  write_errors: number
  timeouts: number
  /** Share of one core the server process used during the run, and how busy its core was in all. */
  server_pct?: number
  core_pct?: number
  rounds?: number
  /** fixloop POST only: reports accepted but not yet processed by the worker when the run ended. */
  backlog?: { pendingJobs: number; unprocessed: number }
}

const outDir = process.argv[2] ?? 'bench/out'

const SCENARIOS = [
  { key: 'post', label: 'POST /v1/feedback', minRatio: 1.0, p99NoWorse: true },
  { key: 'list-newest', label: 'GET newest page (50)', minRatio: 0.8, p99NoWorse: false },
  { key: 'list-cursor', label: 'GET random cursor (50)', minRatio: 0.8, p99NoWorse: false },
] as const

function readOne(file: string): Result | undefined {
  const lines = readFileSync(file, 'utf8').split('\n')
  const result = lines.find((l) => l.startsWith('RESULT '))
  if (!result) return undefined
  const cpu = lines.find((l) => l.startsWith('CPU '))
  const backlog = lines.find((l) => l.startsWith('BACKLOG '))
  return {
    ...(JSON.parse(result.slice(7)) as Result),
    ...(cpu ? JSON.parse(cpu.slice(4)) : {}),
    ...(backlog ? { backlog: JSON.parse(backlog.slice(8)) } : {}),
  }
}

/** The best round of `<name>.r<N>.txt` (or `<name>.txt`). */
function read(name: string): Result | undefined {
  const pattern = new RegExp(`^${name}(\\.r\\d+)?\\.txt$`)
  const files = readdirSync(outDir).filter((f) => pattern.test(f))
  const results = files.map((f) => readOne(join(outDir, f))).filter((r): r is Result => r !== undefined)
  if (results.length === 0) return undefined
  const best = results.reduce((a, b) => (b.rps > a.rps ? b : a))
  return { ...best, rounds: results.length }
}

const ms = (us: number) => (us / 1000).toFixed(2)
const pct = (v: number | undefined) => (v === undefined ? '-' : `${Math.round(v)}%`)
/** Requests per second of server CPU: the server's efficiency, less sensitive to other work on the machine. */
const efficiency = (r: Result) => (r.server_pct ? r.rps / (r.server_pct / 100) : undefined)
const perCpu = (r: Result) => {
  const e = efficiency(r)
  return e === undefined ? '-' : Math.round(e).toLocaleString('en-US')
}
const errorsOf = (r: Result) => r.non2xx + r.connect_errors + r.read_errors + r.write_errors + r.timeouts
const pad = (s: string, n: number) => s.padEnd(n)
const lpad = (s: string, n: number) => s.padStart(n)

const lines: string[] = []
const summary: Record<string, unknown> = {}
let allMet = true
lines.push(`${pad('scenario', 24)}${pad('server', 9)}${lpad('req/s', 10)}${lpad('p50 ms', 9)}${lpad('p99 ms', 9)}${lpad('errors', 8)}${lpad('srv cpu', 9)}${lpad('core', 7)}${lpad('req/cpu-s', 11)}`)
for (const sc of SCENARIOS) {
  const floor = read(`floor-${sc.key}`)
  const fixloop = read(`fixloop-${sc.key}`)
  for (const [name, r] of [['floor', floor], ['fixloop', fixloop]] as const) {
    lines.push(
      r
        ? `${pad(sc.label, 24)}${pad(name, 9)}${lpad(Math.round(r.rps).toLocaleString('en-US'), 10)}${lpad(ms(r.p50_us), 9)}${lpad(ms(r.p99_us), 9)}${lpad(String(errorsOf(r)), 8)}${lpad(pct(r.server_pct), 9)}${lpad(pct(r.core_pct), 7)}${lpad(perCpu(r), 11)}`
        : `${pad(sc.label, 24)}${pad(name, 9)}  (no result)`,
    )
  }
  if (!floor || !fixloop) {
    allMet = false
    continue
  }
  const ratio = fixloop.rps / floor.rps
  const p99Ratio = fixloop.p99_us / floor.p99_us
  const clean = errorsOf(floor) === 0 && errorsOf(fixloop) === 0
  const met = ratio >= sc.minRatio && (!sc.p99NoWorse || p99Ratio <= 1) && clean
  allMet &&= met
  const ef = efficiency(fixloop)
  const efFloor = efficiency(floor)
  const efText = ef !== undefined && efFloor !== undefined ? `; per cpu-s ${(ef / efFloor).toFixed(2)}x` : ''
  const p99Text = sc.p99NoWorse ? `, p99 ${p99Ratio.toFixed(2)}x (target <= 1.00x)` : `, p99 ${p99Ratio.toFixed(2)}x`
  lines.push(`${pad('', 24)}ratio fixloop/floor: req/s ${ratio.toFixed(2)}x (target >= ${sc.minRatio.toFixed(2)}x)${p99Text}${clean ? '' : ', ERRORS'} -> ${met ? 'MET' : 'MISSED'}${efText}`)
  if (fixloop.backlog) {
    const { unprocessed } = fixloop.backlog
    const share = fixloop.requests > 0 ? ` (${Math.round((100 * unprocessed) / fixloop.requests)}% of the measured run's requests)` : ''
    lines.push(`${pad('', 24)}fixloop worker backlog at the end: ${unprocessed.toLocaleString('en-US')} accepted reports not yet processed${share}`)
  }
  const baseline = read(`baseline-${sc.key}`)
  if (baseline) {
    lines.push(
      `${pad('', 24)}${pad('baseline', 9)}${lpad(Math.round(baseline.rps).toLocaleString('en-US'), 10)}${lpad(ms(baseline.p50_us), 9)}${lpad(ms(baseline.p99_us), 9)}${lpad(String(errorsOf(baseline)), 8)}${lpad(pct(baseline.server_pct), 9)}${lpad(pct(baseline.core_pct), 7)}${lpad(perCpu(baseline), 11)}`,
    )
    lines.push(`${pad('', 24)}ratio fixloop/baseline (after/before): req/s ${(fixloop.rps / baseline.rps).toFixed(3)}x, p99 ${(fixloop.p99_us / baseline.p99_us).toFixed(3)}x`)
  }
  summary[sc.key] = { floor, fixloop, baseline: baseline ?? null, ratio, p99Ratio, efficiencyRatio: ef !== undefined && efFloor !== undefined ? ef / efFloor : null, target: sc.minRatio, met }
}
lines.push(allMet ? 'all targets met' : 'some targets missed')
lines.push('srv cpu: share of one core the server used; core: how busy that core was in all (core minus srv = other work);')
lines.push('req/cpu-s: req/s divided by srv cpu, i.e. requests per second of server CPU. The targets are judged on req/s.')

const machine = existsSync(join(outDir, 'machine.txt')) ? readFileSync(join(outDir, 'machine.txt'), 'utf8') : ''
const text = lines.join('\n')
process.stdout.write(`\n${machine}\n${text}\n`)
writeFileSync(join(outDir, 'summary.md'), `${machine}\n\`\`\`\n${text}\n\`\`\`\n`)
writeFileSync(join(outDir, 'summary.json'), JSON.stringify(summary, null, 2) + '\n')
