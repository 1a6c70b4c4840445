/**
 * One business transaction on a pooled PostgreSQL connection (node-postgres). The pool hands a client
 * out; BEGIN, the work, COMMIT, or ROLLBACK on any throw; the client goes back to the pool, or is
 * destroyed when the connection itself broke (a client that saw a socket error must not serve the next
 * caller).
 */
import type { Pool, PoolClient } from 'pg'

export async function withTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  let broken: Error | undefined
  try {
    await client.query('BEGIN')
    const out = await work(client)
    await client.query('COMMIT')
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
