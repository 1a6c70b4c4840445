/**
 * The recurring `pr_poll` job: the fallback for git hosts that cannot reach fixloop's webhook. Every
 * FIXLOOP_PR_POLL_MINUTES it reads the state of the open pull/merge requests fixloop opened (reports in
 * `pr_opened`) and applies a merge or a close exactly as the webhook does (modules/git-hooks/repo.ts: the
 * same moves and events); and of the requests it saw closed without merge in the last CLOSED_PR_POLL_MS
 * (reports in `awaiting_manual` that kept the URL), so a reopen moves the report back to `pr_opened` (a
 * reopened request merged since: reopened, then merged). At most PR_POLL_BATCH of each per pass. A durable
 * job, so in cluster mode one node claims each pass. A host that throttles (429, or 403 with Retry-After)
 * holds back its own App's requests until its wait is over; the pass reads the other Apps' requests
 * meanwhile. Every App's host is its Org's choice, and the pass walks all of them: a throttle used to end
 * the pass and the next one started with the same request, so a host that always throttles (a server of
 * the Org's own, or a token over its rate limit) stopped the polling of every other App's requests.
 */
import type { Clock } from '../../core/clock'
import type { Logger } from '../../core/logger'
import type { Lifecycle } from '../../lifecycle/lifecycle'
import type { ConnectionsService, RepoConnection } from '../../modules/connections/service'
import { CLOSED_PR_POLL_MS, type GitHooksRepo, type PrChange, type PrReport } from '../../modules/git-hooks/repo'
import type { JobsRepo } from '../../lifecycle/jobs-repo'
import type { JobStep } from '../loop'
import { HostThrottled, pullNumberOf, pullRequestState } from '../../agent/hosts'
import { createAppTimeShare, DEFAULT_CALL_SHARE, type CallShare } from '../../core/time-share'
import { UNBOUNDED, type JobBudget } from '../../core/job-budget'

/** Pull requests read per pass; a full pass comes back after PR_POLL_NEXT_BATCH_MS for the rest. */
export const PR_POLL_BATCH = 50
const PR_POLL_NEXT_BATCH_MS = 5_000

export interface PollPass {
  read: number
  moved: number
  failed: number
  /** Apps whose host asked to wait in this pass (their requests are skipped until it is over). */
  throttled: number
}

