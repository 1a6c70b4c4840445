/**
 * src/db/pg/group-commit.ts on a real PostgreSQL: writes of one event-loop turn share one transaction,
 * a failing write (a throw, a unique violation) rejects alone while the others commit, a COMMIT that
 * fails or a connection killed mid-batch rejects that batch, and the next batch works again.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Pool } from 'pg'
import { openPool } from '../src/db/pg/client-options'
import { PgGroupCommitter, type PgBulk } from '../src/db/pg/group-commit'
import { sharedPostgres } from './dialects'

let pool: Pool
let admin: Pool

beforeAll(async () => {
  const server = await sharedPostgres()
  const url = await server.createDatabase('gc')
  pool = openPool(url, 4)
  admin = openPool(url, 2)
  await pool.query('CREATE TABLE t (id integer PRIMARY KEY, note text)')
  // Checked at COMMIT only: two writes of one batch can each succeed and the COMMIT still fail.
  await pool.query('CREATE TABLE d (v integer, CONSTRAINT d_v_uq UNIQUE (v) DEFERRABLE INITIALLY DEFERRED)')
})

afterAll(async () => {
  await pool?.end()
  await admin?.end()
})

const ids = async (): Promise<number[]> => (await pool.query('SELECT id FROM t ORDER BY id')).rows.map((r) => r.id as number)
const reset = () => pool.query('TRUNCATE t, d')

/** A write that inserts `id` and answers with its transaction's id. */
const insert = (id: number) => async ({ client }: { client: import('pg').PoolClient }) => {
  await client.query('INSERT INTO t (id) VALUES ($1)', [id])
  return Number((await client.query('SELECT txid_current() AS x')).rows[0].x)
}

test('writes queued in one turn commit in few transactions, every one after COMMIT', async () => {
  await reset()
  const gc = new PgGroupCommitter(pool)
  const txids = await Promise.all(Array.from({ length: 300 }, (_, i) => gc.run(insert(i))))
  expect(await ids()).toEqual(Array.from({ length: 300 }, (_, i) => i))
  // 300 writes, batches capped at 256: two transactions (a third only if a write arrived late).
  expect(new Set(txids).size).toBeLessThanOrEqual(3)
  expect(gc.stats.batches).toBeLessThanOrEqual(3)
  expect(gc.stats.writes).toBe(300)
  // Order within a batch is queue order.
  expect(txids.slice(0, 256).every((x) => x === txids[0])).toBe(true)
})

test('a write that throws rejects alone; the others of its batch commit, their after-commit work runs', async () => {
  await reset()
  const gc = new PgGroupCommitter(pool)
  const ran: number[] = []
  const write = (id: number) => async ({ client, onCommit }: { client: import('pg').PoolClient; onCommit: (cb: () => void) => void }) => {
    await client.query('INSERT INTO t (id) VALUES ($1)', [id])
    onCommit(() => ran.push(id))
    if (id === 3) throw new Error('boom')
    return id
  }
  const results = await Promise.allSettled([1, 2, 3, 4, 5].map((id) => gc.run(write(id))))
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled'])
  expect((results[2] as PromiseRejectedResult).reason.message).toBe('boom')
  expect(await ids()).toEqual([1, 2, 4, 5])
  // After-commit callbacks of the first (rolled back) pass are dropped: each kept write's runs once.
  expect(ran.sort()).toEqual([1, 2, 4, 5])
  expect(gc.stats.batches).toBe(1)
})

test('a unique violation rejects its own write only; a lone failing write commits nothing', async () => {
  await reset()
  await pool.query('INSERT INTO t (id) VALUES (7)')
  const gc = new PgGroupCommitter(pool)
  const results = await Promise.allSettled([6, 7, 8].map((id) => gc.run(insert(id))))
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
  expect((results[1] as PromiseRejectedResult).reason.code).toBe('23505')
  expect(await ids()).toEqual([6, 7, 8])
  await expect(gc.run(insert(8))).rejects.toMatchObject({ code: '23505' })
  expect(await gc.run(insert(9))).toBeGreaterThan(0)
  expect(await ids()).toEqual([6, 7, 8, 9])
})

