/**
 * The durable job table's SQLite side (the port: src/lifecycle/jobs-repo.ts). Synchronous, so the
 * processing step can delete its job inside its own transaction (`finish`), as it always did.
 */
import type { Database, Statement } from 'bun:sqlite'
import { JOB_KINDS, type JobKind, type JobRow } from '../../lifecycle/jobs'

/**
 * `kinds`: the job kinds this repo's worker runs (all when omitted). The processing thread runs `process`
 * and `batch_release`, the HTTP thread's worker the rest; each claims and waits only for its own kinds.
 */
export function createSqliteJobs(sqlite: Database, kinds?: readonly JobKind[]) {
  // Spelled into the SQL: only the known kind names (JOB_KINDS), never a caller's string.
  if (kinds?.some((k) => !JOB_KINDS.includes(k))) throw new Error(`unknown job kind in ${kinds.join(', ')}`)
  // The processing thread's kinds are nearly every job: walking the due-time index in order finds one at
  // once, so its filter must not steer SQLite to the kind index (`+kind` is not indexable: that sort of
  // 200k due jobs per claim). The HTTP thread's kinds are a handful among them: the kind index
  // (jobs_kind_due_idx) finds those without scanning the rest. test/perf-plans.test.ts checks both.
  const kindColumn = kinds?.includes('process') ? '+kind' : 'kind'
  const ofKinds = kinds ? `AND ${kindColumn} IN (${kinds.map((k) => `'${k}'`).join(', ')})` : ''
  const claim: Statement = sqlite.query(
    `UPDATE jobs SET lease_until = $leaseUntil, lease_owner = $owner, attempts = attempts + 1
     WHERE id = (SELECT id FROM jobs WHERE run_after <= $now AND (lease_until IS NULL OR lease_until < $now) ${ofKinds}
                 ORDER BY run_after, id LIMIT 1)
     RETURNING *`,
  )
  const claimBatch: Statement = sqlite.query(
    `UPDATE jobs SET lease_until = $leaseUntil, lease_owner = $owner, attempts = attempts + 1
     WHERE id IN (SELECT id FROM jobs WHERE kind = $kind AND run_after <= $now AND (lease_until IS NULL OR lease_until < $now)
                  ORDER BY run_after, id LIMIT $n)
     RETURNING *`,
  )
  // A read first: an UPDATE takes SQLite's write lock even when it matches nothing, and the other
  // thread's writes would make an idle loop wait for it (db/sqlite/write-turns.ts).
  const anyDue = sqlite.query(`SELECT 1 FROM jobs WHERE run_after <= $now AND (lease_until IS NULL OR lease_until < $now) ${ofKinds} LIMIT 1`)
  const finish = sqlite.query('DELETE FROM jobs WHERE id = ?')
  const retry = sqlite.query('UPDATE jobs SET lease_until = NULL, lease_owner = NULL, run_after = ?, last_error = ? WHERE id = ?')
  const defer = sqlite.query('UPDATE jobs SET lease_until = NULL, lease_owner = NULL, run_after = ?, attempts = MAX(0, attempts - 1) WHERE id = ?')
  const releaseAll = sqlite.query('UPDATE jobs SET lease_until = NULL, lease_owner = NULL WHERE lease_until IS NOT NULL AND id IN (SELECT value FROM json_each(?))')
  const owners = sqlite.query('SELECT DISTINCT lease_owner AS owner FROM jobs WHERE lease_until IS NOT NULL')
  const releaseOwner = sqlite.query('UPDATE jobs SET lease_until = NULL, lease_owner = NULL WHERE lease_until IS NOT NULL AND lease_owner IS ?')
  const nextDue = sqlite.query(`SELECT MIN(CASE WHEN lease_until IS NULL THEN run_after ELSE MAX(run_after, lease_until) END) AS at FROM jobs WHERE 1 ${ofKinds}`)
  const hasKind = sqlite.query('SELECT 1 FROM jobs WHERE kind = ? LIMIT 1')
  const runAfterOf = sqlite.query('SELECT run_after FROM jobs WHERE kind = ? AND app_id = ? LIMIT 1')

  return {
    claim: (now: number, leaseMs: number, owner: string): JobRow | null =>
      anyDue.get({ now }) === null ? null : (claim.get({ now, leaseUntil: now + leaseMs, owner }) as JobRow | null),
    /** Up to `n` more due jobs of one kind, leased together, in the order `claim` would take them. */
    claimBatch(kind: string, n: number, now: number, leaseMs: number, owner: string): JobRow[] {
      if (n <= 0) return []
      const rows = claimBatch.all({ kind, n, now, leaseUntil: now + leaseMs, owner }) as JobRow[]
      return rows.sort((a, b) => a.run_after - b.run_after || a.id - b.id)
    },
    /** Deletes a job; joins the caller's transaction when there is one (the processing step's). */
    finish: (id: number): void => void finish.run(id),
    retry: (id: number, runAfter: number, error: string): void => void retry.run(runAfter, error.slice(0, 2000), id),
    defer: (id: number, runAfter: number): void => void defer.run(runAfter, id),
    release: (ids: number[]): void => void releaseAll.run(JSON.stringify(ids)),
    reclaimOrphans: (isGone: (owner: string) => boolean): number => {
      let n = 0
      for (const { owner } of owners.all() as { owner: string | null }[]) {
        if (owner === null || isGone(owner)) n += releaseOwner.run(owner).changes
      }
      return n
    },
    nextDueAt: (): number | null => (nextDue.get() as { at: number | null }).at,
    hasKind: (kind: JobKind): boolean => hasKind.get(kind) !== null,
    runAfterOf: (kind: JobKind, appId: string): number | null => (runAfterOf.get(kind, appId) as { run_after: number } | null)?.run_after ?? null,
  }
}
export type SqliteJobs = ReturnType<typeof createSqliteJobs>
