/**
 * One business transaction on a pooled PostgreSQL connection (node-postgres). The pool hands a client
 * out; BEGIN, the work, COMMIT, or ROLLBACK on any throw; the client goes back to the pool, or is
 * destroyed when the connection itself broke (a client that saw a socket error must not serve the next
 * caller).
 */
import type { Pool, PoolClient } from 'pg'
import { eventsBegin, eventsCommitted } from './event-signal'

/** Registers a callback to run once the transaction has committed (never after a rollback). */
export type OnCommit = (callback: () => void) => void

/** A transaction that repository steps join: its client, and where to register after-commit work. */
export interface PgTx {
  client: PoolClient
  onCommit: OnCommit
}

export async function withTransaction<T>(pool: Pool, work: (client: PoolClient, onCommit: OnCommit) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  let broken: Error | undefined
  const committed: (() => void)[] = []
  try {
    eventsBegin(client)
    await client.query('BEGIN')
    const out = await work(client, (callback) => committed.push(callback))
    await client.query('COMMIT')
    eventsCommitted(client)
    // After COMMIT: a worker woken now finds the job it is woken for.
    for (const callback of committed) callback()
    return out
  } catch (err) {
    await client.query('ROLLBACK').catch((rollbackError: Error) => {
      broken = rollbackError
    })
    throw err
  } finally {
    client.release(broken)
  }
}
