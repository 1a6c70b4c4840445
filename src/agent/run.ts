/**
 * One agent run, phase by phase: prepare → clone → agent (+ verify) → judge → push → pull request.
 * Each phase is a small function over a shared RunContext; a phase that fails throws a RunFailure, and
 * `executeRun` turns the outcome into the run's result (the runner stores it). Everything that came from
 * the agent is scrubbed before it leaves this file.
 */
import { writeFileSync } from 'node:fs'
import type { RepoConnection } from '../modules/connections/service'
import { ChangeRefused, diffTrees, recordBaseline, stageWorktree, tamperedGit, commitTree, type Baseline } from './change'
import { execCommand } from './exec'
import { AUTH_USERNAMES, gitEnv, gitOk, gitWithToken, type GitAuth } from './git'
import { checkGuardrails, type DiffStats } from './guardrails'
import { openPullRequest } from './hosts'
import { prBody, prTitle } from './pr-text'
import { agentCommandLine, parseAgentOutput, parseResultFile, runUsage, type AgentUsage } from './presets'
import type { RunFeedbackRow } from '../modules/agent-runs/repo'
import { writeAccountFiles } from './agent-uid'
import { agentPaths, INSIDE, sandboxArgv, type SandboxOptions } from './sandbox'
import type { Scrub } from './scrubber'
import { buildTask, type TaskInput } from './task'
import { unsafeEntry } from './unsafe-entries'
import { handWorkspace, readAgentFile, removeWorkspace, type Workspace } from './workspace'
import { collectReportMedia, type MediaSource } from './report-media'
import { servableText } from '../sanitize/servable'
import { clip, clipEnd } from '../core/clip'

export interface Timings {
  prepareMs: number
  cloneMs: number
  agentMs: number
  pushMs: number
  prMs: number
}

export function zeroTimings(): Timings {
  return { prepareMs: 0, cloneMs: 0, agentMs: 0, pushMs: 0, prMs: 0 }
}

/** A failure with a message safe to store and show (scrubbed before it is stored). */
export class RunFailure extends Error {
  constructor(
    message: string,
    readonly kind: 'failed' | 'guardrailed' = 'failed',
  ) {
    super(message)
  }
}

export interface RunOutcome {
  status: 'succeeded' | 'failed' | 'guardrailed'
  usage: AgentUsage
  timings: Timings
  prUrl: string | null
  outputTail: string | null
  reason?: string
}

/** The phases whose end is an `agent_run.phase` event, in their order; one that did not run has none. */
export type RunPhase = 'prepare' | 'clone' | 'agent' | 'verify' | 'guardrails' | 'push' | 'pr'

export interface RunContext {
  runId: string
  f: RunFeedbackRow
  conn: RepoConnection
  branch: string
  ws: Workspace
  sandbox: SandboxOptions
  /** The agent's environment (host paths or sandbox paths already filled in). */
  agentEnv: Record<string, string>
  scrub: Scrub
  /** The literal values the scrubber masks (passed-through variables): no pushed change may hold one. */
  secrets: readonly string[]
  /** Aborted at shutdown, or with REPORT_REMOVED when the report was removed while the run worked. */
  signal: AbortSignal
  /**
   * Whether the run is still wanted: false once its report was removed (erased, or expired by a retention:
   * the removal deletes the run's row). Asked right before the push and before the pull request, so a
   * report erased while its agent worked never leaves the machine (cluster mode: whichever node erased it).
   */
  stillWanted(): Promise<boolean>
  publicUrl: string | undefined
  /** The pull request's host may be on a private address (FIXLOOP_GIT_HOST_ALLOW_PRIVATE). */
  gitHostAllowPrivate: boolean
  /** FIXLOOP_OUTBOUND_TIMEOUT in ms: opening the pull request gets twice it (agent/hosts.ts). */
  outboundTimeoutMs: number
  /** Where the report's screenshots and replay are read from (the attachments folder). */
  media: MediaSource
  /** Records the sandbox's PID while it runs (null when it ended). */
  onSandbox(pid: number | null): void
  /**
   * A phase ended after `ms` milliseconds; `timings` are the run's so far. Awaited before the next phase
   * starts (its event comes before the next one's), and must not throw: a phase's record is no reason to
   * fail the run.
   */
  onPhase?(phase: RunPhase, ms: number, timings: Timings): Promise<void>
  /**
   * A review iteration: the clone starts from the pull request's branch (`branch`, with the earlier fix),
   * the new commit goes on top of it (a fast-forward push, never forced) and no request is opened: the
   * open one, `prUrl`, updates itself.
   */
  review?: { prUrl: string | null }
}

