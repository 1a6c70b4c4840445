/**
 * The worker loop: claims due jobs with a lease, runs the step for the job's kind, and
 * - on success deletes the job (the step may have done so in its own final transaction);
 * - on failure retries with exponential backoff; after `maxAttempts` it calls the kind's `onGiveUp`
 *   (e.g. mark the item failed with the cause) and drops the job.
 * A crash mid-job leaves the lease behind, so the job is only delayed, never lost: each lease names its
 * owner (host, pid, start time) and the next start hands back at once the leases of owners that are gone.
 * The loop wakes at once when this process commits new work (`wake()`), and polls for work written
 * by other processes. Tests drive it with `tick()` and an injected clock.
 */
import type { Clock } from '../core/clock'
import type { Logger } from '../core/logger'
import { jobBudget, type JobBudget } from '../core/job-budget'
import { failureLog, type FailureLog } from '../db/outage-log'
import { storageUnavailable } from '../db/unavailable'
import { LeaseLost, type JobRow, type JobsRepo } from '../lifecycle/jobs-repo'
import { currentLeaseOwner, isLeaseOwnerGone } from './lease-owner'

/**
 * How soon a job that met the database away runs again, at most: a client is told to come back in a
 * minute when the disk is full, but the worker should resume within seconds of the operator making room.
 */
const OUTAGE_RECHECK_S = 5
/** A lease this close to its end may be another worker's by the time a hand-back lands. */
const UNRECORDED_LEASE_MARGIN_MS = 10_000

/** Thrown by a step that cannot run yet (e.g. no free agent slot): retried later, not counted as a failure. */
export class DeferJob extends Error {
  constructor(
    readonly delayMs: number,
    reason: string,
    /** Run again at this epoch ms instead (a job handed back keeps its place in the queue). */
    readonly runAfter?: number,
  ) {
    super(reason)
  }
}

export interface JobStep {
  /**
   * `time`: what is left of the job's lease (core/job-budget.ts; the loop always gives it, a test may
   * not). A step that calls outside checks it before each call and stops (DeferJob) rather than run past
   * it: past it, another worker may run the same job meanwhile.
   */
  run(job: JobRow, time?: JobBudget): Promise<void> | void
  /**
   * Runs several due jobs of this kind at once (e.g. in one transaction, one commit for all); resolves
   * with one entry per job, in order: undefined when it is done, else what it failed with (handled like a
   * throw from `run`: retried, deferred or given up, that job alone). A rejection fails every job.
   */
  runBatch?(jobs: JobRow[]): Promise<unknown[]>
  /** How many jobs `runBatch` takes at most (default 1: `run` one at a time). */
  batchSize?: number
  onGiveUp?(job: JobRow, error: string): Promise<void> | void
  /** The step deletes its job in its own final transaction (one commit fewer per job); the loop does not. */
  finishesJob?: boolean
}

export interface WorkerOptions {
  /** True while the server is busy taking submissions (the worker then paces itself). */
  busy?: () => boolean
  busyPauseMs: number
  /**
   * True while submissions saturate the core (many per event-loop turn): the worker then takes only a
   * small share of it (one job, then `saturatedPauseMs`), so intake never queues behind processing. The
   * backlog is durable and drains at full speed when the burst ends; a steady trickle is not saturation.
   */
  saturated?: () => boolean
  saturatedPauseMs: number
  leaseMs: number
  /**
   * Set for a worker that may be restarted inside a running process (the processing thread): its leases
   * carry this role, and a new start hands back the leases a dead predecessor of the same role held.
   */
  leaseOwnerRole?: string
  /**
   * Cluster mode: the owner its leases carry (`<node id>` or `<node id>:<role>`), and no check of other
   * owners at start (the maintenance leader's sweep frees the leases of dead nodes: src/nodes/).
   */
  clusterLeaseOwner?: string
  pollMs: number
  maxAttempts: number
  baseBackoffMs: number
  maxBackoffMs: number
}

/** Jobs one pass of the loop runs at most before it looks at the clock and its timers again. */
const TICK_MAX_JOBS = 1000

export const DEFAULT_WORKER_OPTIONS: WorkerOptions = { busyPauseMs: 2, saturatedPauseMs: 25, leaseMs: 60_000, pollMs: 1_000, maxAttempts: 6, baseBackoffMs: 1_000, maxBackoffMs: 300_000 }

