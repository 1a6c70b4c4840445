/**
 * The durable job table's SQLite side (the port: src/lifecycle/jobs-repo.ts). Synchronous, so the
 * processing step can delete its job inside its own transaction (`finish`), as it always did.
 *
 * Claims are fair across Apps (src/db/fair-claim.ts): a few index probes find the groups after this
 * claimer's cursor and their first due jobs, then one UPDATE leases the picked ids. Only this process's
 * threads claim (the data directory's lock), and each kind is claimed by one thread, so nobody takes a
 * job between the reads and the write; the UPDATE checks each row is still due all the same.
 */
import type { Database, Statement } from 'bun:sqlite'
import { JOB_KINDS, type JobKind, type JobRow } from '../../lifecycle/jobs'
import { FAIR_KIND, fairShare, RING_START, roundRobin, WALK_SLACK } from '../fair-claim'

const DUE = 'run_after <= ?2 AND (lease_until IS NULL OR lease_until < ?2)'

/** Due `process` jobs of one App (`?1`), `?3` at most, in `(run_after, id)` order: a range of jobs_app_due_idx. */
const APP_HEADS = `SELECT id FROM jobs WHERE kind = '${FAIR_KIND}' AND app_id = ?1 AND ${DUE} ORDER BY run_after, id LIMIT ?3`

/** The first App after `?1` (up to `?2` when given) with a queued `process` job: one probe of jobs_app_due_idx. */
const nextAppSql = (upTo: boolean) => `SELECT app_id AS app FROM jobs WHERE kind = '${FAIR_KIND}' AND app_id > ?1${upTo ? ' AND app_id <= ?2' : ''} ORDER BY app_id LIMIT 1`

/**
 * The due jobs of the group without an App (src/db/fair-claim.ts), one statement per kind: the `process`
 * jobs without an App, then each of `otherKinds`, each `?3` at most in `(run_after, id)` order from its
 * index range (a kind list in one range would read and sort every due job of those kinds). They are merged
 * in JS: a UNION ALL of the ranges with its ORDER BY cost ~3 times the separate reads.
 */
