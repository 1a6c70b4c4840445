/**
 * The durable job table as the worker sees it: claim with a lease, finish, retry with backoff. Jobs are
 * inserted only by the lifecycle (`lifecycle.enqueue`), never here.
 */
import type { Database, Statement } from 'bun:sqlite'
import { JOB_KINDS, type JobKind } from '../lifecycle/jobs'

export interface JobRow {
  id: number
  kind: string
  feedback_id: string | null
  /** App-wide jobs (batch release) name their App here. */
  app_id: string | null
  run_after: number
  lease_until: number | null
  lease_owner: string | null
  attempts: number
  last_error: string | null
  created_at: number
}

/**
 * `kinds`: the job kinds this repo's worker runs (all when omitted). The processing thread runs `process`
 * and `batch_release`, the HTTP thread's worker the rest; each claims and waits only for its own kinds.
 */
export function createJobsRepo(sqlite: Database, kinds?: readonly JobKind[]) {
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
  // thread's writes would make an idle loop wait for it (db/write-turns.ts).
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
    finish: (id: number) => finish.run(id),
    retry: (id: number, runAfter: number, error: string) => retry.run(runAfter, error.slice(0, 2000), id),
    /** Not a failure: run again later without using up an attempt. */
    defer: (id: number, runAfter: number) => defer.run(runAfter, id),
    /** At shutdown: hand back the leases this process holds so another start picks the jobs up at once. */
    release: (ids: number[]) => releaseAll.run(JSON.stringify(ids)),
    /**
     * At start: hands back every lease whose owner `isGone` says no longer runs (a lease without an owner
     * was taken by a version before owners existed, so by a process that is gone too). Returns how many.
     */
    reclaimOrphans: (isGone: (owner: string) => boolean): number => {
      let n = 0
      for (const { owner } of owners.all() as { owner: string | null }[]) {
        if (owner === null || isGone(owner)) n += releaseOwner.run(owner).changes
      }
      return n
    },
    /** Epoch ms of the earliest moment any job becomes claimable, or null when the table is empty. */
    nextDueAt: (): number | null => (nextDue.get() as { at: number | null }).at,
    hasKind: (kind: JobKind): boolean => hasKind.get(kind) !== null,
    /** When the App's pending job of this kind runs (epoch ms), or null when it has none. */
    runAfterOf: (kind: JobKind, appId: string): number | null => (runAfterOf.get(kind, appId) as { run_after: number } | null)?.run_after ?? null,
  }
}
export type JobsRepo = ReturnType<typeof createJobsRepo>
