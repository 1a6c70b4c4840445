/**
 * Agent runs: from a queued report (or cluster lead) to a pushed branch and a pull/merge request.
 *
 * A run is one `agent_runs` row updated as it goes: prepare a private workspace → shallow clone of the
 * base branch → branch `fixloop/<feedback id>` → task file → the agent command in its sandbox (timeout,
 * bounded output, minimal environment) → optional verify command → the whole change judged against the
 * base commit → fixloop's own commit → push → PR/MR → `pr_opened`.
 * Every failure ends the run as `failed` (or `guardrailed`) with a reason and moves the report to
 * `failed`, from where an `sk_` client can PATCH it back to `queued`. The workspace is always removed.
 *
 * Runs execute outside the worker loop (they take minutes), at most one per App and at most
 * `concurrency` in all. The phases live in src/agent/run.ts, the sandbox in src/agent/sandbox.ts. Runs
 * interrupted by a crash are failed at the next start (`recover`), and their sandboxes killed.
 *
 * Every write of a run (its start with the report's move and event, its end, a start that fails, a
 * reclaim after a crash) is one transaction of the agent-runs repository (modules/agent-runs/repo.ts),
 * on SQLite or PostgreSQL; the runner decides what is written.
 */
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Clock } from '../core/clock'
import { newId } from '../core/ids'
import type { Logger } from '../core/logger'
import type { ConnectionsService, RepoConnection } from '../modules/connections/service'
import type { AgentRunsRepo, RunFeedbackRow as FeedbackRow, RunOutcome } from '../modules/agent-runs/repo'
import { NOT_SECRET_ENV, PRESET_ENV, type AgentUsage } from './presets'
import { REPORT_REMOVED, agentEnvironment, executeRun, taskInput, zeroTimings, type RunPhase, type Timings } from './run'
import { killRecorded, processIdentity } from './process-tree'
import type { SandboxOptions } from './sandbox'
import { leaseAgentUid } from './agent-uid'
import type { MediaSource } from './report-media'
import { createScrubber, secretLiterals } from './scrubber'
import { createWorkspace, instanceDir, removeWorkspaceSync } from './workspace'
import { sanitizeText } from '../sanitize/sanitize'
import { createTurns } from '../core/turns'
import { storageUnavailable } from '../db/unavailable'
import { failureLog } from '../db/outage-log'

/** Longest wait between two tries to record a finished run's outcome while the database is away. */
const FINISH_RETRY_MAX_MS = 15_000
/**
 * How often a running run checks that its report is still there (AgentRunsRepo.runExists): a report
 * erased or expired while its agent works stops the agent within this, on whichever node it runs.
 */
export const REMOVAL_WATCH_MS = 5_000

/** How long a stop waits for a run start in hand (runner.stop). */
const STOP_START_WAIT_MS = 3_000

/** Waits `ms`, or less when the signal aborts (a stop must not wait out the pause). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done, { once: true })
  })
}

export type { Timings } from './run'

export interface RunnerOptions {
  dataDir: string
  /** Most runs at once over all Apps (FIXLOOP_AGENT_CONCURRENCY). */
  concurrency: number
  /** Extra environment variable names passed to agents (FIXLOOP_AGENT_ENV). */
  passEnv: string[]
  /** Base URL for links back to the report in PR bodies (FIXLOOP_PUBLIC_URL), if any. */
  publicUrl: string | undefined
  /** Git-host API URLs may resolve to private addresses (FIXLOOP_GIT_HOST_ALLOW_PRIVATE). */
  gitHostAllowPrivate: boolean
  /** FIXLOOP_OUTBOUND_TIMEOUT in ms: the deadline of the git host's API calls (opening a pull request: twice it). */
  outboundTimeoutMs: number
  /** The environment agents' pass-through variables are read from. */
  env?: Record<string, string | undefined>
  /** The sandbox agents run in (FIXLOOP_AGENT_SANDBOX, FIXLOOP_AGENT_NETWORK, FIXLOOP_AGENT_SANDBOX_PATHS). */
  sandbox: SandboxOptions
  /** Root of run workspaces, outside the data dir (FIXLOOP_WORK_DIR). */
  workDir: string
  /**
   * Cluster mode: this node's id, written on each run. At start only the runs no node claims are failed
   * (every other node's runs go on); a dead node's runs are failed by the sweep (`failRunsOf`).
   */
  nodeId?: string
  /** Review iterations per pull request at most (FIXLOOP_REVIEW_ITERATIONS_MAX; 0: none). */
  reviewIterationsMax?: number
  /**
   * Reads a referenced upload of an App (the uploads service's `readReferenced`), for the run's attachments
   * folder; without it the folder stays empty.
   */
  readAttachment?: MediaSource['read']
}

