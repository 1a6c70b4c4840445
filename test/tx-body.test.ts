/**
 * src/db/tx-body.ts: one transaction body, run synchronously by the SQLite driver and awaited by the
 * PostgreSQL driver, on the real engines. The same body gives the same rows, results and rollbacks on both.
 */
import { expect, test } from 'bun:test'
import { describeEachDialect, type FreshStore } from './dialects'
import { afterCommit, all, get, lockingRead, native, numberPlaceholders, run, sql, type Body } from '../src/db/tx-body'
import { sqliteBodies } from '../src/db/sqlite/tx-body'
import { runPg } from '../src/db/pg/tx-body'
import type { PgTx } from '../src/db/pg/transaction'

test('placeholders: ? numbered $1…, ?NNN kept, quoted text untouched, mixing refused', () => {
  expect(numberPlaceholders('SELECT a FROM t WHERE b = ? AND c IN (?, ?)')).toBe('SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)')
  expect(numberPlaceholders("SELECT '?', \"a?\" FROM t WHERE x = ? AND y = 'it''s ?'")).toBe("SELECT '?', \"a?\" FROM t WHERE x = $1 AND y = 'it''s ?'")
  expect(numberPlaceholders('SELECT ?1, ?2, ?1')).toBe('SELECT $1, $2, $1')
  expect(() => numberPlaceholders('SELECT ?1, ?')).toThrow(/mixes/)
  expect(() => numberPlaceholders("SELECT 'open")).toThrow(/unterminated/)
  expect(sql('SELECT ? AS n', 'SELECT ?::int AS n')).toEqual({ sqlite: 'SELECT ? AS n', pg: 'SELECT $1::int AS n' })
  expect(lockingRead('SELECT id FROM t WHERE id = ?')).toEqual({ sqlite: 'SELECT id FROM t WHERE id = ?', pg: 'SELECT id FROM t WHERE id = $1 FOR UPDATE' })
})

const CREATE = sql('CREATE TABLE tx_body_items (id TEXT PRIMARY KEY, n INTEGER NOT NULL)')
const INSERT = sql('INSERT INTO tx_body_items (id, n) VALUES (?, ?)')
const BUMP = sql('UPDATE tx_body_items SET n = n + ? WHERE n >= ?')
const ONE = lockingRead('SELECT id, n AS "theCount" FROM tx_body_items WHERE id = ?')
const ALL = sql('SELECT id, n FROM tx_body_items ORDER BY id')
// The dialects' texts differ (a cast PostgreSQL needs to type the parameter): one statement, two texts.
const TWICE = sql('SELECT ? * 2 AS n', 'SELECT ?::int * 2 AS n')

/** Runs `body` in a transaction of the store's dialect: synchronously on SQLite, awaited on PostgreSQL. */
async function inTransaction<T>(s: FreshStore, body: () => Body<T>): Promise<T> {
  if (s.storage.dialect === 'sqlite') return sqliteBodies(s.storage.sqlite).transaction(body())
  return s.storage.tx((client, _db, onCommit) => runPg({ client, onCommit }, body()))
}

function* insertAll(items: [string, number][]): Body<number> {
  for (const [id, n] of items) yield* run(INSERT, id, n)
  return items.length
}

