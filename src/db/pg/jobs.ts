/**
 * The durable job table's PostgreSQL side (the port: src/lifecycle/jobs-repo.ts). A claim is one statement
 * in the River/pg-boss shape: the due rows are picked `FOR UPDATE SKIP LOCKED` in a CTE and leased by the
 * UPDATE that joins it, so two claimers (two pools, two nodes) never take the same job and never wait on
 * each other's picks.
 *
 * Leases and due times are compared with the database's clock (src/db/pg/db-clock.ts), and a claim's
 * lease runs until the database's now plus `leaseMs`: the `now` a node passes is ignored, so a node whose
 * clock runs minutes ahead neither takes a lease another node still holds nor runs a job before it is due.
 * Only a store opened with `callerClock` (tests that drive time by hand) compares with the caller's `now`.
 * The times a caller writes (`retry`, `defer`, the lifecycle's `run_after`) come from the node's clock,
 * which cluster mode keeps set to the database's (src/core/clock.ts `OffsetClock`).
 */
import type { PoolClient } from 'pg'
import { JOB_KINDS, type JobKind, type JobRow } from '../../lifecycle/jobs'
import { exec, many, one, type PgStorage } from './storage'
import { nowOr } from './db-clock'

export function createPgJobs(storage: PgStorage, kinds?: readonly JobKind[]) {
  if (kinds?.some((k) => !JOB_KINDS.includes(k))) throw new Error(`unknown job kind in ${kinds.join(', ')}`)
  const { pool } = storage
  const kindList = kinds ? [...kinds] : null
  // $1: the caller's now (NULL: the database's), $2: the lease in ms, $4: the kinds this worker runs, or NULL for all.
  const CLAIM = `WITH clock AS (SELECT ${nowOr('$1')} AS now),
    next AS (
      SELECT id FROM jobs WHERE run_after <= (SELECT now FROM clock) AND (lease_until IS NULL OR lease_until < (SELECT now FROM clock))
        AND ($4::text[] IS NULL OR kind = ANY($4::text[]))
      ORDER BY run_after, id LIMIT $5 FOR UPDATE SKIP LOCKED)
    UPDATE jobs j SET lease_until = (SELECT now FROM clock) + $2::bigint, lease_owner = $3, attempts = j.attempts + 1
    FROM next WHERE j.id = next.id
    RETURNING j.*`
  /** The caller's now only for a store whose clock a test drives; NULL (the database's clock) otherwise. */
  const callerNow = (now: number): number | null => (storage.callerClock ? now : null)
  const byQueueOrder = (a: JobRow, b: JobRow) => a.run_after - b.run_after || a.id - b.id

  return {
    async claim(now: number, leaseMs: number, owner: string): Promise<JobRow | null> {
      return (await one<JobRow>(pool, CLAIM, [callerNow(now), leaseMs, owner, kindList, 1])) ?? null
    },
    async claimBatch(kind: string, n: number, now: number, leaseMs: number, owner: string): Promise<JobRow[]> {
      if (n <= 0) return []
      const rows = await many<JobRow>(pool, CLAIM, [callerNow(now), leaseMs, owner, [kind], n])
      return rows.sort(byQueueOrder)
    },
    finish: async (id: number): Promise<void> => void (await exec(pool, 'DELETE FROM jobs WHERE id = $1', [id])),
    /** Deletes a job inside the caller's transaction (the processing step's), so it goes with the report's changes. */
    finishIn: async (client: PoolClient, id: number): Promise<void> => void (await exec(client, 'DELETE FROM jobs WHERE id = $1', [id])),
    retry: async (id: number, runAfter: number, error: string): Promise<void> =>
      void (await exec(pool, 'UPDATE jobs SET lease_until = NULL, lease_owner = NULL, run_after = $1, last_error = $2 WHERE id = $3', [runAfter, error.slice(0, 2000), id])),
    defer: async (id: number, runAfter: number): Promise<void> =>
      void (await exec(pool, 'UPDATE jobs SET lease_until = NULL, lease_owner = NULL, run_after = $1, attempts = GREATEST(0, attempts - 1) WHERE id = $2', [runAfter, id])),
    release: async (ids: number[]): Promise<void> =>
      void (await exec(pool, 'UPDATE jobs SET lease_until = NULL, lease_owner = NULL WHERE lease_until IS NOT NULL AND id = ANY($1::bigint[])', [ids])),
    async reclaimOrphans(isGone: (owner: string) => boolean): Promise<number> {
      let n = 0
      const owners = await many<{ owner: string | null }>(pool, 'SELECT DISTINCT lease_owner AS owner FROM jobs WHERE lease_until IS NOT NULL ORDER BY 1')
      for (const { owner } of owners) {
        if (owner === null || isGone(owner)) {
          n += await exec(pool, 'UPDATE jobs SET lease_until = NULL, lease_owner = NULL WHERE lease_until IS NOT NULL AND lease_owner IS NOT DISTINCT FROM $1', [owner])
        }
      }
      return n
    },
    async nextDueAt(): Promise<number | null> {
      const r = await one<{ at: number | null }>(
        pool,
        'SELECT MIN(CASE WHEN lease_until IS NULL THEN run_after ELSE GREATEST(run_after, lease_until) END) AS at FROM jobs WHERE ($1::text[] IS NULL OR kind = ANY($1::text[]))',
        [kindList],
      )
      return r?.at ?? null
    },
    hasKind: async (kind: JobKind): Promise<boolean> => (await one(pool, 'SELECT 1 FROM jobs WHERE kind = $1 LIMIT 1', [kind])) !== undefined,
    async runAfterOf(kind: JobKind, appId: string): Promise<number | null> {
      return (await one<{ run_after: number }>(pool, 'SELECT run_after FROM jobs WHERE kind = $1 AND app_id = $2 ORDER BY run_after, id LIMIT 1', [kind, appId]))?.run_after ?? null
    },
  }
}
export type PgJobs = ReturnType<typeof createPgJobs>
