/**
 * Fair claiming across Apps (issue 38), the part both dialects share: how a claim of `n` jobs is cut from
 * the Apps' queues. A `process` job (one per report: the kind a flood is made of) belongs to its App's
 * group (`jobs.app_id`, set at intake); every other job (agent runs, batch releases, housekeeping) and a
 * `process` job without an App form one more group, in queue order as before. The groups stand in a ring,
 * Apps in id order and that group after the last App; a claimer remembers the group it served last (its
 * cursor) and the next claim starts at the group after it. A claim of `n` takes one due job from each
 * group in ring order, then a second from each, and so on (each group's own jobs in `(run_after, id)`
 * order), so App B's one report is in the very next claim however many App A has queued, and an App with
 * a backlog still gets its share.
 *
 * A batch release is an App's job but stays in the group without an App: at most one per App, never a
 * flood, and mostly not due yet (a batch window closing later); in the ring, each App with an open window
 * cost every claim a probe (measured: 20 such Apps made a claim ~1 ms instead of ~30 µs, bench/README.md).
 *
 * The SQL that finds the groups and their due jobs is each dialect's (src/db/sqlite/jobs.ts,
 * src/db/pg/jobs.ts); both walk the ring one index probe per App (jobs_app_due_idx, a skip scan), never
 * every due job, and read at most `fairShare(n, i)` jobs of the i-th group that has due jobs.
 */

/** The kind taken round-robin by App; the others are claimed in queue order, as one group. */
export const FAIR_KIND = 'process'

/** The cursor before any claim, and after a claim that served the group without an App: the ring starts at the first App. */
export const RING_START = ''

/** Groups the walk may look at beyond the `n` it needs (groups whose jobs are all leased or not yet due). */
export const WALK_SLACK = 32

/**
 * How many of its due jobs the i-th group (1-based) that has any needs to offer for a claim of `n`: with
 * `m` groups each takes ceil(n / m) rounds at most, and m ≥ i; a group offers more only so that a batch
 * is still filled when later groups run short.
 */
export const fairShare = (n: number, i: number): number => Math.ceil(n / i)

/**
 * Round-robin over the groups' due jobs (each list in its group's order, the lists in ring order): the
 * first of each, then the second of each, …; at most `n`.
 */
export function roundRobin<T>(lists: readonly (readonly T[])[], n: number): T[] {
  const out: T[] = []
  for (let round = 0; out.length < n; round++) {
    let any = false
    for (const list of lists) {
      if (round >= list.length) continue
      any = true
      out.push(list[round])
      if (out.length === n) break
    }
    if (!any) break
  }
  return out
}
