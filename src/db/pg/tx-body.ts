/**
 * The PostgreSQL driver of transaction bodies (src/db/tx-body.ts): each operation awaited on the
 * transaction's client. Statements run as named prepared statements (storage.ts `prepared`): a body's
 * statements are module-level constants, so each is parsed and planned once per connection.
 */
import type { Body, BodyRunner, Op } from '../tx-body'
import { prepared, type PgStorage } from './storage'
import type { PgTx } from './transaction'

/** The pool as a body's "transaction" outside one: each statement on its own, after-commit work at once. */
type Autocommit = { client: PgStorage['pool']; onCommit: PgTx['onCommit'] }

async function perform(t: PgTx | Autocommit, op: Op): Promise<unknown> {
  switch (op.kind) {
    case 'get':
      return (await t.client.query(prepared(op.sql.pg, op.params as unknown[]))).rows[0]
    case 'all':
      return (await t.client.query(prepared(op.sql.pg, op.params as unknown[]))).rows
    case 'run':
      return (await t.client.query(prepared(op.sql.pg, op.params as unknown[]))).rowCount ?? 0
    case 'native':
      if (!('release' in t.client)) throw new Error('a native step runs in a transaction (BodyRunner.transaction), not on the pool')
      return (op.step as (tx: PgTx) => unknown)(t as PgTx)
    case 'afterCommit':
      return t.onCommit(op.callback)
  }
}

/** The runner of a repository written once (src/db/bodies/), over `storage`'s pool. */
export function pgRunner(storage: PgStorage): BodyRunner {
  const autocommit: Autocommit = { client: storage.pool, onCommit: (callback) => callback() }
  return {
    read: (body) => runPg(autocommit, body),
    transaction: (body) => storage.tx((client, _db, onCommit) => runPg({ client, onCommit }, body)),
  }
}

/** Runs `body` in the transaction `t` (or statement by statement on the pool, for `pgRunner`'s reads). */
export async function runPg<T>(t: PgTx | Autocommit, body: Body<T>): Promise<T> {
  let input: unknown
  let failed = false
  for (;;) {
    const step = failed ? body.throw(input) : body.next(input)
    if (step.done) return step.value
    try {
      input = await perform(t, step.value)
      failed = false
    } catch (e) {
      input = e
      failed = true
    }
  }
}
