/**
 * A batch plans its reports without the write lock, then writes them (process-feedback.ts `runBatch`):
 * sanitized and clustered in memory in queue order, each later report ranking against the earlier ones'
 * planned links and sanitized texts. Checked against the same reports processed one job at a time (each
 * inside its own transaction, the path a burst takes): every report ends the same, events included; and
 * a plan whose lead is archived between the two halves is not written: the report is clustered again.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import type { Database } from 'bun:sqlite'
import { body, drain, expectSameEnd, rowOf, submitAll } from './drain-compare'
import { sqliteOf } from './sqlite-of'

/** Calls `before` ahead of each outermost IMMEDIATE transaction of `sqlite` (a write batch, or one job); returns the undo. */
function beforeEachWriteTransaction(sqlite: Database, before: () => void): () => void {
  const transaction = sqlite.transaction.bind(sqlite)
  sqlite.transaction = ((fn: (...args: unknown[]) => unknown) => {
    const tx = transaction(fn)
    return Object.assign((...args: unknown[]) => tx(...args), {
      deferred: tx.deferred,
      exclusive: tx.exclusive,
      immediate: (...args: unknown[]) => {
        if (!sqlite.inTransaction) before()
        return tx.immediate(...args)
      },
    })
  }) as Database['transaction']
  return () => {
    sqlite.transaction = transaction
  }
}

const ENV = { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100000' }
const TOTAL = 600

describe('a batch planned without the write lock', () => {
  let batched: TestServer
  let single: TestServer
  let ta: Tenant
  let tb: Tenant
  beforeAll(async () => {
    // A long batch budget: how many reports share a batch is then the worker's choice, not the machine's speed.
    batched = await startTestServer(ENV, { worker: { autoStart: false, batchBudgetMs: 60_000 } })
    // `busy` keeps the worker from batching: one job at a time, each computed and written under the lock.
    single = await startTestServer(ENV, { worker: { autoStart: false, busy: () => true, busyPauseMs: 0 } })
    ta = await seedTenant(batched.admin)
    tb = await seedTenant(single.admin)
  }, 60_000)
  afterAll(async () => {
    await batched.close()
    await single.close()
  })

  test('ends every report as one job at a time does: columns, clusters, summaries and events', async () => {
    const idsA = await submitAll(batched, ta, TOTAL)
    const idsB = await submitAll(single, tb, TOTAL)
    const sqlite = sqliteOf(batched.ctx)
    let writeTransactions = 0
    const undo = beforeEachWriteTransaction(sqlite, () => writeTransactions++)
    try {
      await drain(batched)
    } finally {
      undo()
    }
    // Really batched: far fewer write transactions than reports (one job at a time takes one each).
    expect(writeTransactions).toBeLessThan(TOTAL / 4)
    await drain(single)
    const duplicates = expectSameEnd(sqliteOf(batched.ctx), idsA, sqliteOf(single.ctx), idsB)
    expect(duplicates).toBeGreaterThan(TOTAL / 2)
  }, 120_000)

  test('a planned lead archived before the plan is written: the report is clustered again, never attached to it', async () => {
    // A fresh App, one report sent 40 times: the first is the lead every other one is planned to join.
    const fresh = await seedTenant(batched.admin)
    const ids: string[] = []
    for (let i = 0; i < 40; i++) {
      const r = await call(batched.url, 'POST', '/v1/feedback', { auth: fresh.pub, body: body(7) })
      expect(r.status).toBe(201)
      ids.push(r.body.id)
    }
    const sqlite = sqliteOf(batched.ctx)
    // Archive the planned lead of this batch (the first new report: the rest are its copies or its
    // template's) as soon as the batch takes the write lock, i.e. between the two halves.
    let archived = null as string | null
    let writeTransactions = 0
    // Intake quiet for a while: the worker batches (it goes one job at a time right after a commit).
    await Bun.sleep(60)
    const undo = beforeEachWriteTransaction(sqlite, () => {
      writeTransactions++
      if (archived !== null) return
      archived = ids[0]
      sqlite.run("UPDATE feedback SET status = 'archived', version = version + 1 WHERE id = ?", [archived])
    })
    try {
      await batched.worker.tick(100)
    } finally {
      undo()
    }
    expect(archived).toBe(ids[0])
    // One batch: planned with ids[0] as the lead of its copies, written after it was archived.
    expect(writeTransactions).toBe(1)
    expect(rowOf(sqlite, ids[0]).status).toBe('archived')
    for (const id of ids.slice(1)) expect(rowOf(sqlite, id).duplicate_of_id).not.toBe(archived)
    // They clustered among themselves instead, around one of them.
    const leads = new Set(ids.slice(1).map((id) => rowOf(sqlite, id).duplicate_of_id ?? id))
    expect(leads.size).toBe(1)
    expect(ids.slice(1).filter((id) => rowOf(sqlite, id).duplicate_of_id !== null).length).toBe(38)
  }, 60_000)
})
