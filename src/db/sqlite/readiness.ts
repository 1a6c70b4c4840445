/** SQLite side of the /readyz `database` check (modules/health/readiness.ts). */
import type { Check } from '../../modules/health/readiness'
import { pendingMigrations } from './migrate'
import { META, writeMeta } from './instance-meta'
import type { SqliteStorage } from './storage'

export function sqliteDatabaseCheck({ sqlite }: SqliteStorage): () => Check {
  return () => {
    const pending = pendingMigrations(sqlite)
    if (pending.length > 0) return { ok: false, reason: `migrations pending: ${pending.join(', ')}` }
    // A real write (one small row, rewritten in place): SQLite answers SQLITE_FULL or SQLITE_READONLY here.
    writeMeta(sqlite, META.readinessProbe, String(Date.now()))
    return { ok: true }
  }
}
