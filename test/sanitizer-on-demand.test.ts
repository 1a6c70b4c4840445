/**
 * The sanitize-ahead thread starts once there is work for it (src/worker/sanitizer-on-demand.ts), not with
 * every server: idle it cost each start ~0.15 CPU-s. Checked on real servers over real SQLite files, by the
 * thread's state and what it did (the idle server's connections to the database counted too):
 * - a server whose queue stays short starts no such thread, also after its once-a-second look;
 * - a server started over a backlog longer than HEAD_GAP starts it at once, and it sanitizes ahead;
 * - a burst past HEAD_GAP during a run starts it: test/sanitize-ahead.test.ts (its last test).
 * SQLite only: on PostgreSQL no thread sanitizes ahead.
 */
import { describe, expect, test } from 'bun:test'
import { readdirSync, readlinkSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig } from '../src/config'
import { Logger } from '../src/core/logger'
import { HEAD_GAP } from '../src/worker/sanitize-ahead'
import { call, seedTenant, startTestServer } from './harness'
import { TEST_DIALECT } from './cluster-env'
import { body, submitAll } from './drain-compare'
import { sqliteOf } from './sqlite-of'

const ENV = { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100000' }

/** This process's open descriptors on `dataDir`'s database file: one per SQLite connection to it. */
function connectionsTo(dataDir: string): number {
  const file = join(dataDir, 'fixloop.db')
  let n = 0
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === file) n++
    } catch {}
  }
  return n
}

const processLeft = (srv: { ctx: Parameters<typeof sqliteOf>[0] }) =>
  (sqliteOf(srv.ctx).query("SELECT count(*) AS n FROM jobs WHERE kind = 'process'").get() as { n: number }).n

describe.skipIf(TEST_DIALECT === 'pg')('the sanitize-ahead thread starts with a backlog', () => {
  let idleConnections = 0

  test('a server whose queue stays short starts no sanitize-ahead thread (no connection of its own)', async () => {
    const srv = await startTestServer(ENV)
    try {
      const t = await seedTenant(srv.admin)
      for (let i = 0; i < 20; i++) expect((await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: body(i) })).status).toBe(201)
      for (const deadline = Date.now() + 30_000; processLeft(srv) > 0 && Date.now() < deadline; ) await Bun.sleep(50)
      expect(processLeft(srv)).toBe(0)
      // Past its once-a-second look, and the look after intake's wake-ups.
      await Bun.sleep(1300)
      expect(srv.services.sanitizerThread).toBeDefined()
      expect(srv.services.sanitizerThread!.started).toBe(false)
      idleConnections = connectionsTo(srv.dataDir)
      expect(idleConnections).toBeGreaterThan(0)
      expect((await call(srv.url, 'GET', '/readyz')).status).toBe(200)
    } finally {
      await srv.close()
    }
  }, 60_000)

  test('a server started over a backlog longer than HEAD_GAP starts it at once, and it sanitizes ahead', async () => {
    // The backlog: reports taken by a server whose worker never ran, which then stops.
    const first = await startTestServer(ENV, { worker: { autoStart: false } })
    const t = await seedTenant(first.admin)
    await submitAll(first, t, HEAD_GAP + 400)
    await first.stop()
    const { startServer } = await import('../src/runtime/server')
    const srv = await startServer(loadConfig({ host: '127.0.0.1', port: '0', dataDir: first.dataDir }, { FIXLOOP_LOG_LEVEL: 'silent', ...ENV }), { log: new Logger('silent') })
    try {
      // Started at once, and sanitizing ahead below. (Not counted by its connection here: the stopped server's
      // threads close theirs on the same file a moment after its stop resolves, and a CI run under load
      // counted one of them as the new thread's.)
      for (const deadline = Date.now() + 20_000; !srv.services.sanitizerThread!.started && Date.now() < deadline; ) await Bun.sleep(50)
      expect(srv.services.sanitizerThread!.started).toBe(true)
      for (let i = 0; i < 600 && processLeft(srv) > 0; i++) await Bun.sleep(100)
      expect(processLeft(srv)).toBe(0)
      for (const deadline = Date.now() + 15_000; srv.services.sanitizerThread!.sanitizedAhead === 0 && Date.now() < deadline; ) await Bun.sleep(100)
      expect(srv.services.sanitizerThread!.sanitizedAhead).toBeGreaterThan(0)
      expect((await call(srv.url, 'GET', '/readyz')).status).toBe(200)
    } finally {
      await srv.stop()
      rmSync(first.dataDir, { recursive: true, force: true })
    }
  }, 120_000)
})
