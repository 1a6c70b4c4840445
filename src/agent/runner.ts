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
 */
import type { Database } from 'bun:sqlite'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Clock } from '../core/clock'
import { newId } from '../core/ids'
import type { Logger } from '../core/logger'
import type { ConnectionsService, RepoConnection } from '../modules/connections/service'
import type { Lifecycle } from '../lifecycle/lifecycle'
import { createRunsRepo, type RunFeedbackRow as FeedbackRow } from './runs-repo'
import { PRESET_ENV, type AgentUsage } from './presets'
import { agentEnvironment, executeRun, taskInput, zeroTimings, type Timings } from './run'
import { killRecorded, processIdentity } from './process-tree'
import type { SandboxOptions } from './sandbox'
import { createScrubber } from './scrubber'
import { createWorkspace, instanceDir } from './workspace'

export type { Timings } from './run'

export interface RunnerOptions {
  dataDir: string
  /** Most runs at once over all Apps (FIXLOOP_AGENT_CONCURRENCY). */
  concurrency: number
  /** Extra environment variable names passed to agents (FIXLOOP_AGENT_ENV). */
  passEnv: string[]
  /** Base URL for links back to the report in PR bodies (FIXLOOP_PUBLIC_URL), if any. */
  publicUrl: string | undefined
  /** The environment agents' pass-through variables are read from. */
  env?: Record<string, string | undefined>
  /** The sandbox agents run in (FIXLOOP_AGENT_SANDBOX, FIXLOOP_AGENT_NETWORK, FIXLOOP_AGENT_SANDBOX_PATHS). */
  sandbox: SandboxOptions
  /** Root of run workspaces, outside the data dir (FIXLOOP_WORK_DIR). */
  workDir: string
}

/** Why a run could not start now; the job is tried again later. */
export class RunnerBusy extends Error {}

