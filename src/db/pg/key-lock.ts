/**
 * The PostgreSQL side of key-lock.ts (`rekey` against the CLI commands that read the master key): a command
 * holds a SHARED advisory lock from before it checks FIXLOOP_MASTER_KEY until its context closes (or the
 * process ends: PostgreSQL ends the transaction with its connection); `rekey` takes the EXCLUSIVE one in
 * its transaction. Transaction-scoped on both sides, the command's held in a transaction left open on its
 * own connection: a SESSION lock stayed behind on pgbouncer's server connection after the command closed
 * its own (transaction pooling, which docs/operations.md calls safe: no session advisory lock is used), and
 * every rekey after it refused as if a command were still running. Without it a command that had checked the key just before the re-key's
 * transaction wrote its new secret sealed with the old key after the rekey read that table (rows are locked
 * as read, a new one is not): a value no key opens any more. Both sides wait the pool's lock_timeout
 * (client-options.ts), then refuse. Nodes take none: rekey on PostgreSQL asks for every node to be stopped.
 */
import type { Pool, PoolClient } from 'pg'
import { StartupError } from '../../core/startup-error'
import { PG_LOCK_TIMEOUT_MS } from './client-options'

/** The two-key advisory lock id: "fxlp" and 1 (the master key). */
const LOCK_ID = [0x66786c70, 1] as const

const timedOut = (e: unknown) => (e as { code?: string }).code === '55P03'

export interface PgKeyLock {
  release(): void
}

/**
 * Holds the shared lock on one of `pool`'s connections until release (which closes that connection), in a
 * transaction that does nothing else: it writes nothing and holds no snapshot between its statements.
 */
export async function holdKeySharedPg(pool: Pool): Promise<PgKeyLock> {
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    // Idle by design until the command ends: a server's idle_in_transaction_session_timeout (set on the
    // database or role, a managed PostgreSQL's habit) ended this connection mid-command and the lock with
    // it, so a rekey could run under a command still sealing with the old key. Off for this transaction only.
    await client.query('SET LOCAL idle_in_transaction_session_timeout = 0')
    await client.query('SELECT pg_advisory_xact_lock_shared($1, $2)', [...LOCK_ID])
  } catch (e) {
    client.release(true)
    if (timedOut(e)) throw new StartupError(`a rekey is running on this database (for over ${PG_LOCK_TIMEOUT_MS / 1000} s); its master key is changing: run this command again when the rekey has finished`)
    throw e
  }
  let held = true
  return {
    release() {
      if (!held) return
      held = false
      // Destroyed, not returned: the transaction and its lock end with it (a pooler rolls it back).
      client.release(true)
    },
  }
}

/** Takes the exclusive lock for the rest of `tx`'s transaction, or refuses after the lock_timeout. */
export async function lockKeyExclusivePg(tx: PoolClient): Promise<void> {
  try {
    await tx.query('SELECT pg_advisory_xact_lock($1, $2)', [...LOCK_ID])
  } catch (e) {
    if (timedOut(e)) throw new StartupError(`another fixloop command has been using the master key of this database for ${PG_LOCK_TIMEOUT_MS / 1000} s: nothing was re-keyed; run rekey again when it has finished`)
    throw e
  }
}