export function createPollPullRequestsStep(deps: {
  hooks: GitHooksRepo
  connections: Pick<ConnectionsService, 'load'>
  lifecycle: Lifecycle
  clock: Clock
  log: Logger
  everyMs: number
  /** Git-host API URLs may resolve to private addresses (FIXLOOP_GIT_HOST_ALLOW_PRIVATE). */
  gitHostAllowPrivate: boolean
  /** FIXLOOP_OUTBOUND_TIMEOUT in ms: each read's deadline. */
  outboundTimeoutMs: number
  /** Each App's and Org's share of the worker's time for host calls (default: core/time-share.ts's). */
  share?: CallShare
}) {
  const { hooks, clock, log } = deps
  /** Where the next pass starts (a run id; a feedback id for closed requests): kept across passes of this process; another node starts over. */
  let cursor = ''
  let closedCursor = ''
  /** Apps whose host asked to wait, until when (epoch ms): their requests are not read until then. Kept by this process only. */
  const throttledUntil = new Map<string, number>()
  /**
   * Each App's share of this worker's time for its host's answers (core/time-share.ts): a host that holds
   * every read to its deadline (15 s) held the worker (agent starts, reviews, tracker pushes) for 50 reads a pass.
   */
  const { appBudgetMs, orgBudgetMs, windowMs } = deps.share ?? DEFAULT_CALL_SHARE
  const share = createAppTimeShare(() => clock.now(), appBudgetMs, orgBudgetMs, windowMs)

  /**
   * `time`: the job's (core/job-budget.ts). A read whose deadline would end past it is not started: the
   * pass stops before that request (the cursors stay on the ones before) and the next pass, in
   * PR_POLL_NEXT_BATCH_MS, goes on from there. The shares bound each App and Org, not the pass: 100
   * requests of as many Orgs each held to its deadline were 100 × 15 s, far past the job's lease.
   */
  async function pass(time: JobBudget = UNBOUNDED): Promise<PollPass & { full: boolean }> {
    const batch = await hooks.openPullRequests(cursor, PR_POLL_BATCH)
    const closed = await hooks.closedPullRequests(closedCursor, clock.now() - CLOSED_PR_POLL_MS, PR_POLL_BATCH)
    const conns = new Map<string, RepoConnection | null>()
    const out: PollPass & { full: boolean } = { read: 0, moved: 0, failed: 0, throttled: 0, full: batch.length === PR_POLL_BATCH || closed.length === PR_POLL_BATCH }
    for (const [appId, until] of throttledUntil) if (until <= clock.now()) throttledUntil.delete(appId)
    /** Apps whose host failed a read in this pass: their other requests wait for the next pass. */
    const failedApps = new Set<string>()
    /** A read was due that would have ended past the job's time: the pass stops there. */
    let outOfTime = false
    /**
     * The request's state on its host, or null: no host to ask, or the App's host asked to wait, failed a
     * read in this pass (one deadline per App and pass) or took its share of the worker's time.
     */
    async function stateOf(report: PrReport) {
      if ((throttledUntil.get(report.appId) ?? 0) > clock.now() || failedApps.has(report.appId) || share.waitMs(report.appId, report.orgId) > 0) return null
      if (!conns.has(report.appId)) conns.set(report.appId, await deps.connections.load(report.appId))
      const conn = conns.get(report.appId)
      const number = pullNumberOf(report.prUrl)
      if (!conn || conn.hostKind === 'none' || !conn.hostToken || !conn.hostApiUrl || number === null) return null
      if (!time.fits(deps.outboundTimeoutMs)) {
        outOfTime = true
        return null
      }
      const began = performance.now()
      try {
        const state = await pullRequestState(conn.hostKind, conn.hostApiUrl, conn.hostToken, conn.hostRepo, number, { allowPrivate: deps.gitHostAllowPrivate, timeoutMs: deps.outboundTimeoutMs }).finally(() => share.spend(report.appId, report.orgId, performance.now() - began))
        out.read++
        return state
      } catch (e) {
        if (e instanceof HostThrottled) {
          throttledUntil.set(report.appId, clock.now() + e.retryAfterMs)
          out.throttled++
          log.warn('git host asked to wait: its App\'s pull requests are polled again after it', { appId: report.appId, retryAfterMs: e.retryAfterMs })
          return null
        }
        out.failed++
        failedApps.add(report.appId)
        log.warn('could not read a pull request\'s state', { feedbackId: report.id, error: e instanceof Error ? e.message : String(e) })
        return null
      }
    }
    /** Applies what the host says, as its webhook deliveries would have. */
    async function apply(report: PrReport, changes: PrChange[]) {
      for (const change of changes) {
        const r = await hooks.receive(report.appId, `poll:${report.id}:${change}:${clock.now()}`, { report, change })
        if (r.outcome !== 'moved') return
        out.moved++
      }
    }
    for (const { runId, report } of batch) {
      const state = await stateOf(report)
      if (outOfTime) break
      if (state === 'merged' || state === 'closed') await apply(report, [state])
      cursor = runId
    }
    if (!outOfTime && batch.length < PR_POLL_BATCH) cursor = ''
    for (const report of outOfTime ? [] : closed) {
      const state = await stateOf(report)
      if (outOfTime) break
      if (state === 'open') await apply(report, ['reopened'])
      if (state === 'merged') await apply(report, ['reopened', 'merged'])
      closedCursor = report.id
    }
    if (!outOfTime && closed.length < PR_POLL_BATCH) closedCursor = ''
    if (outOfTime) out.full = true
    return out
  }

  const step: JobStep & { pass: typeof pass } = {
    pass,
    async run(_job, time): Promise<void> {
      if (deps.everyMs <= 0) return // turned off since this job was queued: not queued again
      const done = await pass(time)
      const next = done.full ? PR_POLL_NEXT_BATCH_MS : deps.everyMs
      await deps.lifecycle.enqueue('pr_poll', {}, clock.now() + next)
    },
  }
  return step
}

/** Makes sure one poll job is scheduled (at start), when polling is on. */
export async function schedulePrPoll(jobs: JobsRepo, lifecycle: Lifecycle, clock: Clock, everyMs: number): Promise<void> {
  if (everyMs > 0 && !(await jobs.hasKind('pr_poll'))) await lifecycle.enqueue('pr_poll', {}, clock.now() + Math.min(everyMs, 60_000))
}