const OUTPUT_TAIL_BYTES = 16 * 1024
const ORDER: (keyof Timings)[] = ['prepareMs', 'cloneMs', 'agentMs', 'pushMs', 'prMs']

/** Each phase's time is recorded when it ends; a failing phase gets the time it ran until then. */
class Laps {
  readonly timings = zeroTimings()
  private current = 0
  private phase = Date.now()
  lap(key: keyof Timings): void {
    const t = Date.now()
    this.timings[key] = t - this.phase
    this.phase = t
    this.current = ORDER.indexOf(key) + 1
  }
  failed(): void {
    if (this.current < ORDER.length) this.timings[ORDER[this.current]] = Date.now() - this.phase
  }
}

interface State {
  usage: AgentUsage
  outputTail: string | null
  prUrl: string | null
  gitEnv: Record<string, string>
  auth: GitAuth | null
  baseline?: Baseline
}

/** The abort reason of a run whose report was removed while it ran (AgentRunner's watch). */
export const REPORT_REMOVED = 'report removed'
const REMOVED_MESSAGE = 'stopped: the report was removed while its agent ran (erased, or expired by a retention); nothing was pushed'

function abortIfStopping(c: RunContext): void {
  if (!c.signal.aborted) return
  throw new RunFailure(c.signal.reason === REPORT_REMOVED ? REMOVED_MESSAGE : 'interrupted: fixloop was shut down during the run')
}

/** Before anything of the report leaves the machine (a push, a pull request): it must still be there. */
async function refuseIfRemoved(c: RunContext): Promise<void> {
  abortIfStopping(c)
  if (!(await c.stillWanted())) throw new RunFailure(REMOVED_MESSAGE)
}

/** The attachments folder (the report's and its cluster's images, read-only), then the task file listing them. */
async function prepare(c: RunContext, task: TaskInput): Promise<void> {
  const media = await collectReportMedia(c.media, c.f, c.ws.attachmentsDir)
  const full: TaskInput = { ...task, attachmentNames: media.notCopied, files: media.files, filesLeftOut: media.leftOut, timeline: media.timeline }
  writeFileSync(c.ws.taskFile, buildTask(full), { mode: 0o600 })
  if (c.sandbox.mode === 'bwrap' && c.sandbox.runAs !== undefined) {
    writeAccountFiles(c.ws, c.sandbox.runAs, INSIDE.home)
  }
}

/**
 * Two clones, neither sharing a file with the remote or with each other. `--no-local` makes git fetch a
 * path (or a symlink to one) through its transport like any URL: a local clone hard-links the remote's
 * object files (an agent rewriting its own objects would rewrite the remote's) and ignores `--depth` and
 * `--single-branch` (handing the agent every branch). fixloop's own bare clone, `base.git`, is where the
 * change is judged, committed and pushed from; the agent gets a copy of it, its `origin` set back to the
 * App's URL (no token in it).
 */
