/**
 * The SQLite driver of transaction bodies (src/db/tx-body.ts): every operation answered at once, so a
 * body runs synchronously inside bun:sqlite's transaction, with no await anywhere. One driver per
 * connection (`sqliteBodies`): it prepares each statement once (keyed by the statement object, a Map
 * lookup per operation, no text hashing) and reuses it, like the repositories' own `sqlite.query`.
 */
import type { Database, Statement } from 'bun:sqlite'
import type { Body, BodyRunner, Op, Sql } from '../tx-body'

export interface SqliteBodies {
  /** Runs `body` in the caller's transaction (or statement by statement outside one). */
  run<T>(body: Body<T>): T
  /**
   * Runs `body` in a transaction of its own that takes the write lock before it reads (BEGIN IMMEDIATE),
   * or nested in the caller's (a savepoint): a read-then-write body must wait its turn, not fail with
   * SQLITE_BUSY_SNAPSHOT when another connection wrote in between.
   */
  transaction<T>(body: Body<T>): T
}

const drivers = new WeakMap<Database, SqliteBodies>()

/** The driver of `sqlite` (made on first use: every repository of the connection shares its statements). */
export function sqliteBodies(sqlite: Database): SqliteBodies {
  let driver = drivers.get(sqlite)
  if (!driver) drivers.set(sqlite, (driver = createDriver(sqlite)))
  return driver
}

/** The runner of a repository written once (src/db/bodies/), over `sqlite`: every body answered synchronously. */
export function sqliteRunner(sqlite: Database): BodyRunner {
  const driver = sqliteBodies(sqlite)
  return {
    read: async (body) => driver.run(body),
    transaction: async (body) => driver.transaction(body),
  }
}

function createDriver(sqlite: Database): SqliteBodies {
  const statements = new Map<Sql, Statement>()
  const prepare = (s: Sql): Statement => {
    let statement = statements.get(s)
    if (statement === undefined) statements.set(s, (statement = sqlite.query(s.sqlite)))
    return statement
  }

  function perform(op: Op): unknown {
    switch (op.kind) {
      case 'get':
        return prepare(op.sql).get(...(op.params as never[])) ?? undefined
      case 'all':
        return prepare(op.sql).all(...(op.params as never[]))
      case 'run':
        return prepare(op.sql).run(...(op.params as never[])).changes
      case 'native': {
        const out = (op.step as (tx: Database) => unknown)(sqlite)
        if (out instanceof Promise) throw new Error('a SQLite transaction step must not be async: nothing may await inside a SQLite transaction')
        return out
      }
      case 'afterCommit':
        return op.callback()
    }
  }

  function run<T>(body: Body<T>): T {
    let input: unknown
    let failed = false
    for (;;) {
      const step = failed ? body.throw(input) : body.next(input)
      if (step.done) return step.value
      try {
        input = perform(step.value)
        failed = false
      } catch (e) {
        input = e
        failed = true
      }
    }
  }

  const immediate = sqlite.transaction((body: Body<unknown>) => run(body)).immediate
  return { run, transaction: <T>(body: Body<T>) => immediate(body) as T }
}
