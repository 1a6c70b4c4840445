/**
 * Agent runs: from a queued report (or cluster lead) to a pushed branch and a pull/merge request.
 *
 * A run is one `agent_runs` row updated as it goes: prepare a private workspace → shallow clone of the
 * base branch → branch `fixloop/<feedback id>` → task file → the agent command (timeout, bounded output,
 * minimal environment) → optional verify command → guardrails → commit → push → PR/MR → `pr_opened`.
 * Every failure ends the run as `failed` (or `guardrailed`) with a reason and moves the report to
 * `failed`, from where an `sk_` client can PATCH it back to `queued`. The workspace is always removed.
 *
 * Runs execute outside the worker loop (they take minutes), at most one per App and at most
 * `concurrency` in all. Runs interrupted by a crash are failed at the next start (`recover`).
 */
import type { Database } from 'bun:sqlite'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import type { Clock } from '../core/clock'
import { newId } from '../core/ids'
import type { Logger } from '../core/logger'
import type { ConnectionsService, RepoConnection } from '../modules/connections/service'
import type { Lifecycle } from '../lifecycle/lifecycle'
import { createRunsRepo, type RunFeedbackRow as FeedbackRow } from './runs-repo'
import { execCommand } from './exec'
import { AUTH_USERNAMES, gitEnv, gitOk, scrub } from './git'
import { checkGuardrails, stagedDiff } from './guardrails'
import { openPullRequest } from './hosts'
import { agentCommandLine, parseAgentOutput, parseResultFile, PRESET_ENV, type AgentUsage } from './presets'
import { buildTask } from './task'

export interface Timings {
  prepareMs: number
  cloneMs: number
  agentMs: number
  pushMs: number
  prMs: number
}

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
}

/** Why a run could not start now; the job is tried again later. */
export class RunnerBusy extends Error {}

/** A failure with a message safe to store and show (no token, no secret). */
class RunFailure extends Error {
  constructor(
    message: string,
    readonly kind: 'failed' | 'guardrailed' = 'failed',
  ) {
    super(message)
  }
}

const OUTPUT_TAIL_BYTES = 16 * 1024

