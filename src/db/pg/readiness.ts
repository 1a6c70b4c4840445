/** PostgreSQL side of the /readyz `database` check (modules/health/readiness.ts). */
import type { Check } from '../../modules/health/readiness'
import { pendingPgMigrations } from './migrate'
import type { PgStorage } from './storage'

/** How long /readyz waits for the database: a load balancer's probe must get an answer, not hang. */
export const PG_READINESS_TIMEOUT_MS = 2_000

/**
 * The database answers `SELECT 1` and has every embedded migration, within `timeoutMs`. A server that is
 * down, unreachable, out of connections or stuck fails the check (the pool's own connection timeout is
 * longer; the query goes on in the background and its connection returns to the pool when it ends).
 */
export function pgDatabaseCheck({ pool }: PgStorage, timeoutMs = PG_READINESS_TIMEOUT_MS): () => Promise<Check> {
  return async () => {
    let timer: ReturnType<typeof setTimeout> | undefined
    const late = new Promise<Check>((resolve) => {
      timer = setTimeout(() => resolve({ ok: false, reason: `the database did not answer within ${timeoutMs} ms` }), timeoutMs)
    })
    const probe = (async (): Promise<Check> => {
      await pool.query('SELECT 1')
      const pending = await pendingPgMigrations(pool)
      if (pending.length > 0) return { ok: false, reason: `migrations pending: ${pending.join(', ')}` }
      return { ok: true }
    })().catch((e: unknown): Check => ({ ok: false, reason: `the database is unreachable: ${e instanceof Error ? e.message : String(e)}` }))
    try {
      return await Promise.race([probe, late])
    } finally {
      clearTimeout(timer)
    }
  }
}