describeEachDialect('transaction bodies', (fresh) => {
  const setUp = async () => {
    const s = await fresh()
    await inTransaction(s, () => run(CREATE))
    return s
  }

  test('one body: statements, composed bodies, typed rows, change counts, a per-dialect text', async () => {
    const s = await setUp()
    const out = await inTransaction(s, function* () {
      const inserted = yield* insertAll([['a', 1], ['b', 2], ['c', 3]])
      const bumped = yield* run(BUMP, 10, 2)
      const b = yield* get<{ id: string; theCount: number }>(ONE, 'b')
      const none = yield* get(ONE, 'zzz')
      const rows = yield* all<{ id: string; n: number }>(ALL)
      const twice = yield* get<{ n: number }>(TWICE, 21)
      return { inserted, bumped, b, none, rows, twice: twice!.n }
    })
    expect(out).toEqual({
      inserted: 3,
      bumped: 2,
      b: { id: 'b', theCount: 12 },
      none: undefined,
      rows: [{ id: 'a', n: 1 }, { id: 'b', n: 12 }, { id: 'c', n: 13 }],
      twice: 42,
    })
  })

  test('a failing statement is thrown into the body (finally runs) and the whole transaction rolls back', async () => {
    const s = await setUp()
    const seen: string[] = []
    const failing = inTransaction(s, function* () {
      try {
        yield* run(INSERT, 'x', 1)
        yield* run(INSERT, 'x', 2) // primary key
        seen.push('after')
      } finally {
        seen.push('finally')
      }
    })
    await expect(failing).rejects.toThrow()
    expect(seen).toEqual(['finally'])
    expect(await inTransaction(s, () => all(ALL))).toEqual([])
  })

  test('a thrown rule rolls back what the body wrote before it', async () => {
    const s = await setUp()
    const failing = inTransaction(s, function* () {
      yield* run(INSERT, 'y', 1)
      throw new Error('rule says no')
    })
    await expect(failing).rejects.toThrow('rule says no')
    expect(await inTransaction(s, () => all(ALL))).toEqual([])
  })

  test('afterCommit runs once the writes are in (PostgreSQL: after COMMIT, never after a rollback)', async () => {
    const s = await setUp()
    const calls: string[] = []
    await inTransaction(s, function* () {
      yield* run(INSERT, 'z', 1)
      yield* afterCommit(() => calls.push('committed'))
    })
    expect(calls).toEqual(['committed'])
    if (s.dialect === 'pg') {
      const failing = inTransaction(s, function* () {
        yield* afterCommit(() => calls.push('rolled back'))
        throw new Error('no')
      })
      await expect(failing).rejects.toThrow('no')
      expect(calls).toEqual(['committed'])
    }
  })

  test("native: the dialect's own step, given the driver's transaction", async () => {
    const s = await setUp()
    const step =
      s.storage.dialect === 'sqlite'
        ? native((db: import('bun:sqlite').Database) => (db.query('SELECT 7 AS n').get() as { n: number }).n)
        : native(async (t: PgTx) => (await t.client.query<{ n: number }>('SELECT 7 AS n')).rows[0].n)
    expect(await inTransaction(s, () => step)).toBe(7)
  })
})

describeEachDialect('transaction bodies, SQLite driver', (fresh, dialect) => {
  if (dialect !== 'sqlite') return
  test('synchronous: the result is there when run returns; an async step is refused', async () => {
    const s = await fresh()
    if (s.storage.dialect !== 'sqlite') throw new Error('sqlite only')
    const bodies = sqliteBodies(s.storage.sqlite)
    bodies.run(run(CREATE))
    expect(bodies.transaction(insertAll([['a', 1]]))).toBe(1)
    expect(() => bodies.transaction(native(async () => 1))).toThrow(/must not be async/)
  })

  test('each statement prepared once per connection, and one driver per connection', async () => {
    const s = await fresh()
    if (s.storage.dialect !== 'sqlite') throw new Error('sqlite only')
    const { sqlite } = s.storage
    const prepared: string[] = []
    const query = sqlite.query.bind(sqlite)
    sqlite.query = ((text: string) => (prepared.push(text), query(text))) as typeof sqlite.query
    const bodies = sqliteBodies(sqlite)
    bodies.run(run(CREATE))
    for (let i = 0; i < 50; i++) bodies.transaction(insertAll([[`i${i}`, i]]))
    for (let i = 0; i < 50; i++) sqliteBodies(sqlite).run(get(ONE, `i${i}`))
    expect(prepared.filter((t) => t === INSERT.sqlite)).toHaveLength(1)
    expect(prepared.filter((t) => t === ONE.sqlite)).toHaveLength(1)
    expect(sqliteBodies(sqlite)).toBe(bodies)
  })

  test('nested in the caller’s transaction: a savepoint, rolled back with the caller', async () => {
    const s = await fresh()
    if (s.storage.dialect !== 'sqlite') throw new Error('sqlite only')
    const { sqlite } = s.storage
    const bodies = sqliteBodies(sqlite)
    bodies.run(run(CREATE))
    expect(() =>
      sqlite.transaction(() => {
        bodies.transaction(insertAll([['n', 1]]))
        throw new Error('caller fails')
      })(),
    ).toThrow('caller fails')
    expect(bodies.run(all(ALL))).toEqual([])
  })
})