export function createAgentRunner(sqlite: Database, connections: ConnectionsService, lifecycle: Lifecycle, clock: Clock, log: Logger, opts: RunnerOptions) {
  const active = new Map<string, { appId: string; abort: AbortController; done: Promise<void> }>()
  const env = opts.env ?? process.env

  const runs = createRunsRepo(sqlite)

  const workspaces = instanceDir(opts.workDir, opts.dataDir)

  function failItem(feedbackId: string, reason: string, from: 'queued' | 'agent_running'): void {
    lifecycle.sqlite!.move(sqlite, feedbackId, 'failed', { by: 'system', from, reason })
  }

  /** Records a run that ends before it starts (no repository, a cap reached). */
  function recordFailedStart(f: FeedbackRow, provider: string, model: string | null, error: string): void {
    const id = newId(clock)
    const now = clock.now()
    sqlite.transaction(() => {
      runs.insertRun({ id, orgId: f.org_id, appId: f.app_id, feedbackId: f.id, provider, model, status: 'failed', branch: `fixloop/${f.id}`, timings: JSON.stringify(zeroTimings()), startedAt: now, createdAt: now })
      runs.endRun({ id, status: 'failed', model, tokensIn: 0, tokensOut: 0, costUsd: 0, prUrl: null, guardrailReason: null, error, timings: JSON.stringify(zeroTimings()), summary: null, outputTail: null, endedAt: now })
      failItem(f.id, error, 'queued')
      lifecycle.sqlite!.record({ orgId: f.org_id, appId: f.app_id }, 'agent_run.failed', { runId: id, feedbackId: f.id, error })
    })()
    log.warn('agent run not started', { runId: id, feedbackId: f.id, error })
  }

  function capReached(conn: RepoConnection): string | null {
    const now = clock.now()
    const today = runs.runsSince(conn.appId, now - 24 * 3600_000)
    if (today >= conn.runsPerDay) return `cap reached: ${today} runs in the last 24 hours (limit ${conn.runsPerDay} per day)`
    const d = new Date(now)
    const monthStart = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
    const spent = runs.costSince(conn.appId, monthStart)
    if (spent >= conn.maxCostUsdPerMonth) return `cap reached: $${spent.toFixed(2)} spent this month (limit $${conn.maxCostUsdPerMonth})`
    return null
  }

  /**
   * Starts a run for a queued report if a slot is free. Returns false when the report no longer
   * needs one (archived, a duplicate, already running). Throws RunnerBusy when it must wait.
   */
  async function start(feedbackId: string): Promise<boolean> {
    const f = runs.feedback(feedbackId)
    if (!f || f.status !== 'queued' || f.duplicate_of_id) return false
    // The last await before the slot checks: from here to `active.set` nothing else runs on this thread.
    const conn = await connections.load(f.app_id)
    // No repository yet: the report waits in `queued`; `connect-repo` queues a run for it.
    if (!conn) return false
    if (runs.runningCount(f.app_id) > 0 || [...active.values()].some((a) => a.appId === f.app_id)) {
      throw new RunnerBusy('another run of this App is in progress')
    }
    if (active.size >= opts.concurrency) throw new RunnerBusy(`all ${opts.concurrency} agent slots are busy`)
    // Never unconfined by accident: without a working sandbox every run fails at once, with the reason.
    const cap = opts.sandbox.mode === 'bwrap' && opts.sandbox.unavailable ? `agents cannot run: ${opts.sandbox.unavailable}` : capReached(conn)
    if (cap) {
      recordFailedStart(f, conn.agentProvider, conn.model, cap)
      return true
    }
    const runId = newId(clock)
    const now = clock.now()
    const branch = `fixloop/${f.id}`
    const moved = sqlite.transaction(() => {
      if (!lifecycle.sqlite!.move(sqlite, f.id, 'agent_running', { by: 'system', from: 'queued' })) return false
      runs.insertRun({ id: runId, orgId: f.org_id, appId: f.app_id, feedbackId: f.id, provider: conn.agentProvider, model: conn.model, status: 'running', branch, timings: JSON.stringify(zeroTimings()), startedAt: now, createdAt: now })
      lifecycle.sqlite!.record({ orgId: f.org_id, appId: f.app_id }, 'agent_run.started', { runId, feedbackId: f.id, provider: conn.agentProvider })
      return true
    }).immediate()
    if (!moved) return false
    const abort = new AbortController()
    const done = execute(runId, f, conn, branch, abort.signal)
      .catch((e) => log.error('agent run crashed', { runId, error: e instanceof Error ? e.message : String(e) }))
      .finally(() => active.delete(runId))
    active.set(runId, { appId: f.app_id, abort, done })
    log.info('agent run started', { runId, feedbackId: f.id, appId: f.app_id, provider: conn.agentProvider })
    return true
  }

  async function execute(runId: string, f: FeedbackRow, conn: RepoConnection, branch: string, signal: AbortSignal): Promise<void> {
    const passed = passedThrough(conn)
    const scrub = createScrubber([conn.hostToken, ...Object.values(passed)])
    let outcome: Awaited<ReturnType<typeof executeRun>>
    try {
      const ws = createWorkspace(workspaces, runId)
      outcome = await executeRun(
        {
          runId,
          f,
          conn,
          branch,
          ws,
          sandbox: opts.sandbox,
          agentEnv: agentEnvironment(opts.sandbox, ws, env.PATH, passed),
          scrub,
          signal,
          publicUrl: opts.publicUrl,
          onSandbox: (pid) => runs.setSandbox(runId, pid, pid === null ? null : processIdentity(pid)),
        },
        taskInput(f),
      )
    } catch (e) {
      outcome = { status: 'failed', usage: {}, timings: zeroTimings(), prUrl: null, outputTail: null, reason: scrub(`internal error: ${e instanceof Error ? e.message : String(e)}`) }
    }
    finish(runId, f, outcome.status, outcome)
  }

  function finish(
    runId: string,
    f: FeedbackRow,
    status: 'succeeded' | 'failed' | 'guardrailed',
    r: { usage: AgentUsage; timings: Timings; prUrl: string | null; outputTail: string | null; reason?: string },
  ): void {
    const now = clock.now()
    sqlite.transaction(() => {
      runs.endRun({
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
      })
      const scope = { orgId: f.org_id, appId: f.app_id }
      if (status === 'succeeded') {
        lifecycle.sqlite!.move(sqlite, f.id, 'pr_opened', { by: 'system', from: 'agent_running', prUrl: r.prUrl })
        // Reports in the cluster point at the same pull request.
        if (r.prUrl) runs.shareUrl(f.id, r.prUrl, now)
        lifecycle.sqlite!.record(scope, 'agent_run.succeeded', { runId, feedbackId: f.id, prUrl: r.prUrl, branch: `fixloop/${f.id}`, costUsd: r.usage.costUsd ?? 0 })
      } else {
        failItem(f.id, `agent run ${runId} ${status}: ${r.reason ?? ''}`, 'agent_running')
        if (status === 'guardrailed') lifecycle.sqlite!.record(scope, 'agent_run.guardrailed', { runId, feedbackId: f.id, guardrailReason: r.reason ?? '' })
        else lifecycle.sqlite!.record(scope, 'agent_run.failed', { runId, feedbackId: f.id, error: r.reason ?? '' })
      }
    })()
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
    start,

    /** This instance's workspace directory (outside the data dir). */
    workspaceDir: workspaces,

    get activeCount(): number {
      return active.size
    },

    /** At start: runs left `running` by a crash or restart are failed, and their reports too. */
    recover(): number {
      const rows = runs.interrupted()
      const reason = 'interrupted: fixloop stopped during the run (crash or restart); queue the report again to retry'
      for (const r of rows) {
        // The sandbox of a run whose server died may still be running: end it (and every process in it).
        if (killRecorded(r.sandbox_pid, r.sandbox_start)) log.warn('killed the sandbox of an interrupted agent run', { runId: r.id, pid: r.sandbox_pid })
        sqlite.transaction(() => {
          if (!runs.failInterrupted(r.id, reason, clock.now())) return
          failItem(r.feedback_id, `agent run ${r.id} failed: ${reason}`, 'agent_running')
          lifecycle.sqlite!.record({ orgId: r.org_id, appId: r.app_id }, 'agent_run.failed', { runId: r.id, feedbackId: r.feedback_id, error: reason })
        })()
      }
      // Workspaces of interrupted runs may hold a clone: remove them.
      if (existsSync(workspaces)) for (const d of readdirSync(workspaces)) rmSync(join(workspaces, d), { recursive: true, force: true })
      return rows.length
    },

    /** Waits for every run in progress to end. */
    async idle(): Promise<void> {
      while (active.size > 0) await Promise.all([...active.values()].map((a) => a.done))
    },

    /** At shutdown: kills running agents; their runs end as failed (interrupted). */
    async stop(): Promise<void> {
      for (const a of active.values()) a.abort.abort()
      await Promise.all([...active.values()].map((a) => a.done))
    },
  }
}
export type AgentRunner = ReturnType<typeof createAgentRunner>
