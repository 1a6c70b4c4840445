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
 *
 * Claims are fair across Apps (src/db/fair-claim.ts), still one statement: a recursive CTE walks the ring
 * of Apps from this claimer's cursor, one probe of jobs_app_due_idx per App (a skip scan: never every due
 * job of a backlog), each App's first due jobs are read in order, and the round-robin picks are locked
 * `FOR UPDATE SKIP LOCKED` and leased. A claim that found nothing that way (a race lost to another
 * claimer, or more idle Apps than the walk looks at) takes the queue-order claim, so a due job is never missed.
 */
import { JOB_KINDS, type JobKind, type JobRow } from '../../lifecycle/jobs'
import { exec, many, one, prepared, type PgStorage } from './storage'
import { nowOr } from './db-clock'
import { PARTITIONS } from '../../nodes/partitions'
import { FAIR_KIND, RING_START, WALK_SLACK } from '../fair-claim'

const DUE = (j: string) => `${j}.run_after <= (SELECT now FROM clock) AND (${j}.lease_until IS NULL OR ${j}.lease_until < (SELECT now FROM clock))`
/**
 * Whether an App's jobs are this claimer's: $8 NULL (every App: the embedded mode, the node's own worker) or
 * the App's partition (src/nodes/partitions.ts: 16, by the database's hash of its id) among those it holds.
 */
export const PARTITION_OF_APP = (app: string) => `(hashtext(${app}) & ${PARTITIONS - 1})`

/** Of `appIds`, those whose partition is among `partitions` (the database computes the hash). */
export async function appsInPartitions(storage: PgStorage, appIds: readonly string[], partitions: readonly number[]): Promise<string[]> {
  if (appIds.length === 0 || partitions.length === 0) return []
  const { rows } = await storage.pool.query<{ id: string }>(`SELECT id FROM unnest($1::text[]) AS a(id) WHERE ${PARTITION_OF_APP('id')} = ANY($2::int[])`, [appIds, partitions])
  return rows.map((r) => r.id)
}
const HELD = (app: string) => `($8::int[] IS NULL OR ${PARTITION_OF_APP(app)} = ANY($8::int[]))`
/** The job's lease is still the owner `$n` names (NULL: whoever holds it). */
const OWNED = (owner: string) => `(${owner}::text IS NULL OR lease_owner = ${owner}::text)`
const LEASE_FREE = (j: string) => `(${j}.lease_until IS NULL OR ${j}.lease_until < (SELECT now FROM clock))`

/**
 * The fair claim (src/db/fair-claim.ts). $1: the caller's now (NULL: the database's), $2: the lease in ms,
 * $3: the owner, $4: the kinds of the group without an App besides `process` jobs without one, $5: n, $6:
 * the cursor (the App served last; '' for the ring's start), $7: how many Apps each side of the cursor the
 * walk looks at. `ring` holds the Apps after the cursor, the group without an App, then the Apps up to the
 * cursor; each step of a walk is the next App with a queued `process` job, one probe of jobs_app_due_idx
 * (an index-only scan). The i-th App of the ring reads at most ceil(n / i) of its due jobs, a range of
 * jobs_app_due_idx in order (the group without an App up to n); the round-robin picks are locked and leased.
 *
 * The planner is steered twice, both found with EXPLAIN ANALYZE on a 100k-job backlog (bench/README.md
 * "Issue 38"): whether an App has a due job is not asked inside the walk (as a subquery with LIMIT 1 and
 * the App a parameter, the planner took jobs_due_idx or a sequential scan through the whole backlog:
 * "Rows Removed by Filter: 100100" per App), and the other kinds' "due" is a row comparison over
 * jobs_kind_due_idx's own columns, one kind at a time (`kind = ANY(...)` and `run_after <= now` walked
 * jobs_due_idx through the `process` backlog for one batch release). The picks are locked and updated by
 * `id = ANY(ARRAY(...))`, primary-key probes: joined to the CTE, a batch of 511 was a hash join over a
 * scan of every job.
 */
