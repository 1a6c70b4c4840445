/**
 * Connecting an App to a repository: git URL, host, token (sealed at rest), agent and limits.
 * Used by the admin CLI; the agent runner reads the decrypted connection when a run starts.
 */
import { eq } from 'drizzle-orm'
import type { Context } from '../context'
import { repoConnections } from '../db/schema'
import { AdminError } from '../modules/tenants/service'
import { isoUtc } from '../core/clock'
import { and, isNull } from 'drizzle-orm'
import { apps } from '../db/schema'
import { repoPath } from './hosts'

export const HOST_KINDS = ['github', 'gitea', 'gitlab', 'none'] as const
export const AGENT_PROVIDERS = ['claude-code', 'codex', 'aider', 'command'] as const
export const PR_MODES = ['ready', 'draft', 'branch'] as const
export type HostKind = (typeof HOST_KINDS)[number]
export type AgentProvider = (typeof AGENT_PROVIDERS)[number]
export type PrMode = (typeof PR_MODES)[number]

/** Defaults, documented in docs/agents.md. */
export const CONNECTION_DEFAULTS = {
  baseBranch: 'main',
  timeoutSeconds: 900,
  prMode: 'ready' as PrMode,
  maxFiles: 20,
  maxLines: 1000,
  runsPerDay: 20,
  maxCostUsdPerMonth: 50,
}

export interface ConnectionInput {
  gitUrl: string
  baseBranch?: string
  host?: HostKind
  hostApiUrl?: string
  /** owner/name on the host when it differs from the git URL's path (a mirror, a local remote). */
  hostRepo?: string
  hostToken?: string
  agent?: AgentProvider
  agentCommand?: string
  model?: string
  timeoutSeconds?: number
  prMode?: PrMode
  verifyCommand?: string
  maxFiles?: number
  maxLines?: number
  denyPaths?: string[]
  runsPerDay?: number
  maxCostUsdPerMonth?: number
}

/** A connection as the runner uses it: the token decrypted, in memory only. */
export interface RepoConnection {
  appId: string
  gitUrl: string
  baseBranch: string
  hostKind: HostKind
  hostApiUrl: string | null
  hostRepo: string
  hostToken: string | null
  agentProvider: AgentProvider
  agentCommand: string | null
  model: string | null
  timeoutSeconds: number
  prMode: PrMode
  verifyCommand: string | null
  maxFiles: number
  maxLines: number
  denyPaths: string[]
  runsPerDay: number
  maxCostUsdPerMonth: number
}

/** Where each host's REST API lives when --host-api-url is not given. */
export function defaultApiUrl(host: HostKind, gitUrl: string): string | null {
  if (host === 'none') return null
  if (host === 'github') {
    const h = hostOf(gitUrl)
    return h === 'github.com' ? 'https://api.github.com' : `https://${h}/api/v3`
  }
  return `https://${hostOf(gitUrl)}${host === 'gitea' ? '/api/v1' : '/api/v4'}`
}

function hostOf(gitUrl: string): string {
  const scp = /^[^@/]+@([^:/]+):/.exec(gitUrl)
  if (scp) return scp[1]
  try {
    return new URL(gitUrl).host
  } catch {
    return 'localhost'
  }
}

function validGitUrl(url: string): boolean {
  return /^(https?|ssh|git|file):\/\//.test(url) || /^[^@\s]+@[^:\s]+:\S+$/.test(url) || url.startsWith('/')
}

function check(input: ConnectionInput): void {
  if (!validGitUrl(input.gitUrl)) throw new AdminError(`--git-url must be an https://, ssh://, git@host:path, file:// URL or an absolute path, got "${input.gitUrl}"`)
  if (/^https?:\/\/[^/]*@/.test(input.gitUrl)) throw new AdminError('--git-url must not carry credentials; pass the token with --host-token-file')
  if (input.baseBranch !== undefined && !/^[A-Za-z0-9._/-]{1,200}$/.test(input.baseBranch)) throw new AdminError(`--base-branch is not a valid branch name: "${input.baseBranch}"`)
  if (input.agent === 'command' && !input.agentCommand?.trim()) throw new AdminError('--agent command needs --agent-command "CMD"')
  if (input.agentCommand !== undefined && input.agent !== undefined && input.agent !== 'command') throw new AdminError('--agent-command is only for --agent command')
  if (input.hostRepo !== undefined && !/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)+$/.test(input.hostRepo)) throw new AdminError(`--host-repo must look like owner/name, got "${input.hostRepo}"`)
  if (input.hostApiUrl !== undefined && !URL.canParse(input.hostApiUrl)) throw new AdminError(`--host-api-url must be a URL, got "${input.hostApiUrl}"`)
  const positive = (v: number | undefined, flag: string, max: number) => {
    if (v !== undefined && (!Number.isFinite(v) || v <= 0 || v > max)) throw new AdminError(`${flag} must be a positive number up to ${max}, got "${v}"`)
  }
  positive(input.timeoutSeconds, '--timeout-seconds', 24 * 3600)
  positive(input.maxFiles, '--max-files', 10_000)
  positive(input.maxLines, '--max-lines', 1_000_000)
  positive(input.runsPerDay, '--runs-per-day', 10_000)
  positive(input.maxCostUsdPerMonth, '--max-cost-usd-per-month', 1_000_000)
  if ((input.host ?? 'none') !== 'none' && (input.prMode ?? CONNECTION_DEFAULTS.prMode) !== 'branch' && !input.hostToken) {
    throw new AdminError(`--host ${input.host} needs an access token: --host-token-file PATH (or --pr-mode branch)`)
  }
}