/** Why a run could not start now; the job is tried again later. */
export class RunnerBusy extends Error {}

/** A review's text as it is stored, and the agent and the run row get it: sanitized like report text, bounded. */
export function sanitizeReview(text: string): string {
  return sanitizeText(text.slice(0, REVIEW_TEXT_MAX), {})
}

/** A review's author as stored: sanitized, one short line. */
export const sanitizeReviewAuthor = (author: string | null): string | null => (author === null ? null : sanitizeReview(author).replace(/\s+/g, ' ').slice(0, 100))

/** One review's text at most, and the reviews of one iteration combined at most (characters). */
export const REVIEW_TEXT_MAX = 8000
export const COMBINED_REVIEWS_MAX = 16000

/**
 * The reviews of one iteration as the agent gets them: one review as it is; several in arrival order,
 * each headed by its author, the whole bounded (COMBINED_REVIEWS_MAX; what is cut is said). Authors: the
 * distinct ones, comma-separated, bounded.
 */
export function combineReviews(reviews: { text: string; author: string | null }[]): { text: string; author: string | null } {
  if (reviews.length === 1) return { text: reviews[0]!.text, author: reviews[0]!.author }
  let text = reviews.map((r, i) => `Review ${i + 1} of ${reviews.length}${r.author ? ` (by ${r.author})` : ''}:\n${r.text}`).join('\n\n---\n\n')
  if (text.length > COMBINED_REVIEWS_MAX) text = `${text.slice(0, COMBINED_REVIEWS_MAX)}\n[… ${text.length - COMBINED_REVIEWS_MAX} more characters of the reviews left out]`
  const authors = [...new Set(reviews.map((r) => r.author).filter((a): a is string => a !== null))]
  return { text, author: authors.length ? authors.join(', ').slice(0, 100) : null }
}

