/**
 * Opens fixloop's PostgreSQL pool and proves it works before anything runs on it, turning the driver's
 * errors into a sentence an operator can act on (exit 2). The password is never printed: the database is
 * named as user@host:port/db.
 */
import type { Pool } from 'pg'
import { StartupError } from '../../core/startup-error'
import { openPool } from './client-options'

/** `user@host:port/db` of a postgres:// URL: what messages may show. */
export function describeDatabase(url: string): string {
  const u = new URL(url)
  const db = decode(u.pathname.replace(/^\//, '')) || decode(u.username) || 'postgres'
  return `${decode(u.username) || '(default user)'}@${u.hostname}:${u.port || '5432'}/${db}`
}

/**
 * A URL part as text; one with a stray `%` (`/fix%loop`, a user `a%zz`) is shown as written. URL parsing
 * accepts such a URL, and decodeURIComponent's URIError made every command crash (exit 1, a stack trace)
 * while naming the database for a message, instead of saying what PostgreSQL answered (ops attack).
 */
function decode(part: string): string {
  try {
    return decodeURIComponent(part)
  } catch {
    return part
  }
}

function explain(err: unknown, where: string): string {
  const e = err as { code?: string; message?: string }
  switch (e.code) {
    case 'ECONNREFUSED':
      return `cannot reach PostgreSQL at ${where}: connection refused (is it running, and listening on that address?)`
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot reach PostgreSQL at ${where}: the host name does not resolve`
    case '28P01':
    case '28000':
      return `PostgreSQL at ${where} refused the credentials (check the user and password in FIXLOOP_DATABASE_URL)`
    case '3D000':
      return `PostgreSQL at ${where}: the database does not exist (create it first: createdb, or CREATE DATABASE)`
    default:
      return `cannot use PostgreSQL at ${where}: ${e.message ?? String(err)}`
  }
}

/**
 * A pool on `url` that has answered one query; a StartupError saying what is wrong otherwise.
 * `statementTimeoutMs`, `idleInTransactionMs`: client-options.ts `openPool`'s.
 */
export async function connectPg(url: string, max = 10, statementTimeoutMs = 0, idleInTransactionMs = 0): Promise<Pool> {
  const pool = openPool(url, max, statementTimeoutMs, idleInTransactionMs)
  try {
    const { rows } = await pool.query<{ version: number }>("SELECT current_setting('server_version_num')::int AS version")
    const version = rows[0]?.version ?? 0
    if (version < 150000) throw new StartupError(`PostgreSQL at ${describeDatabase(url)} is version ${Math.floor(version / 10000)}; fixloop needs 15 or newer`)
    return pool
  } catch (err) {
    await pool.end().catch(() => {})
    if (err instanceof StartupError) throw err
    throw new StartupError(explain(err, describeDatabase(url)))
  }
}
