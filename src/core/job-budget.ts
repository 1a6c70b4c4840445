/**
 * A job's time: what is left of its lease (src/worker/loop.ts), so a step that calls outside ends inside
 * it. A job still in hand when its lease ends is the worker "stuck" on /readyz, and another worker (another
 * node of a cluster) may claim it and run it again meanwhile: a tracker push run twice at once made two
 * issues for one report. Calls are bounded each (FIXLOOP_OUTBOUND_TIMEOUT), but a step may make several
 * (a Jira create is up to three, a push goes round again when the cluster grew), so their sum is not.
 *
 * A step checks, before each call, that the call's whole deadline still fits (`fits`); when it does not,
 * it stops and asks to run again soon, with a fresh lease. A call is never cut at the job's end instead: a
 * create cut there may have been made by the tracker, unknown to fixloop, exactly as a timeout leaves it.
 *
 * Measured on this process's monotonic clock from before the claim (a lease runs from the claim on the
 * database's clock, PostgreSQL's own: never earlier), less LEASE_MARGIN_MS_MAX (a tenth of a shorter
 * lease) for the writes after the last call: the outcome, the job's finish or deferral.
 */

/**
 * At most 5 s: the default lease (60 s) leaves 55 s, which holds the longest round of a tracker push from
 * its start (two calls of Jira or Linear at FIXLOOP_OUTBOUND_TIMEOUT=20: 2 × 26.7 s), so a fresh run always
 * gets at least one round done.
 */
export const LEASE_MARGIN_MS_MAX = 5_000

/** The lease less its margin: the time a job's step has. */
export const jobTimeMs = (leaseMs: number): number => leaseMs - Math.min(LEASE_MARGIN_MS_MAX, leaseMs / 10)

export interface JobBudget {
  /** The performance.now() by which the step is to be done. */
  readonly deadline: number
  /** Whether something that takes at most `ms` (a call's whole deadline) ends before the deadline if started now. */
  fits(ms: number): boolean
}

/** The budget of a job claimed at `claimedAt` (performance.now(), taken before the claim) for `leaseMs`. */
export function jobBudget(claimedAt: number, leaseMs: number, now: () => number = () => performance.now()): JobBudget {
  const deadline = claimedAt + jobTimeMs(leaseMs)
  return { deadline, fits: (ms) => now() + ms <= deadline }
}

/** A step run outside a job (a test's pass, a command): no lease to end inside. */
export const UNBOUNDED: JobBudget = { deadline: Infinity, fits: () => true }

/** Thrown instead of starting a call whose deadline would end past its job's: the job runs again soon. */
export class OutOfJobTime extends Error {
  /** `doing`: what the call was for ("creating the issue"). */
  constructor(doing: string) {
    super(`${doing} could outlast the job's lease: not started, the job continues in its next run`)
  }
}
