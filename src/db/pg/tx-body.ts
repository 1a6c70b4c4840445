/**
 * The PostgreSQL driver of transaction bodies (src/db/tx-body.ts): each operation awaited on the
 * transaction's client. Statements run as named prepared statements (storage.ts `prepared`): a body's
 * statements are module-level constants, so each is parsed and planned once per connection.
 */
import type { Body, Op } from '../tx-body'
import { prepared } from './storage'
import type { PgTx } from './transaction'

async function perform(t: PgTx, op: Op): Promise<unknown> {
  switch (op.kind) {
    case 'get':
      return (await t.client.query(prepared(op.sql.pg, op.params as unknown[]))).rows[0]
    case 'all':
      return (await t.client.query(prepared(op.sql.pg, op.params as unknown[]))).rows
    case 'run':
      return (await t.client.query(prepared(op.sql.pg, op.params as unknown[]))).rowCount ?? 0
    case 'native':
      return (op.step as (tx: PgTx) => unknown)(t)
    case 'afterCommit':
      return t.onCommit(op.callback)
  }
}

/** Runs `body` in the transaction `t`. */
export async function runPg<T>(t: PgTx, body: Body<T>): Promise<T> {
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