export function createConnectionsService(ctx: Context) {
  const { db, box, clock } = ctx

  function requireApp(appId: string) {
    const app = db.select({ id: apps.id }).from(apps).where(and(eq(apps.id, appId), isNull(apps.deletedAt))).get()
    if (!app) throw new AdminError(`unknown app: ${appId}`)
  }

  /** A stored row as the runner's connection, without decrypting the token. */
  function decode(row: typeof repoConnections.$inferSelect): Omit<RepoConnection, 'hostToken'> {
    return {
      appId: row.appId,
      gitUrl: row.gitUrl,
      baseBranch: row.baseBranch,
      hostKind: row.hostKind as HostKind,
      hostApiUrl: row.hostApiUrl,
      hostRepo: row.hostRepo ?? repoPath(row.gitUrl),
      agentProvider: row.agentProvider as AgentProvider,
      agentCommand: row.agentCommand,
      model: row.model,
      timeoutSeconds: row.timeoutSeconds,
      prMode: row.prMode as PrMode,
      verifyCommand: row.verifyCommand,
      maxFiles: row.maxFiles,
      maxLines: row.maxLines,
      denyPaths: JSON.parse(row.denyPaths) as string[],
      runsPerDay: row.runsPerDay,
      maxCostUsdPerMonth: row.maxCostUsdPerMonth,
    }
  }

  /** What the CLI prints: the connection with CLI flag names, and only whether a token is stored. */
  function view(row: typeof repoConnections.$inferSelect) {
    const { hostKind, agentProvider, ...rest } = decode(row)
    return { ...rest, host: hostKind, agent: agentProvider, hasHostToken: row.hostTokenEnc !== null, updatedAt: isoUtc(row.updatedAt) }
  }

  return {
    /** Creates or replaces the App's connection. The token is sealed; the result never carries it. */
    connect(appId: string, input: ConnectionInput) {
      requireApp(appId)
      check(input)
      const host = input.host ?? 'none'
      const now = clock.now()
      const row = {
        appId,
        gitUrl: input.gitUrl,
        baseBranch: input.baseBranch ?? CONNECTION_DEFAULTS.baseBranch,
        hostKind: host,
        hostApiUrl: input.hostApiUrl?.replace(/\/+$/, '') ?? defaultApiUrl(host, input.gitUrl),
        hostRepo: input.hostRepo ?? null,
        hostTokenEnc: input.hostToken ? box.seal(Buffer.from(input.hostToken, 'utf8')) : null,
        agentProvider: input.agent ?? 'claude-code',
        agentCommand: input.agentCommand ?? null,
        model: input.model ?? null,
        timeoutSeconds: input.timeoutSeconds ?? CONNECTION_DEFAULTS.timeoutSeconds,
        prMode: input.prMode ?? (host === 'none' ? 'branch' : CONNECTION_DEFAULTS.prMode),
        verifyCommand: input.verifyCommand ?? null,
        maxFiles: input.maxFiles ?? CONNECTION_DEFAULTS.maxFiles,
        maxLines: input.maxLines ?? CONNECTION_DEFAULTS.maxLines,
        denyPaths: JSON.stringify(input.denyPaths ?? []),
        runsPerDay: input.runsPerDay ?? CONNECTION_DEFAULTS.runsPerDay,
        maxCostUsdPerMonth: input.maxCostUsdPerMonth ?? CONNECTION_DEFAULTS.maxCostUsdPerMonth,
        createdAt: now,
        updatedAt: now,
      }
      db.insert(repoConnections)
        .values(row)
        .onConflictDoUpdate({ target: repoConnections.appId, set: { ...row, createdAt: undefined } })
        .run()
      // Reports that were waiting in `queued` for a repository get their run now (the worker polls jobs).
      ctx.sqlite
        .query(
          `INSERT INTO jobs (kind, feedback_id, run_after, created_at)
           SELECT 'agent', f.id, ?1, ?1 FROM feedback f
           WHERE f.app_id = ?2 AND f.status = 'queued' AND f.duplicate_of_id IS NULL
             AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.kind = 'agent' AND j.feedback_id = f.id)`,
        )
        .run(now, appId)
      return view(db.select().from(repoConnections).where(eq(repoConnections.appId, appId)).get()!)
    },

    disconnect(appId: string): { appId: string; disconnected: boolean } {
      requireApp(appId)
      const res = db.delete(repoConnections).where(eq(repoConnections.appId, appId)).run() as unknown as { changes: number }
      return { appId, disconnected: res.changes > 0 }
    },

    /** The connection as the CLI and the dashboard show it (no token), or null. */
    get(appId: string) {
      const row = db.select().from(repoConnections).where(eq(repoConnections.appId, appId)).get()
      return row ? view(row) : null
    },

    /** For the runner only: the connection with the token decrypted. */
    load(appId: string): RepoConnection | null {
      const row = db.select().from(repoConnections).where(eq(repoConnections.appId, appId)).get()
      if (!row) return null
      return { ...decode(row), hostToken: row.hostTokenEnc ? box.open(row.hostTokenEnc).toString('utf8') : null }
    },
  }
}
export type ConnectionsService = ReturnType<typeof createConnectionsService>
