/**
 * How every fixloop PostgreSQL pool is opened. The driver is node-postgres (`pg`): under Bun (and in a
 * `bun build --compile` binary) it answers again within ~130 ms after the server terminated every busy
 * connection of a pool, failing exactly the queries that were in flight. postgres.js, tried first, left
 * later queries waiting for many seconds in the same test (its pool-wide reconnect backoff reaches 20 s,
 * and with a short backoff some queries still hung). test/pg-driver.test.ts holds both properties.
 */
import pg from 'pg'

/** A pool for `url`; `max` connections. Idle connections a server kills are dropped, not thrown. */
export function openPool(url: string, max = 10): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, connectionTimeoutMillis: 10_000 })
  // An idle client whose backend ended (restart, failover, pg_terminate_backend) emits 'error' on the
  // pool; unhandled, that would end the process. The pool already discards that client.
  pool.on('error', () => {})
  return pool
}
