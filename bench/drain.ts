/**
 * After an intake burst: how fast fixloop's worker empties the `process` job backlog with no load on.
 * Reads the database read-only (WAL lets it read while the server writes), every 250 ms, until the
 * backlog is empty or the time limit passes; prints one `DRAIN {...}` line for intake-report.ts.
 *
 * With the server's PID it also reports reports per CPU-second of the server (utime+stime from /proc):
 * on a machine shared with other work, the figure that does not depend on how much of the core it got.
 *
 * Usage: bun bench/drain.ts FIXLOOP_DB [MAX_SECONDS=120] [SERVER_PID]
 */
import { Database } from 'bun:sqlite'
import { readFileSync } from 'node:fs'

const file = process.argv[2]
if (!file) throw new Error('usage: bun bench/drain.ts FIXLOOP_DB [MAX_SECONDS]')
const maxMs = Number(process.argv[3] ?? 120) * 1000
const db = new Database(file, { readonly: true })
const pending = db.query<{ n: number }, []>("SELECT count(*) AS n FROM jobs WHERE kind = 'process'")
const count = () => pending.get()!.n
const pid = process.argv[4]
const HZ = 100 // USER_HZ on Linux
/** CPU seconds the server has used so far (fields 14 and 15 of /proc/PID/stat, after the command name). */
function cpuSeconds(): number {
  if (!pid) return NaN
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) / HZ
}
const cpu0 = cpuSeconds()

const start = count()
const t0 = performance.now()
let left = start
let elapsed = 0
// Bounded: at most maxMs / 250 polls.
for (let i = 0; i < Math.ceil(maxMs / 250) && left > 0; i++) {
  await Bun.sleep(250)
  left = count()
  elapsed = performance.now() - t0
}
const done = start - left
const seconds = Math.max(elapsed, 1) / 1000
const cpu = cpuSeconds() - cpu0
const perCpuSecond = Number.isNaN(cpu) || cpu <= 0 ? null : Math.round(done / cpu)
process.stdout.write(
  `DRAIN ${JSON.stringify({ backlog: start, left, seconds: Number(seconds.toFixed(2)), rate: Math.round(done / seconds), cpuSeconds: Number(cpu.toFixed(2)), perCpuSecond })}\n`,
)