async function clone(c: RunContext, s: State): Promise<void> {
  // A review iteration works on the pull request's branch: its head is the commit the change is judged against.
  const base = c.review ? c.branch : c.conn.baseBranch
  await gitWithToken(['clone', '--bare', '--no-local', '--depth', '1', '--branch', base, '--single-branch', '--no-tags', '--', c.conn.gitUrl, c.ws.baseRepo], c.ws.root, s.gitEnv, s.auth, c.ws.credDir, 'clone', 300_000).catch((e) => {
    throw new RunFailure(e.message)
  })
  const commit = (await gitOk([`--git-dir=${c.ws.baseRepo}`, 'rev-parse', '--verify', '--end-of-options', `refs/heads/${base}^{commit}`], c.ws.root, s.gitEnv, 'read the base commit')).trim()
  await gitOk(['clone', '--no-local', '--no-tags', '--branch', base, '--', c.ws.baseRepo, c.ws.repo], c.ws.root, s.gitEnv, 'copy the clone for the agent', 300_000)
  await gitOk(['remote', 'set-url', 'origin', '--', c.conn.gitUrl], c.ws.repo, s.gitEnv, 'set origin')
  if (!c.review) await gitOk(['checkout', '-q', '-b', c.branch], c.ws.repo, s.gitEnv, 'create branch')
  s.baseline = await recordBaseline(c.ws.repo, s.gitEnv, c.branch, commit)
}

/** Runs a shell command as the agent: in the sandbox, with the agent's environment, timeout and bounded output. */
async function inSandbox(c: RunContext, command: string, maxOutputBytes?: number) {
  const argv = sandboxArgv(c.sandbox, c.ws, command)
  // An agent run as a uid of its own (fixloop is root) owns its workspace while it runs, and only then.
  const runAs = c.sandbox.mode === 'bwrap' ? c.sandbox.runAs : undefined
  if (runAs !== undefined) await handWorkspace(c.ws, runAs)
  try {
    return await execCommand(argv, {
      cwd: c.sandbox.mode === 'bwrap' ? c.ws.root : c.ws.repo,
      env: c.agentEnv,
      timeoutMs: c.conn.timeoutSeconds * 1000,
      signal: c.signal,
      maxOutputBytes,
      onSpawn: (pid) => c.onSandbox(pid),
    })
  } finally {
    c.onSandbox(null)
    if (runAs !== undefined) await handWorkspace(c.ws, process.getuid!())
  }
}

/**
 * C0 and C1 control characters, DEL, and the bidirectional overrides and isolates (which reorder what a
 * reader sees); the second keeps line feeds and tabs.
 */
