/**
 * How every fixloop PostgreSQL pool is opened. The driver is node-postgres (`pg`): under Bun (and in a
 * `bun build --compile` binary) it answers again within ~130 ms after the server terminated every busy
 * connection of a pool, failing exactly the queries that were in flight. postgres.js, tried first, left
 * later queries waiting for many seconds in the same test (its pool-wide reconnect backoff reaches 20 s,
 * and with a short backoff some queries still hung). test/pg-driver.test.ts holds both properties.
 */
import pg from 'pg'
import { ApiError } from '../../core/errors'
import { NUL, NUL_MESSAGE } from '../../core/nul'

const INT8 = 20
const NUMERIC = 1700

/**
 * Epoch milliseconds, seqs and counts are `bigint` columns (schema/columns.ts); node-postgres hands int8
 * and numeric (`count(*)`, `sum`) back as strings, where SQLite gives numbers. Every value fixloop keeps
 * stays below 2^53, so they are read as numbers, on fixloop's own pools only (not process-wide).
 */
function getTypeParser(oid: number, format?: 'text' | 'binary'): (value: string) => unknown {
  if (oid === INT8 || oid === NUMERIC) return Number
  return pg.types.getTypeParser(oid, format as 'text')
}

/**
 * How long a statement of fixloop's waits for a lock another session holds (`lock_timeout`): an operator's
 * `LOCK TABLE`, a migration queued behind a long transaction, a forgotten `BEGIN` in psql. Without a bound
 * every request on that table waited as long as the lock (a submission answered after minutes, a read was
 * cut unanswered by the HTTP server's 30 s idle timeout) and held a pool connection meanwhile. Past it the
 * statement fails with lock_not_available (55P03), which answers 503 with Retry-After and defers a job
 * without spending an attempt (db/unavailable.ts). Far above any wait fixloop's own transactions cause
 * each other (milliseconds), and below the pool's 10 s wait for a connection plus the idle timeout.
 * Migrations wait as long as they must (db/pg/migrate.ts sets it off in their transactions).
 */
export const PG_LOCK_TIMEOUT_MS = 10_000

/**
 * Why the server's pool sets `statement_timeout` (FIXLOOP_PG_STATEMENT_TIMEOUT_SECONDS, 20 s by default:
 * config.ts). `lock_timeout` bounds waiting for a lock only: a statement that stalls otherwise (a bad plan over a big
 * table, a starved disk, a runaway trigger) held its request and its pool connection for as long as it
 * ran. PostgreSQL ends it itself (query_canceled, 57014), so the connection is free again at once, unlike
 * a timeout on the client's side, which leaves the statement running; it answers 503 with Retry-After
 * and defers a job without spending an attempt (db/unavailable.ts). Below the HTTP server's 30 s idle
 * timeout, so the client gets that answer; far above any statement of fixloop's own (its deletions run in
 * batches). Migrations run without it (db/pg/migrate.ts), as do the operator's commands that open their
 * own pool (rekey, migrate-db: `openPool`'s default).
 */

/**
 * Why a server's pool sets `idle_in_transaction_session_timeout` (the node lease, FIXLOOP_NODE_LEASE_SECONDS):
 * a node stalled between two statements of a transaction (SIGSTOP, a long GC pause, a VM frozen by its host)
 * kept its connection open, and its locks with it, for as long as the stall: the Org's event counter row
 * locked by an intake batch made every node's submissions for that Org wait 10 s (lock_timeout) and answer
 * 503, the whole stall long (test/cluster-stall.test.ts). PostgreSQL now ends such a session once it has
 * been idle inside its transaction for a lease, when the other nodes count that node dead anyway: its
 * transaction rolls back (nothing of it was acknowledged: the commit never came), its locks go. fixloop's own
 * transactions run their statements back to back, milliseconds apart: one idle for a lease is a node the
 * others count dead already. The commands' pools (backup, rekey: long transactions by design) do not set
 * it, and the key lock turns it off for its own transaction.
 */

/**
 * A pool for `url`; `max` connections. Idle connections a server kills are dropped, not thrown.
 * `statementTimeoutMs`: PostgreSQL's statement_timeout on each connection (0: not set);
 * `idleInTransactionMs`: its idle_in_transaction_session_timeout (0: not set).
 */
export function openPool(url: string, max = 10, statementTimeoutMs = 0, idleInTransactionMs = 0): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: 10_000,
    types: { getTypeParser },
    // A session setting on each new connection before the pool hands it out (pg-pool awaits onConnect;
    // a failure ends that connection and fails the caller's checkout), rather than a startup parameter,
    // which pgbouncer refuses unless told to ignore it.
    onConnect: async (client: pg.ClientBase) => {
      await client.query(`SET lock_timeout = ${PG_LOCK_TIMEOUT_MS}`)
      if (statementTimeoutMs > 0) await client.query(`SET statement_timeout = ${Math.floor(statementTimeoutMs)}`)
      if (idleInTransactionMs > 0) await client.query(`SET idle_in_transaction_session_timeout = ${Math.floor(idleInTransactionMs)}`)
    },
  })
  // An idle client whose backend ended (restart, failover, pg_terminate_backend) emits 'error' on the
  // pool; unhandled, that would end the process. The pool already discards that client.
  pool.on('error', () => {})
  // A client checked out of the pool (a transaction between two statements, the group committer's batch)
  // whose backend ends emits 'error' on itself; with no listener that would end the process. The error
  // also reaches the client's next query, which fails, and the client is released as broken then.
  pool.on('connect', (client) => {
    client.on('error', () => {})
    refuseNulParameters(client)
  })
  return pool
}

/** Does a query parameter (a string, or an array of them for unnest) hold NUL? */
function holdsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes(NUL)
  if (Array.isArray(value)) return value.some(holdsNul)
  return false
}

/**
 * The last line of defence of the NUL rule (core/nul.ts): the HTTP edge refuses NUL in what clients
 * send, but a string that slips through would make PostgreSQL refuse the statement (a 500, and a failed
 * group-commit pass for the other writes of its batch). Checked here, before the statement is sent, it is
 * a 400 invalid_body for its own caller only: the transaction it was part of never saw it.
 */
function refuseNulParameters(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown
  const values = (args: unknown[]): unknown =>
    Array.isArray(args[1]) ? args[1] : args[0] !== null && typeof args[0] === 'object' ? (args[0] as { values?: unknown }).values : undefined
  ;(client as { query: unknown }).query = (...args: unknown[]) => {
    const params = values(args)
    if (Array.isArray(params) && params.some(holdsNul)) {
      const refused = new ApiError('invalid_body', { issues: [{ path: '/', message: `a text ${NUL_MESSAGE}` }] })
      const callback = args.find((a) => typeof a === 'function') as ((e: Error) => void) | undefined
      if (callback) return void queueMicrotask(() => callback(refused))
      return Promise.reject(refused)
    }
    return query(...args)
  }
}
