/**
 * The SQLite lifecycle writer's own cost per report, alone (issue 37.4: its transactions became bodies run
 * by a driver, src/db/tx-body.ts): N reports stored `received` in a temp data dir, then on this thread
 * each one taken to `sanitized` (`moveToSanitized`, two events) and on to `awaiting_manual` (`move`), the
 * two writes the processing engine makes per report, nested 100 to a transaction as a batch nests them.
 * Prints `LIFECYCLE_MOVES {...}`: thread CPU µs per report for each round, and their mean.
 *
 * `--against DIR`: A/B in ONE process. DIR's checkout (another worktree of this repository, e.g. main)
 * is loaded beside this one and the rounds alternate (A B, B A, …), so the machine's load drifts over both
 * alike; prints both means and this checkout's / DIR's ratio.
 *
 * Usage: bun bench/lifecycle-moves.ts [N=10000] [ROUNDS=10] [--against DIR]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

const args = process.argv.slice(2)
const against = args.includes('--against') ? resolve(args[args.indexOf('--against') + 1]) : null
const [N = 10_000, ROUNDS = 10] = args.filter((a, i) => !a.startsWith('--') && args[i - 1] !== '--against').map(Number)

/** CPU time of this thread, µs (Linux: /proc/thread-self/stat utime + stime, in 10 ms ticks). */
function threadCpuUs(): number {
  const fields = readFileSync('/proc/thread-self/stat', 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10_000
}

/** A checkout's modules (its own copies: two checkouts never share a module). */
async function checkout(root: string) {
  return {
    client: await import(`${root}/src/db/sqlite/client.ts`),
    migrate: await import(`${root}/src/db/sqlite/migrate.ts`),
    storage: await import(`${root}/src/db/sqlite/storage.ts`),
    store: await import(`${root}/src/db/sqlite/store.ts`),
    clock: await import(`${root}/src/core/clock.ts`),
  }
}
type Checkout = Awaited<ReturnType<typeof checkout>>

/** One round on `m`: CPU µs of this thread per report (both writes). */
async function round(m: Checkout): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'fixloop-moves-'))
  const { sqlite, db } = m.client.openDatabase(join(dir, 'fixloop.db'))
  m.migrate.applyMigrations(sqlite)
  const store = m.store.openSqliteStore(m.storage.sqliteStorage(sqlite, db), m.clock.systemClock)
  await store.tenants.insertOrg({ id: 'o1', name: 'o1', createdAt: 1 }, [])
  await store.tenants.insertApp({ id: 'a1', orgId: 'o1', slug: 'a1', name: 'a1', publicKey: 'pk_a1', signingSecretEnc: 'x', createdAt: 1, updatedAt: 1 }, [])
  const insert = sqlite.query("INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, created_at, updated_at) VALUES (?, 'o1', 'a1', 'received', 'raw text', 'public', 1, 1)")
  const ids = Array.from({ length: N }, (_, i) => `r${String(i).padStart(8, '0')}`)
  sqlite.transaction(() => ids.forEach((id) => insert.run(id)))()
  const side = store.sides.lifecycle
  const columns = { text: 'clean text', url: null, userAgent: null, consoleLogs: null, metadata: null, componentTarget: null }
  const cpu0 = threadCpuUs()
  for (let i = 0; i < N; i += 100) {
    sqlite
      .transaction(() => {
        for (const id of ids.slice(i, i + 100)) {
          if (!side.moveToSanitized(sqlite, id, 0, columns, '{}')) throw new Error(`not sanitized: ${id}`)
          if (!side.move(sqlite, id, 'awaiting_manual', { by: 'system', from: 'sanitized' })) throw new Error(`not moved: ${id}`)
        }
      })
      .immediate()
  }
  const us = (threadCpuUs() - cpu0) / N
  sqlite.close()
  rmSync(dir, { recursive: true, force: true })
  return us
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
const fixed = (xs: number[]) => xs.map((x) => Math.round(x * 10) / 10)
const here = await checkout(resolve(import.meta.dir, '..'))
if (!against) {
  await round(here) // warm-up
  const us: number[] = []
  for (let i = 0; i < ROUNDS; i++) us.push(await round(here))
  console.log(`LIFECYCLE_MOVES ${JSON.stringify({ reports: N, rounds: ROUNDS, cpuUsPerReport: fixed(us), mean: Math.round(mean(us) * 100) / 100 })}`)
} else {
  const other = await checkout(against)
  await round(other)
  await round(here)
  const a: number[] = []
  const b: number[] = []
  for (let i = 0; i < ROUNDS; i++) {
    if (i % 2 === 0) a.push(await round(other)), b.push(await round(here))
    else b.push(await round(here)), a.push(await round(other))
  }
  console.log(`LIFECYCLE_MOVES ${JSON.stringify({ reports: N, rounds: ROUNDS, against: { cpuUsPerReport: fixed(a), mean: Math.round(mean(a) * 100) / 100 }, here: { cpuUsPerReport: fixed(b), mean: Math.round(mean(b) * 100) / 100 }, ratio: Math.round((mean(b) / mean(a)) * 1000) / 1000 })}`)
}