function fairClaimSql(): string {
  const P = `'${FAIR_KIND}'`
  const nextApp = (after: string, upTo: boolean) =>
    `(SELECT j.app_id FROM jobs j WHERE j.kind = ${P} AND j.app_id > ${after}${upTo ? ' AND j.app_id <= $6::text' : ''} ORDER BY j.app_id LIMIT 1)`
  const walk = (name: string, start: string, upTo: boolean) => `${name}(app, pos) AS (
      SELECT s.app, 1 FROM (SELECT ${nextApp(start, upTo)} AS app) s
      UNION ALL
      SELECT s.app, w.pos + 1 FROM ${name} w CROSS JOIN LATERAL (SELECT ${nextApp('w.app', upTo)} AS app) s
      WHERE w.app IS NOT NULL AND w.pos < $7::int)`
  const inOrder = (where: string, limit: string) => `SELECT j.id, j.run_after FROM jobs j WHERE ${where} ORDER BY j.run_after, j.id LIMIT ${limit}`
  return `WITH RECURSIVE clock AS (SELECT ${nowOr('$1')} AS now),
    ${walk('after_cursor', '$6::text', false)},
    ${walk('up_to_cursor', "''", true)},
    ring(app, ord, share) AS (
      -- An App's share counts the Apps before it in the ring, not the group without an App (mostly empty in a flood).
      SELECT app, ord, row_number() OVER (ORDER BY app IS NULL, ord) FROM (
        SELECT app, pos AS ord FROM after_cursor WHERE app IS NOT NULL AND ${HELD('app')}
        UNION ALL SELECT NULL, $7::int + 1
        UNION ALL SELECT app, $7::int + 1 + pos FROM up_to_cursor WHERE app IS NOT NULL AND ${HELD('app')}) g),
    heads AS (
      SELECT r.ord, h.id, h.run_after FROM ring r CROSS JOIN LATERAL (${inOrder(`j.kind = ${P} AND j.app_id = r.app AND ${DUE('j')}`, 'ceil($5::numeric / r.share)')}) h WHERE r.app IS NOT NULL
      UNION ALL
      SELECT r.ord, h.id, h.run_after FROM ring r CROSS JOIN LATERAL (
        SELECT o.id, o.run_after FROM ((${inOrder(`j.kind = ${P} AND j.app_id IS NULL AND ${DUE('j')}`, '$5::int')})
          UNION ALL (SELECT k.id, k.run_after FROM unnest($4::text[]) AS other(kind) CROSS JOIN LATERAL (${inOrder(`j.kind = other.kind AND (j.kind, j.run_after) <= (other.kind, (SELECT now FROM clock)) AND ${LEASE_FREE('j')} AND (j.app_id IS NULL OR ${HELD('j.app_id')})`, '$5::int')}) k)) o
        ORDER BY o.run_after, o.id LIMIT $5::int) h WHERE r.app IS NULL),
    ranked AS (
      SELECT id, ord, row_number() OVER (PARTITION BY ord ORDER BY run_after, id) AS round, dense_rank() OVER (ORDER BY ord) AS nth FROM heads),
    picks AS (SELECT id, round, ord FROM ranked WHERE round <= ceil($5::numeric / nth) ORDER BY round, ord LIMIT $5::int),
    locked AS (SELECT j.id FROM jobs j WHERE j.id = ANY(ARRAY(SELECT id FROM picks)) AND ${DUE('j')} FOR UPDATE OF j SKIP LOCKED)
    UPDATE jobs j SET lease_until = (SELECT now FROM clock) + $2::bigint, lease_owner = $3, attempts = j.attempts + 1
    FROM picks p WHERE j.id = ANY(ARRAY(SELECT id FROM locked)) AND p.id = j.id
    RETURNING j.*, p.round AS fair_round, p.ord AS fair_ord`
}
/** Exported for the plan check in test/repos/fair-claim.test.ts. */
export const FAIR_CLAIM = fairClaimSql()

export interface PgJobsOptions {
  /** The partitions of Apps whose jobs this claimer takes (cluster mode's processing worker), or null for every App. */
  partitions?: () => number[] | null
}

