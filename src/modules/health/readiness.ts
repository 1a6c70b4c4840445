/**
 * What GET /readyz checks, each with a reason an operator can act on: the database takes a write (a full
 * disk, a read-only mount or an I/O error fail it), the data dir's filesystem has room, the job worker is
 * running and not stuck on one job, the WAL checkpointer is alive, the master key matched its check value,
 * and every embedded migration is applied.
 */
import type { Database } from 'bun:sqlite'
import { statfsSync } from 'node:fs'
import { pendingMigrations } from '../../db/migrate'
import { META, writeMeta } from '../../db/instance-meta'

export interface Check {
  ok: boolean
  reason?: string
}

export interface ReadinessDeps {
  sqlite: Database
  dataDir: string
  /** Below this many free bytes on the data dir's filesystem the server is not ready. */
  minFreeBytes: number
  worker: () => Check
  checkpointer: () => Check
  masterKey: () => Check
}

export type ReadinessReport = { ready: boolean; checks: Record<string, Check> }

function probe(fn: () => Check): Check {
  try {
    return fn()
  } catch (e) {
    return { ok: false, reason: e instanceof Error ? e.message : String(e) }
  }
}

export function createReadiness(d: ReadinessDeps) {
  const database = (): Check => {
    const pending = pendingMigrations(d.sqlite)
    if (pending.length > 0) return { ok: false, reason: `migrations pending: ${pending.join(', ')}` }
    // A real write (one small row, rewritten in place): SQLite answers SQLITE_FULL or SQLITE_READONLY here.
    writeMeta(d.sqlite, META.readinessProbe, String(Date.now()))
    return { ok: true }
  }
  const disk = (): Check => {
    const s = statfsSync(d.dataDir)
    const free = Number(s.bavail) * Number(s.bsize)
    if (free < d.minFreeBytes) return { ok: false, reason: `only ${free} bytes free on the data dir's filesystem (need ${d.minFreeBytes}; FIXLOOP_MIN_FREE_DISK_MB)` }
    return { ok: true }
  }
  return {
    check(): ReadinessReport {
      const checks = {
        database: probe(database),
        disk: probe(disk),
        worker: probe(d.worker),
        checkpointer: probe(d.checkpointer),
        masterKey: probe(d.masterKey),
      }
      return { ready: Object.values(checks).every((c) => c.ok), checks }
    },
  }
}
export type Readiness = ReturnType<typeof createReadiness>
