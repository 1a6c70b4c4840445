/**
 * After an intake burst: how fast fixloop's worker empties the `process` job backlog with no load on.
 * Reads the database read-only (WAL lets it read while the server writes), every 250 ms, until the
 * backlog is empty or the time limit passes; prints one `DRAIN {...}` line for intake-report.ts.
 *
 * Usage: bun bench/drain.ts FIXLOOP_DB [MAX_SECONDS=120]
 */
import { Database } from 'bun:sqlite'

const file = process.argv[2]
if (!file) throw new Error('usage: bun bench/drain.ts FIXLOOP_DB [MAX_SECONDS]')
const maxMs = Number(process.argv[3] ?? 120) * 1000
const db = new Database(file, { readonly: true })
const pending = db.query<{ n: number }, []>("SELECT count(*) AS n FROM jobs WHERE kind = 'process'")
const count = () => pending.get()!.n

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
process.stdout.write(`DRAIN ${JSON.stringify({ backlog: start, left, seconds: Number(seconds.toFixed(2)), rate: Math.round(done / seconds) })}\n`)