test('a COMMIT that fails rejects every write of the batch; the next batch commits', async () => {
  await reset()
  const gc = new PgGroupCommitter(pool)
  const write = (id: number, v: number) => async ({ client }: { client: import('pg').PoolClient }) => {
    await client.query('INSERT INTO t (id) VALUES ($1)', [id])
    await client.query('INSERT INTO d (v) VALUES ($1)', [v])
  }
  const results = await Promise.allSettled([gc.run(write(1, 1)), gc.run(write(2, 1)), gc.run(write(3, 2))])
  expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected'])
  expect((results[0] as PromiseRejectedResult).reason.code).toBe('23505')
  expect(await ids()).toEqual([])
  await gc.run(write(4, 3))
  expect(await ids()).toEqual([4])
})

test('a connection killed mid-batch rejects that batch; later writes succeed on a fresh one', async () => {
  await reset()
  const gc = new PgGroupCommitter(pool)
  const kill = async ({ client }: { client: import('pg').PoolClient }) => {
    await client.query('INSERT INTO t (id) VALUES (2)')
    const pid = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid
    await admin.query('SELECT pg_terminate_backend($1)', [pid])
    await client.query('INSERT INTO t (id) VALUES (3)')
  }
  const results = await Promise.allSettled([gc.run(insert(1)), gc.run(kill), gc.run(insert(4))])
  expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected'])
  expect(await ids()).toEqual([])
  const later = await Promise.allSettled([5, 6, 7].map((id) => gc.run(insert(id))))
  expect(later.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled'])
  expect(await ids()).toEqual([5, 6, 7])
})

test('while a batch commits, new writes wait for the next one (one batch in flight)', async () => {
  await reset()
  const gc = new PgGroupCommitter(pool)
  let release!: () => void
  const gate = new Promise<void>((r) => (release = r))
  const slow = async ({ client }: { client: import('pg').PoolClient }) => {
    await client.query('INSERT INTO t (id) VALUES (1)')
    await gate
    return Number((await client.query('SELECT txid_current() AS x')).rows[0].x)
  }
  const first = gc.run(slow)
  await Bun.sleep(50)
  const later = [gc.run(insert(2)), gc.run(insert(3))]
  await Bun.sleep(50)
  // Nothing of the second batch ran yet: the first still holds the committer.
  expect((await admin.query('SELECT count(*) AS n FROM t')).rows[0].n).toBe(0)
  release()
  const [x1, x2, x3] = await Promise.all([first, ...later])
  expect(x2).toBe(x3)
  expect(x1).not.toBe(x2)
  expect(gc.stats.batches).toBe(2)
})

test('bulk items of one batch run as one step, in queue order, between the other writes', async () => {
  await reset()
  const gc = new PgGroupCommitter(pool)
  const calls: number[][] = []
  const bulk: PgBulk<number, string> = {
    async writeMany({ client }, items) {
      calls.push(items)
      await client.query('INSERT INTO t (id) SELECT unnest($1::int[])', [items])
      return items.map((i) => `row ${i}`)
    },
  }
  const answers = await Promise.all([gc.runBulk(bulk, 1), gc.run(insert(100)), gc.runBulk(bulk, 2), gc.runBulk(bulk, 3), gc.run(insert(101))])
  expect(answers.filter((a) => typeof a === 'string')).toEqual(['row 1', 'row 2', 'row 3'])
  expect(calls).toEqual([[1, 2, 3]])
  expect(await ids()).toEqual([1, 2, 3, 100, 101])
})

test('a bulk step with one bad item fails only that item: the batch runs again one item at a time', async () => {
  await reset()
  await pool.query('INSERT INTO t (id) VALUES (7)')
  const gc = new PgGroupCommitter(pool)
  const committed: number[][] = []
  const bulk: PgBulk<number, number> = {
    async writeMany({ client, onCommit }, items) {
      await client.query('INSERT INTO t (id) SELECT unnest($1::int[])', [items])
      onCommit(() => committed.push(items))
      return items
    },
  }
  const settled = await Promise.allSettled([5, 6, 7, 8].map((i) => gc.runBulk(bulk, i)))
  expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled'])
  expect(String((settled[2] as PromiseRejectedResult).reason)).toContain('duplicate key')
  expect(await ids()).toEqual([5, 6, 7, 8])
  // The rolled-back combined step's after-commit work was dropped; each surviving item's ran once.
  expect(committed).toEqual([[5], [6], [8]])
})