export class Worker {
  private running = false
  /** Set by stop(): a tick in progress finishes the job in hand and claims no more. */
  private stopping = false
  private timer: ReturnType<typeof setTimeout> | undefined
  private current: Promise<number> | undefined
  private held = new Set<number>()
  /** Jobs whose outcome could not be written (the database away): when to run them, when their lease ends. */
  private readonly unrecorded = new Map<number, { runAfter: number; leaseUntil: number }>()
  private started: Promise<void> = Promise.resolve()
  /** Counts wake() calls, so one during an await of the loop is not lost. */
  private wakes = 0
  /** Jobs this worker finished without an error, by kind (cluster mode's per-node metrics). */
  readonly done = new Map<string, number>()
  /** performance.now() of the loop's last pass and of the job in hand's start (readiness: alive, not stuck). */
  private lastPassAt = performance.now()
  private jobStartedAt: number | undefined
  private readonly opts: WorkerOptions
  /** This worker as a lease owner: the process, and which of its workers (see `WorkerOptions.leaseOwnerRole`). */
  private readonly owner: string

  /** Failures of the loop: the database being away logged once per window, not every pass. */
  private readonly failedLoop: FailureLog

  constructor(
    private readonly jobs: JobsRepo,
    private readonly steps: Record<string, JobStep>,
    private readonly clock: Clock,
    private readonly log: Logger,
    opts: Partial<WorkerOptions> = {},
  ) {
    this.opts = { ...DEFAULT_WORKER_OPTIONS, ...opts }
    this.failedLoop = failureLog(log)
    this.owner = this.opts.clusterLeaseOwner ?? (this.opts.leaseOwnerRole ? `${currentLeaseOwner()}:${this.opts.leaseOwnerRole}` : currentLeaseOwner())
  }

  backoffMs(attempts: number): number {
    return Math.min(this.opts.maxBackoffMs, this.opts.baseBackoffMs * 2 ** Math.max(0, attempts - 1))
  }

  /** Runs every job due now, one after another; resolves with how many ran. */
  async tick(maxJobs = TICK_MAX_JOBS): Promise<number> {
    let ran = 0
    if (this.unrecorded.size > 0) await this.handBackUnrecorded()
    // A job claimed before a pause: the worker holds its lease while it waits for its turn.
    let next: JobRow | null = null
    // When the claim of the job in hand was asked (performance.now()): its lease began after, never before.
    let claimedAt = 0
    while (ran < maxJobs && !this.stopping) {
      if (!next) claimedAt = performance.now()
      const job = next ?? await this.jobs.claim(this.clock.now(), this.opts.leaseMs, this.owner)
      next = null
      if (!job) break
      const step = this.steps[job.kind]
      // Batches only while intake is quiet: a batch is one write transaction, and an intake commit may wait
      // for the one under way (db/sqlite/write-turns.ts); during a burst jobs go one at a time, as before.
      if (step?.runBatch && (step.batchSize ?? 1) > 1 && ran + 1 < maxJobs && !this.opts.busy?.()) {
        const more = this.stopping ? [] : await this.jobs.claimBatch(job.kind, Math.min(step.batchSize!, maxJobs - ran) - 1, this.clock.now(), this.opts.leaseMs, this.owner)
        ran += 1 + more.length
        await this.runBatch(step, [job, ...more])
      } else {
        ran++
        await this.runOne(job, claimedAt)
      }
      // Steps are mostly synchronous SQLite work: give waiting HTTP requests a turn between jobs, and while
      // submissions are pouring in, a longer pause, so intake latency does not queue behind processing.
      const pause = this.opts.saturated?.() ? this.opts.saturatedPauseMs : this.opts.busy?.() ? this.opts.busyPauseMs : 0
      if (pause > 0 && ran < maxJobs && !this.stopping) {
        claimedAt = performance.now()
        next = await this.jobs.claim(this.clock.now(), this.opts.leaseMs, this.owner)
        // Held, so stop() hands the lease back if it comes during the pause.
        if (next) this.held.add(next.id)
      }
      await new Promise<void>((resolve) => (pause > 0 ? setTimeout(resolve, pause) : setImmediate(resolve)))
    }
    return ran
  }

  private async runOne(job: JobRow, claimedAt: number): Promise<void> {
    const step = this.steps[job.kind]
    this.held.add(job.id)
    this.jobStartedAt = performance.now()
    try {
      if (!step) throw new Error(`no step for job kind "${job.kind}"`)
      await step.run(job, jobBudget(claimedAt, this.opts.leaseMs))
      if (!step.finishesJob) await this.jobs.finish(job.id, this.owner)
      this.count(job.kind)
    } catch (e) {
      await this.failed(step, job, e)
    } finally {
      this.held.delete(job.id)
      this.jobStartedAt = undefined
    }
  }