export function createAgentRunner(runs: AgentRunsRepo, connections: ConnectionsService, clock: Clock, log: Logger, opts: RunnerOptions) {
  const active = new Map<string, { appId: string; abort: AbortController; done: Promise<void> }>()
  const env = opts.env ?? process.env
  /** A database outage as a run ends: a line per 30 s, not one per try. */
  const outage = failureLog(log)

  const workspaces = instanceDir(opts.workDir, opts.dataDir)

  /** The report's move to `failed` that ends a run (or a start that failed). */
  const failItem = (reason: string, from: 'queued' | 'agent_running'): RunOutcome['move'] => ({ to: 'failed', cause: { by: 'system', from, reason } })

  const INTERRUPTED_REASON = 'interrupted: fixloop stopped during the run (crash or restart); queue the report again to retry'
  /** Fails runs a stopped process left `running`; `killSandboxes`: end their recorded sandboxes (this host's). */
  async function failInterrupted(rows: Awaited<ReturnType<AgentRunsRepo['interrupted']>>, killSandboxes: boolean): Promise<number> {
    const reason = INTERRUPTED_REASON
    for (const r of rows) {
      // The sandbox of a run whose server died may still be running: end it (and every process in it).
      if (killSandboxes && killRecorded(r.sandbox_pid, r.sandbox_start)) log.warn('killed the sandbox of an interrupted agent run', { runId: r.id, pid: r.sandbox_pid })
      await runs.failInterrupted(r, reason, clock.now(), {
        // A review iteration leaves its pull request open: the report goes back to it (URL kept).
        move: r.trigger === 'review' ? { to: 'pr_opened', cause: { by: 'system', from: 'agent_running' } } : failItem(`agent run ${r.id} failed: ${reason}`, 'agent_running'),
        event: { type: 'agent_run.failed', data: { runId: r.id, feedbackId: r.feedback_id, error: reason } },
      })
    }
    return rows.length
  }


  /** Records a run that ends before it starts (no repository, a cap reached). */
  async function recordFailedStart(f: FeedbackRow, provider: string, model: string | null, error: string): Promise<void> {
    const id = newId(clock)
    const now = clock.now()
    await runs.recordFailedStart(
      { id, orgId: f.org_id, appId: f.app_id, feedbackId: f.id, provider, model, status: 'failed', branch: `fixloop/${f.id}`, timings: JSON.stringify(zeroTimings()), startedAt: now, createdAt: now, nodeId: opts.nodeId ?? null },
      { id, status: 'failed', model, tokensIn: 0, tokensOut: 0, costUsd: 0, prUrl: null, guardrailReason: null, error, timings: JSON.stringify(zeroTimings()), summary: null, outputTail: null, endedAt: now },
      { move: failItem(error, 'queued'), event: { type: 'agent_run.failed', data: { runId: id, feedbackId: f.id, error } } },
    )
    log.warn('agent run not started', { runId: id, feedbackId: f.id, error })
  }

  async function capReached(conn: RepoConnection): Promise<string | null> {
    const now = clock.now()
    const today = await runs.runsSince(conn.appId, now - 24 * 3600_000)
    if (today >= conn.runsPerDay) return `cap reached: ${today} runs in the last 24 hours (limit ${conn.runsPerDay} per day)`
    const d = new Date(now)
    const monthStart = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
    const spent = await runs.costSince(conn.appId, monthStart)
    if (spent >= conn.maxCostUsdPerMonth) return `cap reached: $${spent.toFixed(2)} spent this month (limit $${conn.maxCostUsdPerMonth})`
    return null
  }

  /**
   * Starts are taken one at a time, after the reclaim at start (`recover`): the check for a free slot and
   * the run's row are never interleaved with another start of this process at an `await`, and a run is
   * never started before the runs a crash left are failed (nor its workspace removed with theirs).
   */
  const inTurn = createTurns()
  /** Set by `stop`: starts are refused from then on. */
  let stopping = false

  /**
   * Starts a run for a queued report if a slot is free. Returns false when the report no longer
   * needs one (archived, a duplicate, already running). Throws RunnerBusy when it must wait.
   */
  async function start(feedbackId: string): Promise<boolean> {
    // Stopping: no run is made that nobody would end (the job waits for the next start).
    if (stopping) throw new RunnerBusy('fixloop is stopping')
    const f = await runs.feedback(feedbackId)
    if (!f || f.status !== 'queued' || f.duplicate_of_id) return false
    const conn = await connections.load(f.app_id)
    // No repository yet: the report waits in `queued`; `connect-repo` queues a run for it.
    if (!conn) return false
    if ((await runs.runningCount(f.app_id)) > 0 || [...active.values()].some((a) => a.appId === f.app_id)) {
      throw new RunnerBusy('another run of this App is in progress')
    }
    if (active.size >= opts.concurrency) throw new RunnerBusy(`all ${opts.concurrency} agent slots are busy`)
    // Never unconfined by accident: without a working sandbox every run fails at once, with the reason.
    const cap = opts.sandbox.mode === 'bwrap' && opts.sandbox.unavailable ? `agents cannot run: ${opts.sandbox.unavailable}` : await capReached(conn)
    if (cap) {
      await recordFailedStart(f, conn.agentProvider, conn.model, cap)
      return true
    }
    const runId = newId(clock)
    const now = clock.now()
    const branch = `fixloop/${f.id}`
    const moved = await runs.startRun(
      { id: runId, orgId: f.org_id, appId: f.app_id, feedbackId: f.id, provider: conn.agentProvider, model: conn.model, status: 'running', branch, timings: JSON.stringify(zeroTimings()), startedAt: now, createdAt: now, nodeId: opts.nodeId ?? null },
      { type: 'agent_run.started', data: { runId, feedbackId: f.id, provider: conn.agentProvider } },
    )
    // Another node started a run of this App since the check above: wait, as for a run of this node.
    if (moved === 'app_busy') throw new RunnerBusy('another run of this App is in progress')
    if (!moved) return false
    const abort = new AbortController()
    const done = execute(runId, f, conn, branch, abort.signal)
      .catch((e) => log.error('agent run crashed', { runId, error: e instanceof Error ? e.message : String(e) }))
      .finally(() => active.delete(runId))
    active.set(runId, { appId: f.app_id, abort, done })
    log.info('agent run started', { runId, feedbackId: f.id, appId: f.app_id, provider: conn.agentProvider })
    return true
  }

  /** Why a run of the App cannot start now (its slot or every slot busy), or null when one could. */
  async function busyReason(appId: string): Promise<string | null> {
    if ((await runs.runningCount(appId)) > 0 || [...active.values()].some((a) => a.appId === appId)) return 'another run of this App is in progress'
    if (active.size >= opts.concurrency) return `all ${opts.concurrency} agent slots are busy`
    return null
  }

  /**
   * Why a review of the report's pull request is refused rather than queued, or null: the report is not
   * waiting on an open request (`agent_running` is: an iteration of it is in progress, the review waits for
   * it), no repository, the per-PR iteration cap or the App's spend caps reached, agents cannot run.
   */
  async function reviewRefusal(feedbackId: string): Promise<string | null> {
    const f = await runs.feedback(feedbackId)
    if (!f || (f.status !== 'pr_opened' && f.status !== 'agent_running') || f.duplicate_of_id) return 'the report is not waiting on an open pull request'
    const conn = await connections.load(f.app_id)
    if (!conn) return 'no repository connected'
    const max = opts.reviewIterationsMax ?? 3
    const done = await runs.reviewRuns(f.id)
    if (done >= max) return `iteration cap reached: ${done} review iterations on this pull request (limit ${max})`
    if (opts.sandbox.mode === 'bwrap' && opts.sandbox.unavailable) return `agents cannot run: ${opts.sandbox.unavailable}`
    return await capReached(conn)
  }

  /**
   * A review iteration on a report's open pull request, for the reviews waiting on it (pending_reviews,
   * queued by the webhook): one iteration for all of them, their texts combined in arrival order
   * (`combineReviews`, bounded). The agent runs again on the request's branch with the reviews added to its
   * task, under the same sandbox, guardrails and caps (the App's runs per day and monthly spend, and at
   * most `reviewIterationsMax` iterations per request); the report moves pr_opened → agent_running →
   * pr_opened whatever the run's outcome (the request stays open; the run records the failure). Throws
   * RunnerBusy while the App's slot (or every slot) is taken: the `review` job waits. Reviews that can no
   * longer run (the report moved on, a cap reached) are dropped, with a warning in the log.
   */
  async function startQueuedReview(feedbackId: string): Promise<boolean> {
    if (stopping) throw new RunnerBusy('fixloop is stopping')
    const waiting = await runs.pendingReviews(feedbackId)
    if (waiting.length === 0) return false
    const f = await runs.feedback(feedbackId)
    // An iteration of this report is in progress: the reviews wait for it (it is the App's run).
    if (f?.status === 'agent_running' && !f.duplicate_of_id) throw new RunnerBusy('an iteration of this pull request is in progress')
    const refused = await reviewRefusal(feedbackId)
    if (refused || !f) {
      await runs.dropPendingReviews(waiting.map((w) => w.id))
      log.warn('queued reviews dropped', { feedbackId, reviews: waiting.length, reason: refused })
      return false
    }
    const busy = await busyReason(f.app_id)
    if (busy) throw new RunnerBusy(busy)
    const conn = (await connections.load(f.app_id))!
    const runId = newId(clock)
    const now = clock.now()
    const branch = `fixloop/${f.id}`
    const review = combineReviews(waiting)
    const started = await runs.startReviewRun(
      { id: runId, orgId: f.org_id, appId: f.app_id, feedbackId: f.id, provider: conn.agentProvider, model: conn.model, status: 'running', branch, timings: JSON.stringify(zeroTimings()), startedAt: now, createdAt: now, nodeId: opts.nodeId ?? null, reviewText: review.text },
      { type: 'agent_run.started', data: { runId, feedbackId: f.id, provider: conn.agentProvider } },
      waiting.map((w) => w.id),
    )
    if (started === 'app_busy') throw new RunnerBusy('another run of this App is in progress')
    if (!started) return false
    const abort = new AbortController()
    const done = execute(runId, f, conn, branch, abort.signal, { prUrl: waiting[0]!.pr_url, ...review })
      .catch((e) => log.error('agent run crashed', { runId, error: e instanceof Error ? e.message : String(e) }))
      .finally(() => active.delete(runId))
    active.set(runId, { appId: f.app_id, abort, done })
    log.info('review iteration started', { runId, feedbackId: f.id, appId: f.app_id, reviews: waiting.length })
    return true
  }

  /** The attachments folder's sources: the lead's duplicates, the uploads' bytes, the log. */
  const media: MediaSource = {
    duplicates: (leadId) => runs.duplicatesMedia(leadId),
    read: (appId, key, maxBytes) => (opts.readAttachment ? opts.readAttachment(appId, key, maxBytes) : Promise.resolve(null)),
    warn: (message, fields) => log.warn(message, fields),
  }

  /** Aborts a run of this process (`reason`: REPORT_REMOVED, or nothing at shutdown). */
  function abortRun(runId: string, reason?: string): void {
    const a = active.get(runId)
    if (a && !a.abort.signal.aborted) a.abort.abort(reason)
  }

  async function execute(runId: string, f: FeedbackRow, conn: RepoConnection, branch: string, signal: AbortSignal, review?: { prUrl: string; text: string; author: string | null }): Promise<void> {
    const passed = passedThrough(conn)
    const scrub = createScrubber([conn.hostToken, ...Object.values(passed)])
    // The sandbox's PID is written as it starts and cleared as it ends, in that order (one after the other).
    let sandboxWrites = Promise.resolve()
    const recordSandbox = (pid: number | null) => {
      const identity = pid === null ? null : processIdentity(pid)
      sandboxWrites = sandboxWrites
        .then(() => runs.setSandbox(runId, pid, identity))
        .catch((e) => log.error('could not record an agent sandbox', { runId, error: e instanceof Error ? e.message : String(e) }))
    }
    // Each phase's end is an event (agent_run.phase) with the run's timings so far. Never retried and never
    // thrown: a database away for a moment loses that phase's event, not the run (its end is retried below).
    const scope = { feedbackId: f.id, orgId: f.org_id, appId: f.app_id }
    const recordPhase = async (phase: RunPhase, ms: number, timings: Timings) => {
      await runs
        .recordPhase(scope, runId, JSON.stringify(timings), { type: 'agent_run.phase', data: { runId, feedbackId: f.id, phase, durationMs: Math.max(0, Math.round(ms)) } })
        .catch((e) => log.warn('could not record an agent run phase', { runId, phase, error: e instanceof Error ? e.message : String(e) }))
    }
    // Its report removed meanwhile (the removal deleted the run's row): the agent is stopped now, not at its end.
    const stillWanted = () => runs.runExists(runId).catch(() => true)
    const watch = setInterval(() => {
      void stillWanted().then((wanted) => wanted || abortRun(runId, REPORT_REMOVED))
    }, REMOVAL_WATCH_MS)
    let outcome: Awaited<ReturnType<typeof executeRun>>
    // As root, the run's agent is a uid no other run has (its keyring and quotas its own); released once
    // the workspace is gone.
    const uids = opts.sandbox.mode === 'bwrap' ? (opts.sandbox.agentUids ?? 'own') : 'own'
    const lease = uids === 'own' ? null : leaseAgentUid(uids)
    const sandbox = lease ? { ...opts.sandbox, runAs: lease.uid } : opts.sandbox
    try {
      const ws = createWorkspace(workspaces, runId)
      outcome = await executeRun(
        {
          runId,
          f,
          conn,
          branch,
          ws,
          sandbox,
          agentEnv: agentEnvironment(sandbox, ws, env.PATH, passed),
          scrub,
          // The host token never reaches the agent; the variables passed through do (settings aside).
          secrets: secretLiterals(Object.entries(passed).filter(([name]) => !NOT_SECRET_ENV.has(name)).map(([, value]) => value)),
          signal,
          // A database away for a moment is no reason to drop a finished fix: only a row known gone is.
          stillWanted,
          publicUrl: opts.publicUrl,
          gitHostAllowPrivate: opts.gitHostAllowPrivate,
          outboundTimeoutMs: opts.outboundTimeoutMs,
          onSandbox: recordSandbox,
          onPhase: recordPhase,
          media,
          review: review ? { prUrl: review.prUrl } : undefined,
        },
        { ...taskInput(f), review: review ? { text: review.text, author: review.author } : undefined },
      )
    } catch (e) {
      outcome = { status: 'failed', usage: {}, timings: zeroTimings(), prUrl: null, outputTail: null, reason: scrub(`internal error: ${e instanceof Error ? e.message : String(e)}`) }
    } finally {
      clearInterval(watch)
      lease?.release()
    }
    await sandboxWrites
    // The run's outcome (a pushed branch, an opened pull request) is recorded even when the database is away
    // as it ends (a full disk, a read-only remount): tried again until it is back. Dropped, the run stayed
    // `running` until a restart failed it as interrupted (its pull request forgotten), and every other
    // report of the App waited behind it. A stop ends the waiting; the next start fails the run then.
    for (let wait = 1000; ; wait = Math.min(wait * 2, FINISH_RETRY_MAX_MS)) {
      try {
        await finish(runId, f, outcome.status, outcome, review?.prUrl)
        return
      } catch (e) {
        if (storageUnavailable(e) === null || signal.aborted) throw e
        outage('warn', 'agent run ended; its outcome waits for the database', e, { runId, status: outcome.status })
        await pause(wait, signal)
        if (signal.aborted) throw e
      }
    }
  }

  async function finish(
    runId: string,
    f: FeedbackRow,
    status: 'succeeded' | 'failed' | 'guardrailed',
    r: { usage: AgentUsage; timings: Timings; prUrl: string | null; outputTail: string | null; reason?: string },
    /** A review iteration's pull request: the report goes back to it whatever the outcome. */
    reviewOf?: string,
  ): Promise<void> {
    const now = clock.now()
    const scope = { feedbackId: f.id, orgId: f.org_id, appId: f.app_id }
    const event: RunOutcome['event'] =
      status === 'succeeded'
        ? { type: 'agent_run.succeeded', data: { runId, feedbackId: f.id, prUrl: r.prUrl, branch: `fixloop/${f.id}`, costUsd: r.usage.costUsd ?? 0 } }
        : status === 'guardrailed'
          ? { type: 'agent_run.guardrailed', data: { runId, feedbackId: f.id, guardrailReason: r.reason ?? '' } }
          : { type: 'agent_run.failed', data: { runId, feedbackId: f.id, error: r.reason ?? '' } }
    const outcome: RunOutcome =
      reviewOf !== undefined
        ? { move: { to: 'pr_opened', cause: { by: 'system', from: 'agent_running', prUrl: reviewOf } }, event }
        : status === 'succeeded'
        ? {
            move: { to: 'pr_opened', cause: { by: 'system', from: 'agent_running', prUrl: r.prUrl } },
            // Reports in the cluster point at the same pull request.
            shareUrl: r.prUrl,
            event: { type: 'agent_run.succeeded', data: { runId, feedbackId: f.id, prUrl: r.prUrl, branch: `fixloop/${f.id}`, costUsd: r.usage.costUsd ?? 0 } },
          }
        : {
            move: failItem(`agent run ${runId} ${status}: ${r.reason ?? ''}`, 'agent_running'),
            event:
              status === 'guardrailed'
                ? { type: 'agent_run.guardrailed', data: { runId, feedbackId: f.id, guardrailReason: r.reason ?? '' } }
                : { type: 'agent_run.failed', data: { runId, feedbackId: f.id, error: r.reason ?? '' } },
          }
    const recorded = await runs.finishRun(
      scope,
      {
        id: runId,
        status,
        model: r.usage.model ?? null,
        tokensIn: r.usage.tokensIn ?? 0,
        tokensOut: r.usage.tokensOut ?? 0,
        costUsd: r.usage.costUsd ?? 0,
        prUrl: r.prUrl,
        guardrailReason: status === 'guardrailed' ? (r.reason ?? null) : null,
        error: status === 'failed' ? (r.reason ?? null) : null,
        timings: JSON.stringify(r.timings),
        summary: r.usage.summary ?? null,
        outputTail: r.outputTail,
        endedAt: now,
      },
      outcome,
    )
    if (!recorded) {
      log.info('agent run ended after its report was removed: nothing recorded', { runId, feedbackId: f.id, status })
      return
    }
    log.info('agent run ended', { runId, feedbackId: f.id, status, prUrl: r.prUrl, reason: r.reason })
  }

  /** The operator's variables an agent gets: its preset's and FIXLOOP_AGENT_ENV's, never a FIXLOOP_* one. */
  function passedThrough(conn: RepoConnection): Record<string, string> {
    const out: Record<string, string> = {}
    for (const name of [...PRESET_ENV[conn.agentProvider], ...opts.passEnv]) {
      // fixloop's own settings (master key, S3 keys, …) never reach an agent, even if listed.
      if (name.startsWith('FIXLOOP_')) continue
      const value = env[name]
      if (value !== undefined) out[name] = value
    }
    return out
  }

  return {
    start: (feedbackId: string): Promise<boolean> => inTurn(() => start(feedbackId)),

    /** Why a review of the report's pull request is refused (the webhook answers with it), or null: it is queued. */
    reviewRefusal,
    /** Why a run of the App would wait now, or null (the webhook's answer for a queued review). */
    busyReason,
    /** Gives up the reviews waiting on the report (their job gave up), with a warning in the log. */
    async dropQueuedReviews(feedbackId: string, reason: string): Promise<void> {
      const waiting = await runs.pendingReviews(feedbackId)
      if (waiting.length === 0) return
      await runs.dropPendingReviews(waiting.map((w) => w.id))
      log.warn('queued reviews dropped', { feedbackId, reviews: waiting.length, reason })
    },
    /** Starts the iteration for the reviews waiting on the report (the `review` job); RunnerBusy: wait. */
    startQueuedReview: (feedbackId: string): Promise<boolean> => inTurn(() => startQueuedReview(feedbackId)),

    /** This instance's workspace directory (outside the data dir). */
    workspaceDir: workspaces,

    get activeCount(): number {
      return active.size
    },

    /**
     * At start: runs left `running` by a crash or restart are failed, and their reports too. Starts wait
     * for it. Embedded mode: one process per data dir, so every `running` row is a run of a process that
     * is gone. Cluster mode: only runs no node claims (from before cluster mode); a run of a node that
     * stopped beating is failed by the maintenance holder's sweep (`failRunsOf`), never because this node
     * started.
     */
    recover(): Promise<number> {
      return inTurn(async () => {
        const n = await failInterrupted(await runs.interrupted(opts.nodeId === undefined ? undefined : null), true)
        // Workspaces of interrupted runs may hold a clone: remove them (this node's own directory).
        // One that cannot be removed (not fixloop's to remove) is logged, never a reason not to start.
        if (existsSync(workspaces)) {
          for (const d of readdirSync(workspaces)) {
            try {
              removeWorkspaceSync(join(workspaces, d))
            } catch (e) {
              log.warn('a workspace left by an interrupted run could not be removed', { path: join(workspaces, d), error: e instanceof Error ? e.message : String(e) })
            }
          }
        }
        return n
      })
    },

    /**
     * Cluster mode, at each sweep of the maintenance holder: fails the runs of nodes the sweep found dead
     * (their sandboxes died with them or run on another host), and runs of no live node (a node that left
     * while its row still read `running`: stopped by an older fixloop mid-start; without this the App's one
     * run slot stayed taken until some node restarted).
     */
    async failRunsOf(nodeIds: string[]): Promise<number> {
      const dead = nodeIds.length === 0 ? 0 : await failInterrupted(await runs.interrupted(nodeIds), false)
      if (dead > 0) log.warn('failed the agent runs of nodes that stopped beating', { runs: dead, nodes: nodeIds })
      const orphans = await failInterrupted(await runs.interrupted(null), false)
      if (orphans > 0) log.warn('failed agent runs no live node runs', { runs: orphans })
      return dead + orphans
    },

    /** Waits for the reclaim at start, the starts in hand and every run in progress to end. */
    async idle(): Promise<void> {
      for (;;) {
        const pending = inTurn.tail
        await pending
        if (active.size === 0 && pending === inTurn.tail) return
        await Promise.all([...active.values()].map((a) => a.done))
      }
    },

    /**
     * At shutdown: refuses new starts, lets the start in hand finish (its run is then in `active`, or was
     * never made), then kills running agents; their runs end as failed (interrupted). Without waiting for
     * the start, a SIGTERM while a run was being claimed left its row `running` once this process was gone
     * (an upgrade audit, PostgreSQL: the App's run slot taken for good).
     */
    async stop(): Promise<void> {
      stopping = true
      // Bounded: a start stuck on a database that does not answer must not hold the stop (a run it makes
      // after this is failed by the next sweep or start: its node is no longer listed).
      await Promise.race([inTurn.tail, Bun.sleep(STOP_START_WAIT_MS)])
      for (const a of active.values()) a.abort.abort()
      await Promise.all([...active.values()].map((a) => a.done))
    },
  }
}
export type AgentRunner = ReturnType<typeof createAgentRunner>
