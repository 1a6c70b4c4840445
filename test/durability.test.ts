/**
 * kill -9 mid-burst: every report acknowledged with 201 by the compiled binary must be there after a
 * restart on the same data dir, and the worker must take every one of them through to the end.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { call, eventually, spawnServer, tempDir } from './harness'
import { cliTenant, ensureBinary, openDataDb } from './helpers-lifecycle'

const CLIENTS = 8
const MAX_REQUESTS = 1500
/** SIGKILL once this many 201s are in: well inside the burst. */
const KILL_AFTER_ACKS = 600
const BURST_DEADLINE_MS = 10_000
/** DEFAULT_WORKER_OPTIONS.leaseMs of the binary. */
const LEASE_MS = 60_000
const ENV = { FIXLOOP_RATE_LIMIT_MULTIPLIER: '10000' }

let dataDir: string
const stops: (() => Promise<void>)[] = []

beforeAll(() => {
  ensureBinary()
  dataDir = tempDir('fixloop-crash-')
})
afterAll(async () => {
  for (const stop of stops) await stop().catch(() => {})
  rmSync(dataDir, { recursive: true, force: true })
})

test('no acknowledged report is lost to kill -9, and all of them get processed after restart', async () => {
  const t = await cliTenant(dataDir)
  const first = await spawnServer(dataDir, ENV)
  stops.push(first.stop)

  const acked: string[] = []
  let sent = 0
  let killed = false
  const started = Date.now()
  const client = async (c: number) => {
    while (sent < MAX_REQUESTS && Date.now() - started < BURST_DEADLINE_MS) {
      const n = sent++
      try {
        const res = await fetch(`${first.url}/v1/feedback`, {
          method: 'POST',
          headers: { authorization: `Bearer ${t.pub}`, 'content-type': 'application/json' },
          body: JSON.stringify({ text: `burst report ${n} from client ${c}: contact me at user${n}@example.com`, severity: 'low' }),
        })
        const body = (await res.json()) as { id: string; status: string }
        if (res.status !== 201) throw new Error(`unexpected ${res.status}: ${JSON.stringify(body)}`)
        expect(body.status).toBe('received')
        acked.push(body.id)
        if (!killed && acked.length >= KILL_AFTER_ACKS) {
          killed = true
          first.proc.kill(9)
        }
      } catch (e) {
        // After the kill, connections fail: those requests were never acknowledged.
        if (!killed) throw e
        return
      }
    }
  }
  await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)))
  expect(killed).toBe(true)
  await first.proc.exited
  expect(first.proc.signalCode).toBe('SIGKILL')
  expect(acked.length).toBeGreaterThanOrEqual(KILL_AFTER_ACKS)
  expect(sent).toBeLessThan(MAX_REQUESTS) // the kill really landed mid-burst
  expect(new Set(acked).size).toBe(acked.length)

  const restartedAt = Date.now()
  const second = await spawnServer(dataDir, ENV)
  stops.push(second.stop)

  // 1. Every acknowledged id is readable.
  const missing: string[] = []
  for (let i = 0; i < acked.length; i += 50) {
    const replies = await Promise.all(acked.slice(i, i + 50).map((id) => call(second.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })))
    replies.forEach((r, j) => r.status !== 200 && missing.push(`${acked[i + j]}: ${r.status}`))
  }
  expect(missing).toEqual([])

  // 2. The job the dead process held (at most one: the worker claims one at a time) keeps its lease
  // until it runs out, a minute after the kill. Let that minute pass by moving the lease, not by sleeping.
  const db = openDataDb(dataDir)
  try {
    const stale = db.query('SELECT id, feedback_id FROM jobs WHERE lease_until IS NOT NULL AND lease_until < ?').all(restartedAt + LEASE_MS) as { id: number }[]
    expect(stale.length).toBeLessThanOrEqual(1)
    for (const job of stale) db.query('UPDATE jobs SET lease_until = ? WHERE id = ?').run(Date.now() - 1, job.id)

    // 3. The restarted worker takes everything to the end: nothing stays in received or sanitizing.
    const stuck = () => db.query("SELECT COUNT(*) AS n FROM feedback WHERE status IN ('received', 'sanitizing', 'sanitized')").get() as { n: number }
    await eventually(() => stuck().n === 0, 15_000)
    // Only recurring housekeeping jobs (no feedback id) may remain.
    expect(db.query('SELECT COUNT(*) AS n FROM jobs WHERE feedback_id IS NOT NULL').get()).toEqual({ n: 0 })
  } finally {
    db.close()
  }
  const notDone: string[] = []
  for (let i = 0; i < acked.length; i += 50) {
    const replies = await Promise.all(acked.slice(i, i + 50).map((id) => call(second.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })))
    for (const r of replies) {
      if (r.body.status !== 'awaiting_manual' || r.body.text.includes('@example.com')) notDone.push(`${r.body.id}: ${r.body.status}`)
    }
  }
  expect(notDone).toEqual([])
}, 45_000)

test('the connection that answers clients syncs each commit (synchronous FULL) unless FIXLOOP_SQLITE_SYNCHRONOUS=normal; a bad value is refused', async () => {
  const { startTestServer } = await import('./harness')
  const { sqliteOf } = await import('./sqlite-of')
  const { loadConfig } = await import('../src/config')
  for (const [env, want] of [[{}, 2], [{ FIXLOOP_SQLITE_SYNCHRONOUS: 'normal' }, 1], [{ FIXLOOP_SQLITE_SYNCHRONOUS: 'full' }, 2]] as const) {
    const srv = await startTestServer(env)
    try {
      expect(sqliteOf(srv.ctx).query('PRAGMA synchronous').get()).toEqual({ synchronous: want })
    } finally {
      await srv.close()
    }
  }
  expect(() => loadConfig({ dataDir: tempDir('fixloop-cfg-') }, { FIXLOOP_SQLITE_SYNCHRONOUS: 'off' })).toThrow(/FIXLOOP_SQLITE_SYNCHRONOUS: must be full or normal/)
})