const CONTROLS = /[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g
const CONTROLS_BUT_LINES = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g

async function runAgent(c: RunContext, s: State): Promise<void> {
  const ran = await inSandbox(c, agentCommandLine(c.conn.agentProvider, c.conn.model, c.conn.agentCommand), 256 * 1024)
  // Control characters dropped BEFORE the scrub: a key printed with \x01 or U+202E inside matched no
  // literal, and dropping them afterwards joined it back together in what was stored.
  s.outputTail = tail(c.scrub(ran.output.replace(CONTROLS_BUT_LINES, '')), OUTPUT_TAIL_BYTES)
  const result = readAgentFile(c.ws.resultFile)
  Object.assign(s.usage, definedOnly(runUsage(parseAgentOutput(c.conn.agentProvider, ran.stdout), result === null ? {} : parseResultFile(result))))
  // Stored and shown (the dashboard, the API, a terminal reading it): no control characters from the agent
  // but line breaks and tabs of the summary (an escape sequence would drive the terminal of whoever reads it).
  if (s.usage.summary) s.usage.summary = c.scrub(s.usage.summary.replace(CONTROLS_BUT_LINES, ''))
  if (s.usage.model) s.usage.model = c.scrub(s.usage.model.replace(CONTROLS, ''))
  abortIfStopping(c)
  if (ran.timedOut) throw new RunFailure(`agent timed out after ${c.conn.timeoutSeconds} s`)
  if (ran.code !== 0) throw new RunFailure(`agent exited with code ${ran.code}: ${lastLines(s.outputTail, 5)}`)
}

async function verify(c: RunContext, s: State): Promise<void> {
  if (!c.conn.verifyCommand) return
  const v = await inSandbox(c, c.conn.verifyCommand)
  const verifyTail = tail(c.scrub(v.output.replace(CONTROLS_BUT_LINES, '')), OUTPUT_TAIL_BYTES)
  s.outputTail = tail(`${s.outputTail}\n--- verify ---\n${verifyTail}`, OUTPUT_TAIL_BYTES)
  abortIfStopping(c)
  if (v.timedOut) throw new RunFailure(`verify command timed out after ${c.conn.timeoutSeconds} s`)
  if (v.code !== 0) throw new RunFailure(`verify command failed (exit ${v.code}): ${lastLines(verifyTail, 10)}`)
}

/**
 * The whole change against the base commit, or a guardrail refusal. Returns the judged tree and its diff,
 * both read in fixloop's own `base.git` (src/agent/change.ts): what is judged is what is pushed.
 */
async function judge(c: RunContext, s: State): Promise<{ tree: string; diff: DiffStats }> {
  const b = s.baseline!
  // Before any git command of fixloop's reads the clone: nothing there that git would follow or block on.
  const unsafe = await unsafeEntry(c.ws.repo)
  if (unsafe) throw new RunFailure(unsafe, 'guardrailed')
  const tampered = await tamperedGit(c.ws.repo, s.gitEnv, b)
  if (tampered) throw new RunFailure(tampered, 'guardrailed')
  const refused = (e: unknown) => {
    throw e instanceof ChangeRefused ? new RunFailure(e.message, 'guardrailed') : e
  }
  const tree = await stageWorktree(c.ws.baseRepo, c.ws.repo, s.gitEnv, c.ws.judgeIndex, b.base).catch(refused)
  const diff = await diffTrees(c.ws.baseRepo, c.ws.root, s.gitEnv, b.base, tree).catch(refused)
  const reason = checkGuardrails(diff, { maxFiles: c.conn.maxFiles, maxLines: c.conn.maxLines, denyPaths: c.conn.denyPaths, secrets: c.secrets })
  if (reason) throw new RunFailure(reason, 'guardrailed')
  return { tree, diff }
}

async function push(c: RunContext, s: State, tree: string, title: string): Promise<void> {
  const commit = await commitTree(c.ws.baseRepo, s.gitEnv, s.baseline!.base, tree, title, `Report ${c.f.id}`)
  // Pushed from base.git (never the agent's clone) to the connection's URL, hooks off.
  // A review iteration's commit follows the branch's head: pushed without --force, so a branch moved
  // meanwhile (the reviewer pushed) refuses it instead of losing their commit.
  await gitWithToken([`--git-dir=${c.ws.baseRepo}`, 'push', ...(c.review ? [] : ['--force']), '--no-verify', '--', c.conn.gitUrl, `${commit}:refs/heads/${c.branch}`], c.ws.root, s.gitEnv, s.auth, c.ws.credDir, 'push', 300_000).catch((e) => {
    throw new RunFailure(e.message)
  })
}

async function openRequest(c: RunContext, s: State, title: string, diff: DiffStats): Promise<void> {
  if (c.review) {
    s.prUrl = c.review.prUrl
    return
  }
  if (c.conn.prMode === 'branch' || c.conn.hostKind === 'none') return
  await refuseIfRemoved(c)
  const body = prBody(
    { feedbackId: c.f.id, theme: c.f.theme, duplicateCount: c.f.duplicate_count, usage: s.usage, files: diff.files.length, lines: diff.files.reduce((n, x) => n + x.added + x.deleted, 0), publicUrl: c.publicUrl },
    c.scrub,
  )
  s.prUrl = await openPullRequest(c.conn.hostKind, c.conn.hostApiUrl ?? '', c.conn.hostToken ?? '', c.conn.hostRepo, { title, body, head: c.branch, base: c.conn.baseBranch, draft: c.conn.prMode === 'draft' }, { allowPrivate: c.gitHostAllowPrivate, timeoutMs: c.outboundTimeoutMs }).catch((e) => {
    throw new RunFailure(e.message)
  })
}

/** Runs every phase; never throws. The workspace is removed whatever happened (off the event loop). */
export async function executeRun(c: RunContext, task: TaskInput): Promise<RunOutcome> {
  const laps = new Laps()
  // The phases of the events are finer than the run's five timings (verify within agentMs, the guardrails
  // within pushMs); each is timed from the previous one's end, its record's write left out.
  let phaseStart = Date.now()
  const ended = async (phase: RunPhase) => {
    await c.onPhase?.(phase, Date.now() - phaseStart, { ...laps.timings })
    phaseStart = Date.now()
  }
  const token = c.conn.hostToken
  const s: State = { usage: {}, outputTail: null, prUrl: null, gitEnv: { ...gitEnv(c.ws.gitHome), GIT_NO_REPLACE_OBJECTS: '1' }, auth: token ? { token, username: AUTH_USERNAMES[c.conn.hostKind], gitUrl: c.conn.gitUrl } : null }
  try {
    await prepare(c, task)
    laps.lap('prepareMs')
    await ended('prepare')
    await clone(c, s)
    laps.lap('cloneMs')
    await ended('clone')
    abortIfStopping(c)
    await runAgent(c, s)
    await ended('agent')
    if (c.conn.verifyCommand) {
      await verify(c, s)
      await ended('verify')
    }
    laps.lap('agentMs')
    const { tree, diff } = await judge(c, s)
    await ended('guardrails')
    const title = c.review ? `fixloop: review iteration for report ${c.f.id}` : prTitle(c.f.theme, c.f.text, c.scrub)
    await refuseIfRemoved(c)
    await push(c, s, tree, title)
    laps.lap('pushMs')
    await ended('push')
    await openRequest(c, s, title, diff)
    laps.lap('prMs')
    // Branch mode opens no request, nor does a review iteration (its request updates itself): no `pr` phase ran.
    if (!c.review && s.prUrl !== null) await ended('pr')
    return { status: 'succeeded', usage: s.usage, timings: laps.timings, prUrl: s.prUrl, outputTail: s.outputTail }
  } catch (e) {
    laps.failed()
    const failure = e instanceof RunFailure ? e : new RunFailure(`internal error: ${e instanceof Error ? e.message : String(e)}`)
    return { status: failure.kind, usage: s.usage, timings: laps.timings, prUrl: s.prUrl, outputTail: s.outputTail, reason: c.scrub(failure.message) }
  } finally {
    // Asynchronously: the agent decides how many files the workspace holds (a synchronous removal of
    // 100,000 files would stall the server for seconds). The attachments folder goes with it.
    await removeWorkspace(c.ws.root)
  }
}

/** The agent's environment: only what its CLI needs, paths as the agent sees them. No fixloop setting, no host token. */
export function agentEnvironment(sandbox: SandboxOptions, ws: Workspace, path: string | undefined, passed: Record<string, string>): Record<string, string> {
  const p = agentPaths(sandbox.mode, ws)
  return {
    PATH: path ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: p.home,
    TMPDIR: '/tmp',
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    CI: 'true',
    FIXLOOP_TASK_FILE: p.taskFile,
    FIXLOOP_RESULT_FILE: p.resultFile,
    // Always set: the folder exists (empty when the report has no images).
    FIXLOOP_ATTACHMENTS_DIR: p.attachmentsDir,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    ...passed,
  }
}

function definedOnly(u: AgentUsage): AgentUsage {
  return Object.fromEntries(Object.entries(u).filter(([, v]) => v !== undefined)) as AgentUsage
}

function tail(text: string, bytes: number): string {
  return clipEnd(text, bytes)
}

function lastLines(text: string | null, n: number): string {
  return clip((text ?? '').trim().split('\n').slice(-n).join(' | '), 1000) || '(no output)'
}

/** The task's input from the report row (the cluster's consolidated text for a lead with duplicates). */
export function taskInput(f: RunFeedbackRow): TaskInput {
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
    text: servableText(f.duplicate_count > 0 && f.consolidated_text ? f.consolidated_text : f.text, f),
    url: f.url,
    duplicateCount: f.duplicate_count,
    consoleErrors: Array.isArray(logs) ? logs.filter((l) => l?.level === 'error').map((l) => String(l.message)) : [],
    componentTarget: parse(f.component_target, null),
    attachmentNames: Array.isArray(attachments) ? attachments.map((a, i) => `${a.kind} ${i + 1} (${a.contentType})`) : [],
  }
}