  /** Several jobs of one kind through the step's `runBatch`; each failure is handled as `runOne` does. */
  private async runBatch(step: JobStep, jobs: JobRow[]): Promise<void> {
    for (const job of jobs) this.held.add(job.id)
    this.jobStartedAt = performance.now()
    try {
      let outcomes: unknown[]
      try {
        outcomes = await step.runBatch!(jobs)
        if (outcomes.length !== jobs.length) throw new Error(`runBatch answered for ${outcomes.length} of ${jobs.length} jobs`)
      } catch (e) {
        outcomes = jobs.map(() => e ?? new Error('batch failed'))
      }
      for (const [i, job] of jobs.entries()) {
        const error = outcomes[i]
        try {
          if (error === undefined) {
            if (!step.finishesJob) await this.jobs.finish(job.id, this.owner)
            this.count(job.kind)
          } else await this.failed(step, job, error)
        } catch (e) {
          // One job's bookkeeping failing must not leave the others unhandled (that one keeps its lease).
          // The database away fails every job of the batch alike: one warn line per window, not an error
          // line per job (a PostgreSQL restart mid-batch wrote 256).
          this.failedLoop('error', 'job outcome not recorded', e, { jobId: job.id, kind: job.kind })
        }
      }
    } finally {
      for (const job of jobs) this.held.delete(job.id)
      this.jobStartedAt = undefined
    }
  }

  private count(kind: string): void {
    this.done.set(kind, (this.done.get(kind) ?? 0) + 1)
  }

  /**
   * A job that threw: deferred, retried with backoff, or given up after `maxAttempts`. A job that failed
   * because the database was away or had no room to write (`storageUnavailable`) is deferred without
   * counting the attempt: an outage of a minute must not fail the reports it caught (six attempts back
   * off for half a minute in all), and the job did nothing wrong.
   */
  private async failed(step: JobStep | undefined, job: JobRow, e: unknown): Promise<void> {
    try {
      await this.recordFailure(step, job, e)
    } catch (notRecorded) {
      // The database cannot take the outcome either: the job keeps its lease, so it would wait for the
      // lease to run out (a minute) after the database is back. Handed back at the next pass that can write.
      if (storageUnavailable(notRecorded) !== null) this.keepForHandBack(job, this.clock.now())
      throw notRecorded
    }
  }

  private keepForHandBack(job: JobRow, runAfter: number): void {
    if (job.lease_until !== null && !this.unrecorded.has(job.id)) this.unrecorded.set(job.id, { runAfter, leaseUntil: Number(job.lease_until) })
  }

  /**
   * Hands back, attempt returned, the jobs whose failure could not be written (`failed`), while their lease
   * is still this worker's: near its end another worker may claim the job, and it is left to that.
   */
  private async handBackUnrecorded(): Promise<void> {
    for (const [id, { runAfter, leaseUntil }] of this.unrecorded) {
      // Stops at the first that still cannot be written (the pass fails; the next one tries again).
      if (this.clock.now() < leaseUntil - UNRECORDED_LEASE_MARGIN_MS) await this.jobs.defer(id, runAfter, this.owner)
      this.unrecorded.delete(id)
    }
  }

  private async recordFailure(step: JobStep | undefined, job: JobRow, e: unknown): Promise<void> {
    if (e instanceof LeaseLost) {
      // Its lease was freed while this worker had it in hand (the node stalled past its lease: the job is
      // another claimer's now), or the job is gone (its report was erased meanwhile). Nothing of this run
      // was written. Neither retried nor given up here.
      this.log.warn('job no longer this worker\'s while in hand (taken over by another node, or its report removed): this run wrote nothing', { jobId: job.id, kind: job.kind })
      return
    }
    if (e instanceof DeferJob) {
      await this.jobs.defer(job.id, e.runAfter ?? this.clock.now() + e.delayMs, this.owner)
      return
    }
    const away = storageUnavailable(e)
    if (away !== null) {
      this.failedLoop('warn', 'job waits for the database', e, { kind: job.kind })
      const runAfter = this.clock.now() + Math.min(away, OUTAGE_RECHECK_S) * 1000
      try {
        await this.jobs.defer(job.id, runAfter, this.owner)
      } catch (deferring) {
        if (storageUnavailable(deferring) === null) throw deferring
        // The deferral is a write too, and met the same outage: deferred at the next pass that can write,
        // instead of the job waiting out its whole lease (60 s) once the database is back.
        this.keepForHandBack(job, runAfter)
      }
      return
    }
    const error = e instanceof Error ? e.message : String(e)
    if (job.attempts >= this.opts.maxAttempts) {
      this.log.warn('job gave up', { jobId: job.id, kind: job.kind, feedbackId: job.feedback_id, attempts: job.attempts, error })
      try {
        await step?.onGiveUp?.(job, error)
      } finally {
        await this.jobs.finish(job.id, this.owner)
      }
    } else {
      const delay = this.backoffMs(job.attempts)
      this.log.warn('job failed, will retry', { jobId: job.id, kind: job.kind, feedbackId: job.feedback_id, attempts: job.attempts, retryInMs: delay, error })
      await this.jobs.retry(job.id, this.clock.now() + delay, error, this.owner)
    }
  }

