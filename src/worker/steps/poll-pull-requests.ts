/**
 * The recurring `pr_poll` job: the fallback for git hosts that cannot reach fixloop's webhook. Every
 * FIXLOOP_PR_POLL_MINUTES it reads the state of the open pull/merge requests fixloop opened (reports in
 * `pr_opened`) and applies a merge or a close exactly as the webhook does (modules/git-hooks/repo.ts: the
 * same moves and events); and of the requests it saw closed without merge in the last CLOSED_PR_POLL_MS
 * (reports in `awaiting_manual` that kept the URL), so a reopen moves the report back to `pr_opened` (a
 * reopened request merged since: reopened, then merged). At most PR_POLL_BATCH of each per pass. A durable
 * job, so in cluster mode one node claims each pass. A host that throttles (429, or 403 with Retry-After)
 * ends the pass; the next starts where it stopped once the host's wait is over.
 */
import type { Clock } from '../../core/clock'
import type { Logger } from '../../core/logger'
import type { Lifecycle } from '../../lifecycle/lifecycle'
import type { ConnectionsService, RepoConnection } from '../../modules/connections/service'
import { CLOSED_PR_POLL_MS, type GitHooksRepo, type PrChange, type PrReport } from '../../modules/git-hooks/repo'
import type { JobsRepo } from '../../lifecycle/jobs-repo'
import type { JobStep } from '../loop'
import { HostThrottled, pullNumberOf, pullRequestState } from '../../agent/hosts'

/** Pull requests read per pass; a full pass comes back after PR_POLL_NEXT_BATCH_MS for the rest. */
export const PR_POLL_BATCH = 50
const PR_POLL_NEXT_BATCH_MS = 5_000

export interface PollPass {
  read: number
  moved: number
  failed: number
  /** The host's Retry-After ended the pass (ms), if it did. */
  throttledMs?: number
}

export function createPollPullRequestsStep(deps: { hooks: GitHooksRepo; connections: Pick<ConnectionsService, 'load'>; lifecycle: Lifecycle; clock: Clock; log: Logger; everyMs: number }) {
  const { hooks, clock, log } = deps
  /** Where the next pass starts (a run id; a feedback id for closed requests): kept across passes of this process; another node starts over. */
  let cursor = ''
  let closedCursor = ''

  async function pass(): Promise<PollPass & { full: boolean }> {
    const batch = await hooks.openPullRequests(cursor, PR_POLL_BATCH)
    const closed = await hooks.closedPullRequests(closedCursor, clock.now() - CLOSED_PR_POLL_MS, PR_POLL_BATCH)
    const conns = new Map<string, RepoConnection | null>()
    const out: PollPass & { full: boolean } = { read: 0, moved: 0, failed: 0, full: batch.length === PR_POLL_BATCH || closed.length === PR_POLL_BATCH }
    /** The request's state on its host, or null (no host to ask); HostThrottled ends the pass. */
    async function stateOf(report: PrReport) {
      if (!conns.has(report.appId)) conns.set(report.appId, await deps.connections.load(report.appId))
      const conn = conns.get(report.appId)
      const number = pullNumberOf(report.prUrl)
      if (!conn || conn.hostKind === 'none' || !conn.hostToken || !conn.hostApiUrl || number === null) return null
      try {
        const state = await pullRequestState(conn.hostKind, conn.hostApiUrl, conn.hostToken, conn.hostRepo, number)
        out.read++
        return state
      } catch (e) {
        if (e instanceof HostThrottled) throw e
        out.failed++
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
    try {
      for (const { runId, report } of batch) {
        const state = await stateOf(report)
        if (state === 'merged' || state === 'closed') await apply(report, [state])
        cursor = runId
      }
      for (const report of closed) {
        const state = await stateOf(report)
        if (state === 'open') await apply(report, ['reopened'])
        if (state === 'merged') await apply(report, ['reopened', 'merged'])
        closedCursor = report.id
      }
    } catch (e) {
      if (e instanceof HostThrottled) return { ...out, throttledMs: e.retryAfterMs }
      throw e
    }
    if (batch.length < PR_POLL_BATCH) cursor = ''
    if (closed.length < PR_POLL_BATCH) closedCursor = ''
    return out
  }

  const step: JobStep & { pass: typeof pass } = {
    pass,
    async run(): Promise<void> {
      if (deps.everyMs <= 0) return // turned off since this job was queued: not queued again
      const done = await pass()
      const next = done.throttledMs ?? (done.full ? PR_POLL_NEXT_BATCH_MS : deps.everyMs)
      await deps.lifecycle.enqueue('pr_poll', {}, clock.now() + next)
    },
  }
  return step
}

/** Makes sure one poll job is scheduled (at start), when polling is on. */
export async function schedulePrPoll(jobs: JobsRepo, lifecycle: Lifecycle, clock: Clock, everyMs: number): Promise<void> {
  if (everyMs > 0 && !(await jobs.hasKind('pr_poll'))) await lifecycle.enqueue('pr_poll', {}, clock.now() + Math.min(everyMs, 60_000))
}
