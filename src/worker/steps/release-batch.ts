/**
 * Batch windows: with `batchEnabled`, an App's sanitized leads wait until its window closes, then each
 * cluster lead moves on once (to awaiting_manual, or queued in auto_pr mode), so one agent task covers
 * the whole cluster. A window opens when the first lead is sanitized while none is open, and closes
 * `batchWindowHours` later (the `batch_release` job's run_after). At release every waiting lead of the
 * App moves on, so no lead is ever stranded by a late worker or a settings change.
 */
import type { Database } from 'bun:sqlite'
import type { Clock } from '../../core/clock'
import type { JobRow } from '../jobs-repo'
import type { JobStep } from '../loop'
import { enqueueAgentRun } from './start-agent'

export const BATCH_RELEASE_KIND = 'batch_release'

export function createBatchWindows(sqlite: Database, clock: Clock) {
  const pending = sqlite.query(`SELECT run_after FROM jobs WHERE kind = '${BATCH_RELEASE_KIND}' AND app_id = ? LIMIT 1`)
  const open = sqlite.query(`INSERT INTO jobs (kind, app_id, run_after, created_at) VALUES ('${BATCH_RELEASE_KIND}', ?, ?, ?)`)
  const waiting = sqlite.query("SELECT id, version FROM feedback WHERE app_id = ? AND status = 'sanitized' AND duplicate_of_id IS NULL ORDER BY id")
  const modeOf = sqlite.query('SELECT processing_mode FROM apps WHERE id = ?')
  const move = sqlite.query('UPDATE feedback SET status = ?, version = version + 1, updated_at = ? WHERE id = ? AND version = ? AND status = ?')

  return {
    /** Makes sure the App has an open window; returns when it closes (epoch ms). */
    ensureWindow(appId: string, hours: number): number {
      const existing = pending.get(appId) as { run_after: number } | null
      if (existing) return existing.run_after
      const closesAt = clock.now() + hours * 3600_000
      open.run(appId, closesAt, clock.now())
      return closesAt
    },

    step: {
      run(job: JobRow): void {
        const appId = job.app_id
        if (!appId) return
        const mode = (modeOf.get(appId) as { processing_mode: string } | null)?.processing_mode
        const to = mode === 'auto_pr' ? 'queued' : 'awaiting_manual'
        sqlite.transaction(() => {
          for (const lead of waiting.all(appId) as { id: string; version: number }[]) {
            const moved = move.run(to, clock.now(), lead.id, lead.version, 'sanitized').changes === 1
            if (moved && to === 'queued') enqueueAgentRun(sqlite, lead.id, clock.now())
          }
        })()
      },
    } satisfies JobStep,
  }
}
export type BatchWindows = ReturnType<typeof createBatchWindows>