  /** Starts the loop; resolves once the leases of stopped owners are handed back and the first pass is scheduled. */
  start(): Promise<void> {
    if (this.running) return this.started
    this.running = true
    this.stopping = false
    // A lease of this very owner is a dead predecessor's (one worker per role and process). Held as the
    // pass under way, so a wake() meanwhile does not claim (and then hand back) a lease of this owner.
    this.current = this.jobs
      .reclaimOrphans((owner) => owner === this.owner || (this.opts.clusterLeaseOwner === undefined && isLeaseOwnerGone(owner)))
      .then((reclaimed) => {
        if (reclaimed > 0) this.log.info('reclaimed job leases of a stopped process', { jobs: reclaimed })
        return 0
      })
      .catch((e) => {
        this.log.error('job leases not reclaimed', { error: e instanceof Error ? e.message : String(e) })
        return 0
      })
    this.started = this.current.then(() => {
      this.current = undefined
      if (this.running) this.schedule(0)
    })
    return this.started
  }

  /** New work was committed in this process: run now instead of at the next poll. */
  wake(): void {
    this.wakes++
    if (this.running && !this.current) this.schedule(0)
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = setTimeout(() => void this.loop(), ms)
  }

  private async loop(): Promise<void> {
    this.timer = undefined
    this.lastPassAt = performance.now()
    if (!this.running || this.current) return
    let failed = false
    this.current = this.tick().catch((e) => {
      failed = true
      this.failedLoop('error', 'worker tick failed', e)
      return 0
    })
    const ran = await this.current
    this.current = undefined
    if (!this.running) return
    // A pass that failed (the database away, its disk full) waits a poll: the job it could not move is
    // still due, and going back at once spun on the same error hundreds of times a second.
    if (failed) return this.schedule(this.opts.pollMs)
    // A pass that hit its limit left work behind: back at once, without asking when the next job is due
    // (that query reads every pending job of this worker's kinds: ~50 ms with a 300k-report backlog).
    if (ran >= TICK_MAX_JOBS) return this.schedule(0)
    // A wake while the next due time is read (an await on PostgreSQL) must not be overridden by the wait below.
    const wakes = this.wakes
    let due: number | null = null
    try {
      due = await this.jobs.nextDueAt()
    } catch (e) {
      this.failedLoop('error', 'worker could not read the next due job', e)
    }
    if (!this.running) return
    if (this.wakes !== wakes) return this.schedule(0)
    const wait = due === null ? this.opts.pollMs : Math.max(0, Math.min(this.opts.pollMs, due - this.clock.now()))
    this.schedule(wait)
  }

  /**
   * For /readyz: not ok when stopped, when one job has been in hand longer than its lease (it is stuck: the
   * lease runs out and another pass would run it twice), or when the loop has not passed for ten polls.
   */
  health(): { ok: boolean; reason?: string } {
    const now = performance.now()
    if (!this.running) return { ok: false, reason: 'the job worker is not running' }
    if (this.jobStartedAt !== undefined && now - this.jobStartedAt > this.opts.leaseMs) {
      return { ok: false, reason: `the job worker is stuck: one job has run for ${Math.round((now - this.jobStartedAt) / 1000)} s (lease ${this.opts.leaseMs / 1000} s)` }
    }
    if (this.jobStartedAt === undefined && !this.current && now - this.lastPassAt > Math.max(30_000, this.opts.pollMs * 10)) {
      return { ok: false, reason: `the job worker has not polled for ${Math.round((now - this.lastPassAt) / 1000)} s` }
    }
    return { ok: true }
  }

  /** Stops claiming, waits for the job in hand, and releases any lease still held. */
  async stop(): Promise<void> {
    this.running = false
    this.stopping = true
    if (this.timer) clearTimeout(this.timer)
    await this.current
    if (this.held.size > 0) await this.jobs.release([...this.held], this.owner)
  }
}
