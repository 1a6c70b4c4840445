/**
 * modules/metrics/repo.ts and the /readyz `database` check (modules/health/readiness.ts) on both
 * dialects: the same cases, the same answers; and what PostgreSQL's check says when the database is
 * missing migrations, refuses connections, or does not answer.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { createServer, type Server, type Socket } from 'node:net'
import { rmSync } from 'node:fs'
import { describeEachDialect, sharedPostgres, storeOf } from '../dialects'
import { join } from 'node:path'
import { createMetrics } from '../../src/modules/metrics/service'
import { createReadiness, type Check } from '../../src/modules/health/readiness'
import { pgStorage } from '../../src/db/pg/storage'
import { openPool } from '../../src/db/pg/client-options'
import { pgDatabaseCheck } from '../../src/db/pg/readiness'
import type { Storage } from '../../src/db/storage'
import { run } from './raw'
import { tempDir } from '../temp-dirs'

const dataDir = tempDir('fixloop-readiness-')
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))
const ok = (): Check => ({ ok: true })
const readinessOf = (store: ReturnType<typeof storeOf>) => createReadiness({ database: () => store.databaseCheck(), dataDir, minFreeBytes: 0, worker: ok, checkpointer: store.dialect === 'sqlite' ? ok : undefined, masterKey: ok })

describeEachDialect('metrics repo', (fresh, dialect) => {
  test('reports by status, jobs by kind with the oldest due time, runs with cost, deliveries: ordered, numbers as numbers', async () => {
    const s = await fresh()
    const repo = s.store.metrics
    expect(await repo.snapshot(1_000)).toEqual({ reportsByStatus: [], jobsByKind: [], runsByStatus: [], deliveriesByStatus: [] })
    const t = s.store.tenants
    await t.insertOrg({ id: 'o1', name: 'Acme', createdAt: 1 }, [])
    await t.insertApp({ id: 'a1', orgId: 'o1', slug: 'web', name: 'web', publicKey: 'pub_a1', signingSecretEnc: 'x', createdAt: 1, updatedAt: 1 }, [])
    const report = (id: string, status: string) =>
      run(s.storage, "INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, created_at, updated_at) VALUES (?, 'o1', 'a1', ?, 't', 'public', 1, 1)", [id, status])
    await report('f1', 'received')
    await report('f2', 'sanitized')
    await report('f3', 'received')
    const job = (kind: string, runAfter: number, createdAt: number) => run(s.storage, 'INSERT INTO jobs (kind, run_after, created_at) VALUES (?, ?, ?)', [kind, runAfter, createdAt])
    await job('process', 900, 800)
    await job('process', 500, 700) // retried: due since its creation, not before
    await job('uploads_gc', 5_000, 100) // not due yet
    const agentRun = (id: string, status: string, cost: number) =>
      run(s.storage, "INSERT INTO agent_runs (id, org_id, app_id, feedback_id, provider, status, branch, timings, created_at, cost_usd) VALUES (?, 'o1', 'a1', 'f1', 'claude', ?, 'b', '{}', 1, ?)", [id, status, cost])
    await agentRun('r1', 'succeeded', 0.5)
    await agentRun('r2', 'succeeded', 0.25)
    await agentRun('r3', 'failed', 0)
    await run(s.storage, "INSERT INTO webhook_deliveries (id, webhook_id, org_id, event_id, event_seq, event_type, payload, status, created_at, updated_at) VALUES ('d1', 'w1', 'o1', 'e1', 1, 't', '{}', 'failed', 1, 1)")
    expect(await repo.snapshot(1_000)).toEqual({
      reportsByStatus: [{ status: 'received', n: 2 }, { status: 'sanitized', n: 1 }],
      jobsByKind: [{ kind: 'process', n: 2, dueSince: 700 }, { kind: 'uploads_gc', n: 1, dueSince: null }],
      runsByStatus: [{ status: 'failed', n: 1, cost: 0 }, { status: 'succeeded', n: 2, cost: 0.75 }],
      deliveriesByStatus: [{ status: 'failed', n: 1 }],
    })
    // The rendered families: the WAL size only where there is one.
    const text = await createMetrics(s.store.metrics, s.clock, () => true, s.dialect === 'sqlite' ? join(dataDir, 'fixloop.db-wal') : undefined).registry.render()
    expect(text).toContain('fixloop_reports{status="received"} 2')
    expect(text).toContain(`fixloop_jobs_oldest_age_seconds ${(s.clock.now() - 700) / 1000}`)
    expect(text.includes('fixloop_wal_bytes')).toBe(dialect === 'sqlite')
  })

  test('readiness: a migrated, reachable database is ready', async () => {
    const s = await fresh()
    const report = await readinessOf(s.store).check()
    expect(report.ready).toBe(true)
    expect(report.checks.database).toEqual({ ok: true })
    expect(Object.keys(report.checks)).toEqual(dialect === 'sqlite' ? ['database', 'disk', 'worker', 'checkpointer', 'masterKey'] : ['database', 'disk', 'worker', 'masterKey'])
  })
})

describe('readiness on PostgreSQL when the database fails', () => {
  test('migrations pending: the database check fails and names them', async () => {
    const url = await (await sharedPostgres()).createDatabase('bare')
    const pool = openPool(url, 2)
    try {
      const report = await readinessOf(storeOf(pgStorage(pool))).check()
      expect(report.ready).toBe(false)
      expect(report.checks.database.ok).toBe(false)
      expect(report.checks.database.reason).toStartWith('migrations pending: 0000')
    } finally {
      await pool.end()
    }
  })

  test('connections refused: failing at once, the driver\'s reason given', async () => {
    // A port nothing listens on (bound, then closed).
    const probe = createServer()
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
    const port = (probe.address() as { port: number }).port
    await new Promise((resolve) => probe.close(resolve))
    const pool = openPool(`postgres://postgres:x@127.0.0.1:${port}/postgres`, 1)
    try {
      const report = await readinessOf(storeOf(pgStorage(pool))).check()
      expect(report.ready).toBe(false)
      expect(report.checks.database.reason).toStartWith('the database is unreachable:')
    } finally {
      await pool.end()
    }
  })

  test('a server that accepts but never answers: failing within the timeout', async () => {
    const sockets: Socket[] = []
    const silent: Server = createServer((socket) => void sockets.push(socket))
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const port = (silent.address() as { port: number }).port
    const pool = openPool(`postgres://postgres:x@127.0.0.1:${port}/postgres`, 1)
    try {
      const started = performance.now()
      const check = await pgDatabaseCheck(pgStorage(pool), 300)()
      expect(performance.now() - started).toBeLessThan(2_000)
      expect(check).toEqual({ ok: false, reason: 'the database did not answer within 300 ms' })
    } finally {
      for (const socket of sockets) socket.destroy()
      silent.close()
      await pool.end().catch(() => {})
    }
  })
})