export function createAgentRunner(sqlite: Database, connections: ConnectionsService, lifecycle: Lifecycle, clock: Clock, log: Logger, opts: RunnerOptions) {
  const active = new Map<string, { appId: string; abort: AbortController; done: Promise<void> }>()
  const env = opts.env ?? process.env

  const runs = createRunsRepo(sqlite)

  const workspaces = join(opts.dataDir, 'workspaces')

  function failItem(feedbackId: string, reason: string, from: 'queued' | 'agent_running'): void {
    lifecycle.move(sqlite, feedbackId, 'failed', { by: 'system', from, reason })
  }

  /** Records a run that ends before it starts (no repository, a cap reached). */
  function recordFailedStart(f: FeedbackRow, provider: string, model: string | null, error: string): void {
    const id = newId(clock)
    const now = clock.now()
    sqlite.transaction(() => {
      runs.insertRun({ id, orgId: f.org_id, appId: f.app_id, feedbackId: f.id, provider, model, status: 'failed', branch: `fixloop/${f.id}`, timings: JSON.stringify(zeroTimings()), startedAt: now, createdAt: now })
      runs.endRun({ id, status: 'failed', model, tokensIn: 0, tokensOut: 0, costUsd: 0, prUrl: null, guardrailReason: null, error, timings: JSON.stringify(zeroTimings()), summary: null, outputTail: null, endedAt: now })
      failItem(f.id, error, 'queued')
      lifecycle.record({ orgId: f.org_id, appId: f.app_id }, 'agent_run.failed', { runId: id, feedbackId: f.id, error })
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
  function start(feedbackId: string): boolean {
    const f = runs.feedback(feedbackId)
    if (!f || f.status !== 'queued' || f.duplicate_of_id) return false
    const conn = connections.load(f.app_id)
    // No repository yet: the report waits in `queued`; `connect-repo` queues a run for it.
    if (!conn) return false
    if (runs.runningCount(f.app_id) > 0 || [...active.values()].some((a) => a.appId === f.app_id)) {
      throw new RunnerBusy('another run of this App is in progress')
    }
    if (active.size >= opts.concurrency) throw new RunnerBusy(`all ${opts.concurrency} agent slots are busy`)
    const cap = capReached(conn)
    if (cap) {
      recordFailedStart(f, conn.agentProvider, conn.model, cap)
      return true
    }
    const runId = newId(clock)
    const now = clock.now()
    const branch = `fixloop/${f.id}`
    const moved = sqlite.transaction(() => {
      if (!lifecycle.move(sqlite, f.id, 'agent_running', { by: 'system', from: 'queued' })) return false
      runs.insertRun({ id: runId, orgId: f.org_id, appId: f.app_id, feedbackId: f.id, provider: conn.agentProvider, model: conn.model, status: 'running', branch, timings: JSON.stringify(zeroTimings()), startedAt: now, createdAt: now })
      lifecycle.record({ orgId: f.org_id, appId: f.app_id }, 'agent_run.started', { runId, feedbackId: f.id, provider: conn.agentProvider })
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
    const timings = zeroTimings()
    const usage: AgentUsage = {}
    let outputTail: string | null = null
    let prUrl: string | null = null
    const token = conn.hostToken
    const ws = join(workspaces, runId)
    const repo = join(ws, 'repo')
    const home = join(ws, 'home')
    const auth = token ? { token, username: AUTH_USERNAMES[conn.hostKind] } : null
    const genv = gitEnv(home, auth)
    // Each phase's time is recorded when it ends; a failing phase gets the time it ran until then.
    const order: (keyof Timings)[] = ['prepareMs', 'cloneMs', 'agentMs', 'pushMs', 'prMs']
    let current = 0
    let phase = Date.now()
    const lap = (key: keyof Timings) => {
      const t = Date.now()
      timings[key] = t - phase
      phase = t
      current = order.indexOf(key) + 1
    }
    const lapFailed = () => {
      if (current < order.length) timings[order[current]] = Date.now() - phase
    }
    const abortIfStopping = () => {
      if (signal.aborted) throw new RunFailure('interrupted: fixloop was shut down during the run')
    }
    try {
      mkdirSync(home, { recursive: true, mode: 0o700 })
      const taskFile = join(ws, 'task.md')
      const resultFile = join(ws, 'result.json')
      writeFileSync(taskFile, buildTask(taskInput(f)), { mode: 0o600 })
      lap('prepareMs')

      await gitOk(['clone', '--depth', '1', '--branch', conn.baseBranch, '--single-branch', '--no-tags', '--', conn.gitUrl, repo], ws, genv, 'clone', 300_000).catch((e) => {
        throw new RunFailure(e.message)
      })
      await gitOk(['checkout', '-b', branch], repo, genv, 'create branch')
      lap('cloneMs')
      abortIfStopping()

      const before = gitMetaFingerprint(repo)
      const agentEnv = agentEnvironment(conn, home, taskFile, resultFile)
      const cmd = agentCommandLine(conn.agentProvider, conn.model, conn.agentCommand)
      const ran = await execCommand(['/bin/sh', '-c', cmd], { cwd: repo, env: agentEnv, timeoutMs: conn.timeoutSeconds * 1000, signal, maxOutputBytes: 256 * 1024 })
      lap('agentMs')
      outputTail = tail(scrub(ran.output, [token]), OUTPUT_TAIL_BYTES)
      Object.assign(usage, parseAgentOutput(conn.agentProvider, ran.stdout))
      if (existsSync(resultFile)) Object.assign(usage, definedOnly(parseResultFile(readFileSync(resultFile, 'utf8'))))
      abortIfStopping()
      if (ran.timedOut) throw new RunFailure(`agent timed out after ${conn.timeoutSeconds} s`)
      if (ran.code !== 0) throw new RunFailure(`agent exited with code ${ran.code}: ${lastLines(outputTail, 5)}`)

      if (conn.verifyCommand) {
        const verify = await execCommand(['/bin/sh', '-c', conn.verifyCommand], { cwd: repo, env: agentEnv, timeoutMs: conn.timeoutSeconds * 1000, signal })
        const verifyTail = tail(scrub(verify.output, [token]), OUTPUT_TAIL_BYTES)
        outputTail = tail(`${outputTail}\n--- verify ---\n${verifyTail}`, OUTPUT_TAIL_BYTES)
        abortIfStopping()
        if (verify.timedOut) throw new RunFailure(`verify command timed out after ${conn.timeoutSeconds} s`)
        if (verify.code !== 0) throw new RunFailure(`verify command failed (exit ${verify.code}): ${lastLines(verifyTail, 10)}`)
      }

      const metaChange = diffMeta(before, gitMetaFingerprint(repo))
      const diff = await stagedDiff(repo, genv)
      const reason = checkGuardrails(diff, { maxFiles: conn.maxFiles, maxLines: conn.maxLines, denyPaths: conn.denyPaths }, metaChange)
      if (reason) throw new RunFailure(reason, 'guardrailed')

      const title = prTitle(f)
      await gitOk(['-c', 'user.name=fixloop', '-c', 'user.email=fixloop@users.noreply.localhost', 'commit', '--no-verify', '-q', '-m', title, '-m', `Report ${f.id}`], repo, genv, 'commit')
      await gitOk(['push', '--force', '--no-verify', 'origin', `HEAD:refs/heads/${branch}`], repo, genv, 'push', 300_000).catch((e) => {
        throw new RunFailure(e.message)
      })
      lap('pushMs')

      if (conn.prMode !== 'branch' && conn.hostKind !== 'none') {
        prUrl = await openPullRequest(conn.hostKind, conn.hostApiUrl ?? '', token ?? '', conn.hostRepo, {
          title,
          body: prBody(f, usage, diff.files.length, diff.files.reduce((n, x) => n + x.added + x.deleted, 0), opts.publicUrl),
          head: branch,
          base: conn.baseBranch,
          draft: conn.prMode === 'draft',
        }).catch((e) => {
          throw new RunFailure(e.message)
        })
      }
      lap('prMs')
      finish(runId, f, 'succeeded', { usage, timings, prUrl, outputTail })
    } catch (e) {
      lapFailed()
      if (e instanceof RunFailure) {
        finish(runId, f, e.kind, { usage, timings, prUrl, outputTail, reason: scrub(e.message, [token]) })
      } else {
        finish(runId, f, 'failed', { usage, timings, prUrl, outputTail, reason: scrub(`internal error: ${e instanceof Error ? e.message : String(e)}`, [token]) })
      }
    } finally {
      rmSync(ws, { recursive: true, force: true })
    }
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
        lifecycle.move(sqlite, f.id, 'pr_opened', { by: 'system', from: 'agent_running', prUrl: r.prUrl })
        // Reports in the cluster point at the same pull request.
        if (r.prUrl) runs.shareUrl(f.id, r.prUrl, now)
        lifecycle.record(scope, 'agent_run.succeeded', { runId, feedbackId: f.id, prUrl: r.prUrl, branch: `fixloop/${f.id}`, costUsd: r.usage.costUsd ?? 0 })
      } else {
        failItem(f.id, `agent run ${runId} ${status}: ${r.reason ?? ''}`, 'agent_running')
        if (status === 'guardrailed') lifecycle.record(scope, 'agent_run.guardrailed', { runId, feedbackId: f.id, guardrailReason: r.reason ?? '' })
        else lifecycle.record(scope, 'agent_run.failed', { runId, feedbackId: f.id, error: r.reason ?? '' })
      }
    })()
    log.info('agent run ended', { runId, feedbackId: f.id, status, prUrl: r.prUrl, reason: r.reason })
  }

  /** A minimal environment: no fixloop settings or secrets, only what the agent CLI needs. */
  function agentEnvironment(conn: RepoConnection, home: string, taskFile: string, resultFile: string): Record<string, string> {
    const out: Record<string, string> = {
      PATH: env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: home,
      LANG: 'C.UTF-8',
      TERM: 'dumb',
      CI: 'true',
      FIXLOOP_TASK_FILE: taskFile,
      FIXLOOP_RESULT_FILE: resultFile,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_TERMINAL_PROMPT: '0',
    }
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

    get activeCount(): number {
      return active.size
    },

    /** At start: runs left `running` by a crash or restart are failed, and their reports too. */
    recover(): number {
      const rows = runs.interrupted()
      const reason = 'interrupted: fixloop stopped during the run (crash or restart); queue the report again to retry'
      for (const r of rows) {
        sqlite.transaction(() => {
          if (!runs.failInterrupted(r.id, reason, clock.now())) return
          failItem(r.feedback_id, `agent run ${r.id} failed: ${reason}`, 'agent_running')
          lifecycle.record({ orgId: r.org_id, appId: r.app_id }, 'agent_run.failed', { runId: r.id, feedbackId: r.feedback_id, error: reason })
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

function zeroTimings(): Timings {
  return { prepareMs: 0, cloneMs: 0, agentMs: 0, pushMs: 0, prMs: 0 }
}

function definedOnly(u: AgentUsage): AgentUsage {
  return Object.fromEntries(Object.entries(u).filter(([, v]) => v !== undefined)) as AgentUsage
}

function tail(text: string, bytes: number): string {
  return text.length <= bytes ? text : text.slice(text.length - bytes)
}

function lastLines(text: string | null, n: number): string {
  return (text ?? '').trim().split('\n').slice(-n).join(' | ').slice(0, 1000) || '(no output)'
}

function taskInput(f: FeedbackRow): Parameters<typeof buildTask>[0] {
  const parse = <T>(json: string | null, fallback: T): T => {
    try {
      return json === null ? fallback : (JSON.parse(json) as T)
    } catch {
      return fallback
    }
  }
  const logs = parse<{ level: string; message: string }[]>(f.console_logs, [])
  const attachments = parse<{ key: string; kind: string; contentType: string }[]>(f.attachments, [])
  return {
    feedbackId: f.id,
    theme: f.theme,
    text: f.duplicate_count > 0 && f.consolidated_text ? f.consolidated_text : f.text,
    url: f.url,
    duplicateCount: f.duplicate_count,
    consoleErrors: logs.filter((l) => l.level === 'error').map((l) => l.message),
    componentTarget: parse(f.component_target, null),
    attachmentNames: attachments.map((a, i) => `${a.kind} ${i + 1} (${a.contentType})`),
  }
}

function prTitle(f: FeedbackRow): string {
  const subject = (f.theme ?? f.text.split('\n')[0]).replace(/\s+/g, ' ').trim()
  return `fixloop: ${subject.length > 90 ? subject.slice(0, 89) + '…' : subject}`
}

/** The PR body: what was fixed and where it came from; never the submitter's identity. */
function prBody(f: FeedbackRow, usage: AgentUsage, files: number, lines: number, publicUrl: string | undefined): string {
  const link = publicUrl ? `${publicUrl}/v1/feedback/${f.id}` : `feedback id \`${f.id}\``
  return [
    'Automated fix proposed by [fixloop](https://github.com) for a user report.',
    '',
    `- Report: ${link}${f.duplicate_count > 0 ? ` (a cluster of ${f.duplicate_count + 1} similar reports)` : ''}`,
    `- Theme: ${(f.theme ?? '').replace(/\s+/g, ' ').slice(0, 200) || '(none)'}`,
    `- Change: ${files} file${files === 1 ? '' : 's'}, ${lines} line${lines === 1 ? '' : 's'}; passed fixloop's guardrails`,
    usage.summary ? `\n**Agent summary**\n\n${usage.summary.slice(0, 2000)}` : '',
    '',
    'Please review carefully before merging.',
  ].join('\n')
}

/** A fingerprint of .git/config and .git/hooks, to tell whether the agent touched them. */
function gitMetaFingerprint(repo: string): Map<string, string> {
  const out = new Map<string, string>()
  const hash = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex')
  const config = join(repo, '.git', 'config')
  if (existsSync(config)) out.set('.git/config', hash(config))
  const hooks = join(repo, '.git', 'hooks')
  if (existsSync(hooks)) for (const h of readdirSync(hooks)) out.set(`.git/hooks/${h}`, hash(join(hooks, h)))
  return out
}

function diffMeta(before: Map<string, string>, after: Map<string, string>): string | null {
  for (const [k, v] of after) if (before.get(k) !== v) return k.startsWith('.git/hooks') ? `a git hook (${k})` : 'the git config (.git/config)'
  for (const k of before.keys()) if (!after.has(k)) return `git metadata (${k} removed)`
  return null
}