function othersHeadsSql(otherKinds: readonly string[]): string[] {
  const arm = (where: string) => `SELECT id, run_after FROM jobs WHERE ${where} AND ${DUE} ORDER BY run_after, id LIMIT ?3`
  return [arm(`kind = '${FAIR_KIND}' AND app_id IS NULL`), ...otherKinds.map((k) => arm(`kind = '${k}'`))]
}

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
  // In queue order: the claim of a repo without `process` jobs (one group, nothing to be fair about), and
  // what a fair claim falls back to when its walk of the ring found nothing (more than WALK_SLACK Apps whose
  // jobs are all leased or not due yet), so a due job is never missed.
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
  // The fair claim's reads (src/db/fair-claim.ts): the ring's next App, an App's due jobs, and the due jobs
  // of the group without an App for a claim of this repo's kinds (`claim`) or of `process` alone (`claimBatch`).
  const nextApp = sqlite.query(nextAppSql(false))
  const nextAppUpTo = sqlite.query(nextAppSql(true))
  const appHeads = sqlite.query(APP_HEADS)
  const othersOf = (ks: readonly string[]): Statement[] => othersHeadsSql(ks.filter((k) => k !== FAIR_KIND)).map((q) => sqlite.query(q))
  const fairClaims = (kinds ?? JOB_KINDS).includes(FAIR_KIND)
  const ownOthers = fairClaims ? othersOf(kinds ?? JOB_KINDS) : null
  const processOthers = othersOf([])
  const leaseOne: Statement = sqlite.query(
    `UPDATE jobs SET lease_until = ?3, lease_owner = ?4, attempts = attempts + 1 WHERE id = ?1 AND ${DUE} RETURNING *`,
  )
  const leaseMany: Statement = sqlite.query(
    `UPDATE jobs SET lease_until = ?3, lease_owner = ?4, attempts = attempts + 1 WHERE id IN (SELECT value FROM json_each(?1)) AND ${DUE} RETURNING *`,
  )
  /** The group this claimer served last (RING_START: the group without an App, or none yet). */
  let cursor = RING_START

  /**
   * Up to `n` due job ids in fair order (src/db/fair-claim.ts), each with its group: the Apps after the
   * cursor, the jobs without an App, the Apps up to the cursor; at most n + WALK_SLACK groups looked at.
   */
  /** The group without an App's first `limit` due job ids, merged from its per-kind reads. */
  function othersHeads(others: Statement[], now: number, limit: number): number[] {
    if (others.length === 1) return (others[0].values(null, now, limit) as [number, number][]).map(([id]) => id)
    const rows = others.flatMap((q) => q.values(null, now, limit) as [number, number][])
    return rows.sort((a, b) => a[1] - b[1] || a[0] - b[0]).slice(0, limit).map(([id]) => id)
  }

  function pickFair(others: Statement[], n: number, now: number): { id: number; group: string }[] {
    const found: { id: number; group: string }[][] = []
    let looked = 0
    const enough = () => found.length >= n || looked >= n + WALK_SLACK
    const visit = (app: string | null) => {
      looked++
      const limit = fairShare(n, found.length + 1)
      const ids = app === null ? othersHeads(others, now, limit) : (appHeads.values(app, now, limit) as [number][]).map(([id]) => id)
      if (ids.length > 0) found.push(ids.map((id) => ({ id, group: app ?? RING_START })))
    }
    const after = (from: string, upTo?: string) =>
      ((upTo === undefined ? nextApp.get(from) : nextAppUpTo.get(from, upTo)) as { app: string } | null)?.app ?? null
    for (let app = after(cursor); app !== null && !enough(); app = after(app)) visit(app)
    if (!enough()) visit(null)
    for (let app = after(RING_START, cursor); app !== null && !enough(); app = after(app, cursor)) visit(app)
    return roundRobin(found, n)
  }

  /** Leases the picked jobs; returns them in pick order, and moves the cursor to the last one's group. */
  function leasePicked(picked: { id: number; group: string }[], now: number, leaseMs: number, owner: string): JobRow[] {
    if (picked.length === 0) return []
    const rows = (picked.length === 1
      ? leaseOne.all(picked[0].id, now, now + leaseMs, owner)
      : leaseMany.all(JSON.stringify(picked.map((p) => p.id)), now, now + leaseMs, owner)) as JobRow[]
    const byId = new Map(rows.map((r) => [r.id, r]))
    const inOrder = picked.flatMap((p) => byId.get(p.id) ?? [])
    if (inOrder.length > 0) cursor = inOrder[inOrder.length - 1].app_id ?? RING_START
    return inOrder
  }

  /** The queue-order claim, when the fair walk found nothing; the cursor moves to the job's group. */
  function fallback(rows: JobRow[]): JobRow[] {
    if (rows.length > 0) cursor = rows[rows.length - 1].app_id ?? RING_START
    return rows
  }
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
    /** The next due job of this repo's kinds, from the group after the last one served (fair across Apps). */
    claim(now: number, leaseMs: number, owner: string): JobRow | null {
      const [row] = ownOthers ? leasePicked(pickFair(ownOthers, 1, now), now, leaseMs, owner) : []
      if (row) return row
      if (anyDue.get({ now }) === null) return null
      const queued = claim.get({ now, leaseUntil: now + leaseMs, owner }) as JobRow | null
      return queued ? fallback([queued])[0] : null
    },
    /** Up to `n` more due jobs of one kind, leased together, round-robin across Apps from the group after the last one served. */
    claimBatch(kind: string, n: number, now: number, leaseMs: number, owner: string): JobRow[] {
      if (n <= 0) return []
      const rows = kind === FAIR_KIND ? leasePicked(pickFair(processOthers, n, now), now, leaseMs, owner) : []
      if (rows.length > 0) return rows
      const queued = claimBatch.all({ kind, n, now, leaseUntil: now + leaseMs, owner }) as JobRow[]
      return fallback(queued.sort((a, b) => a.run_after - b.run_after || a.id - b.id))
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