export function createPgJobs(storage: PgStorage, kinds?: readonly JobKind[], options: PgJobsOptions = {}) {
  if (kinds?.some((k) => !JOB_KINDS.includes(k))) throw new Error(`unknown job kind in ${kinds.join(', ')}`)
  const { pool } = storage
  const kindList = kinds ? [...kinds] : null
  // $1: the caller's now (NULL: the database's), $2: the lease in ms, $4: the kinds this worker runs, or NULL for all.
  const CLAIM = `WITH clock AS (SELECT ${nowOr('$1')} AS now),
    next AS (
      SELECT id FROM jobs WHERE run_after <= (SELECT now FROM clock) AND (lease_until IS NULL OR lease_until < (SELECT now FROM clock))
        AND ($4::text[] IS NULL OR kind = ANY($4::text[])) AND (app_id IS NULL OR ($6::int[] IS NULL OR ${PARTITION_OF_APP('app_id')} = ANY($6::int[])))
      ORDER BY run_after, id LIMIT $5 FOR UPDATE SKIP LOCKED)
    UPDATE jobs j SET lease_until = (SELECT now FROM clock) + $2::bigint, lease_owner = $3, attempts = j.attempts + 1
    FROM next WHERE j.id = next.id
    RETURNING j.*`
  /** The caller's now only for a store whose clock a test drives; NULL (the database's clock) otherwise. */
  const callerNow = (now: number): number | null => (storage.callerClock ? now : null)
  const byQueueOrder = (a: JobRow, b: JobRow) => a.run_after - b.run_after || a.id - b.id
  /** The group this claimer served last (RING_START: the group without an App, or none yet). */
  let cursor = RING_START

  /**
   * A claim of up to `n` jobs of `ofKinds`: fair when they include `process` (in pick order), else in queue
   * order (one group, nothing to be fair about); the queue-order claim too when the fair one found nothing.
   * The cursor moves to the last job's group.
   */
  async function claimOf(ofKinds: readonly string[], n: number, now: number, leaseMs: number, owner: string): Promise<JobRow[]> {
    type Picked = JobRow & { fair_round?: number; fair_ord?: number }
    const held = options.partitions?.() ?? null
    // Holding no partition: no job of any App is this claimer's (jobs without an App still are).
    const picked = ofKinds.includes(FAIR_KIND)
      // Named: the statement is planned once per connection (planning it took 2-8 ms, more than running it).
      ? ((await pool.query(prepared(FAIR_CLAIM, [callerNow(now), leaseMs, owner, ofKinds.filter((k) => k !== FAIR_KIND), n, cursor, n + WALK_SLACK, held]))).rows as Picked[])
      : []
    const rows: JobRow[] = picked.length > 0
      ? picked.sort((a, b) => Number(a.fair_round) - Number(b.fair_round) || Number(a.fair_ord) - Number(b.fair_ord)).map(({ fair_round, fair_ord, ...row }) => row)
      : (await many<JobRow>(pool, CLAIM, [callerNow(now), leaseMs, owner, ofKinds, n, held])).sort(byQueueOrder)
    if (rows.length > 0) cursor = rows[rows.length - 1].app_id ?? RING_START
    return rows
  }

  return {
    /** The next due job of this repo's kinds, from the group after the last one served (fair across Apps). */
    async claim(now: number, leaseMs: number, owner: string): Promise<JobRow | null> {
      return (await claimOf(kindList ?? JOB_KINDS, 1, now, leaseMs, owner))[0] ?? null
    },
    /** Up to `n` more due jobs of one kind, leased together; `process` jobs round-robin across Apps from the group after the last one served. */
    async claimBatch(kind: string, n: number, now: number, leaseMs: number, owner: string): Promise<JobRow[]> {
      if (n <= 0) return []
      return claimOf([kind], n, now, leaseMs, owner)
    },
    // Each only while the lease is still `owner`'s ($n NULL: any, for callers outside a worker): a node that
    // stalled past its lease and resumed must not delete or reset the job another node took over since.
    finish: async (id: number, owner?: string): Promise<void> => void (await exec(pool, `DELETE FROM jobs WHERE id = $1 AND ${OWNED('$2')}`, [id, owner ?? null])),
    retry: async (id: number, runAfter: number, error: string, owner?: string): Promise<void> =>
      void (await exec(pool, `UPDATE jobs SET lease_until = NULL, lease_owner = NULL, run_after = $1, last_error = $2 WHERE id = $3 AND ${OWNED('$4')}`, [runAfter, error.slice(0, 2000), id, owner ?? null])),
    defer: async (id: number, runAfter: number, owner?: string): Promise<void> =>
      void (await exec(pool, `UPDATE jobs SET lease_until = NULL, lease_owner = NULL, run_after = $1, attempts = GREATEST(0, attempts - 1) WHERE id = $2 AND ${OWNED('$3')}`, [runAfter, id, owner ?? null])),
    release: async (ids: number[], owner?: string): Promise<void> =>
      void (await exec(pool, `UPDATE jobs SET lease_until = NULL, lease_owner = NULL WHERE lease_until IS NOT NULL AND id = ANY($1::bigint[]) AND ${OWNED('$2')}`, [ids, owner ?? null])),
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
      // Of the jobs this claimer may take only: a job of another node's partition would wake it for nothing, again and again.
      const r = await one<{ at: number | null }>(
        pool,
        `SELECT MIN(CASE WHEN lease_until IS NULL THEN run_after ELSE GREATEST(run_after, lease_until) END) AS at FROM jobs WHERE ($1::text[] IS NULL OR kind = ANY($1::text[]))
          AND (app_id IS NULL OR $2::int[] IS NULL OR ${PARTITION_OF_APP('app_id')} = ANY($2::int[]))`,
        [kindList, options.partitions?.() ?? null],
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
