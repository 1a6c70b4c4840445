/**
 * Connecting an App to a repository: git URL, host, token (sealed at rest), agent and limits.
 * Used by the admin CLI (and the admin dashboard); the agent runner reads the decrypted connection when
 * a run starts. Bad input is ApiError invalid_argument; an App not in the Org is app_not_found.
 */
import { randomBytes } from 'node:crypto'
import type { Store } from '../../db/store'
import type { SecretBox } from '../../core/crypto'
import type { Clock } from '../../core/clock'
import { ApiError } from '../../core/errors'
import { changedDestination, secretRequiredAgain, type Destination } from '../../core/kept-secret'
import { denyPatternProblem } from '../../core/globs'
import { isoUtc } from '../../core/clock'
import type { Lifecycle } from '../../lifecycle/lifecycle'
import { type ConnectionRow } from './repo'
import { auditEntry, type ActedBy, type AuditEntry } from '../audit/entry'

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
  /** The secret the git host signs its webhooks with (decrypted), or null before one was generated. */
  webhookSecret: string | null
}

/** The route a git host sends its webhooks to, for an App (docs/agents.md "Following the pull request"). */
export const gitWebhookPath = (appId: string) => `/v1/git-hooks/${appId}`

/** A new webhook secret: 32 random bytes, base64url (no character a host's settings form would mangle). */
function newWebhookSecret(): string {
  return randomBytes(32).toString('base64url')
}

/** What this service is given: the repositories and values it uses (a Context has them all). */
export interface ConnectionsDeps {
  store: Pick<Store, 'connections'>
  box: SecretBox
  clock: Clock
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

/** A URL as compared for the kept-token rule: scheme and host lower-cased, default port dropped, no trailing slash. */
function urlKey(url: string): string {
  try {
    return new URL(url).href.replace(/\/+$/, '')
  } catch {
    return url
  }
}

/** The scheme and host a git remote is reached at (ssh for git@host:path, "local" for a path). */
function remoteOf(gitUrl: string): string {
  const scp = /^[^@/]+@([^:/]+):/.exec(gitUrl)
  if (scp) return `ssh://${scp[1].toLowerCase()}`
  try {
    const u = new URL(gitUrl)
    return `${u.protocol}//${u.host}`
  } catch {
    return 'local'
  }
}

/** Where a git host token is sent: the host's API (pull requests) and the git remote (clone, push). */
function tokenDestination(host: string, apiUrl: string | null, gitUrl: string): Destination {
  return { host, hostApiUrl: apiUrl === null ? null : urlKey(apiUrl), gitUrl: remoteOf(gitUrl) }
}

/**
 * The repository for the host API (CONTRACT): GitHub and Gitea name it `owner/repo`, the last two
 * segments of the git URL's path whatever comes before them (a mirror, a proxy prefix, a local path);
 * GitLab takes the whole path (groups and subgroups).
 */
export function hostRepoOf(gitUrl: string, kind: string): string {
  const path = repoPath(gitUrl)
  return kind === 'gitlab' ? path : path.split('/').filter((s) => s !== '').slice(-2).join('/')
}

/** "owner/repo" from https://host/owner/repo(.git), ssh://git@host/owner/repo.git or git@host:owner/repo.git. */
export function repoPath(gitUrl: string): string {
  const scp = /^[^@/]+@[^:/]+:(.+)$/.exec(gitUrl)
  let path = scp ? scp[1] : gitUrl
  if (!scp) {
    try {
      path = new URL(gitUrl).pathname
    } catch {
      // a local path: keep it
    }
  }
  return path.replace(/^\/+/, '').replace(/\/+$/, '').replace(/\.git$/, '')
}

const invalid = (message: string) => new ApiError('invalid_argument', undefined, message)

function validGitUrl(url: string): boolean {
  // git's `<transport>::<address>` form runs a remote helper (ext:: runs any command; fd:: reads a file
  // descriptor): never a repository URL, though `ext::sh@host:path` has the shape of git@host:path. git
  // refuses ext by default; this keeps it from ever reaching git. A leading '-' reads as an option.
  if (/^[A-Za-z][A-Za-z0-9+.-]*::/.test(url) || url.startsWith('-')) return false
  return /^(https?|ssh|git|file):\/\//.test(url) || /^[^@\s]+@[^:\s]+:\S+$/.test(url) || url.startsWith('/')
}

function check(input: ConnectionInput): void {
  if (!validGitUrl(input.gitUrl)) throw invalid(`--git-url must be an https://, ssh://, git@host:path, file:// URL or an absolute path, got "${input.gitUrl}"`)
  if (/^https?:\/\/[^/]*@/.test(input.gitUrl)) throw invalid('--git-url must not carry credentials; pass the token with --host-token-file')
  if (input.baseBranch !== undefined && !/^[A-Za-z0-9._/-]{1,200}$/.test(input.baseBranch)) throw invalid(`--base-branch is not a valid branch name: "${input.baseBranch}"`)
  if (input.agent === 'command' && !input.agentCommand?.trim()) throw invalid('--agent command needs --agent-command "CMD"')
  if (input.agentCommand !== undefined && input.agent !== undefined && input.agent !== 'command') throw invalid('--agent-command is only for --agent command')
  if (input.hostRepo !== undefined && !/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)+$/.test(input.hostRepo)) throw invalid(`--host-repo must look like owner/name, got "${input.hostRepo}"`)
  for (const glob of input.denyPaths ?? []) {
    const problem = denyPatternProblem(glob)
    if (problem) throw invalid(`--deny-paths: ${problem}`)
  }
  if ((input.denyPaths?.length ?? 0) > 200) throw invalid('--deny-paths: at most 200 patterns')
  if (input.hostApiUrl !== undefined && !URL.canParse(input.hostApiUrl)) throw invalid(`--host-api-url must be a URL, got "${input.hostApiUrl}"`)
  // As --git-url: the token goes in its own file. A user:password here would be quoted by every error that
  // names the host's address (a run's failure, its event, a webhook, Slack).
  if (input.hostApiUrl !== undefined) {
    const api = new URL(input.hostApiUrl)
    if (api.username || api.password) throw invalid('--host-api-url must not carry credentials; pass the token with --host-token-file')
  }
  const positive = (v: number | undefined, flag: string, max: number) => {
    if (v !== undefined && (!Number.isFinite(v) || v <= 0 || v > max)) throw invalid(`${flag} must be a positive number up to ${max}, got "${v}"`)
  }
  positive(input.timeoutSeconds, '--timeout-seconds', 24 * 3600)
  positive(input.maxFiles, '--max-files', 10_000)
  positive(input.maxLines, '--max-lines', 1_000_000)
  positive(input.runsPerDay, '--runs-per-day', 10_000)
  positive(input.maxCostUsdPerMonth, '--max-cost-usd-per-month', 1_000_000)
  if ((input.host ?? 'none') !== 'none' && (input.prMode ?? CONNECTION_DEFAULTS.prMode) !== 'branch' && !input.hostToken) {
    throw invalid(`--host ${input.host} needs an access token: --host-token-file PATH (or --pr-mode branch)`)
  }
}

export function createConnectionsService(ctx: ConnectionsDeps, lifecycle: Lifecycle) {
  const { box, clock } = ctx
  const repo = ctx.store.connections
  /** The audit rows of a change made by `by` (none when the caller records nobody, e.g. a test fixture). */
  const note = (by: ActedBy | undefined, orgId: string, action: string, targetId: string, data?: Record<string, unknown>): AuditEntry[] => {
    const e = auditEntry(by, orgId, action, targetId, data)
    return e ? [e] : []
  }

  async function requireApp(orgId: string, appId: string): Promise<void> {
    if (!(await repo.appInOrg(orgId, appId))) throw new ApiError('app_not_found', { appId }, `unknown app: ${appId}`)
  }

  /** The connection with the token decrypted (the runner's, and the kept-token rule's). */
  async function load(appId: string): Promise<RepoConnection | null> {
    const row = await repo.get(appId)
    if (!row) return null
    return {
      ...decode(row),
      hostToken: row.hostTokenEnc ? box.open(row.hostTokenEnc).toString('utf8') : null,
      webhookSecret: row.webhookSecretEnc ? box.open(row.webhookSecretEnc).toString('utf8') : null,
    }
  }

  /** A stored row as the runner's connection, without decrypting the token. */
  function decode(row: ConnectionRow): Omit<RepoConnection, 'hostToken' | 'webhookSecret'> {
    return {
      appId: row.appId,
      gitUrl: row.gitUrl,
      baseBranch: row.baseBranch,
      hostKind: row.hostKind as HostKind,
      hostApiUrl: row.hostApiUrl,
      hostRepo: row.hostRepo ?? hostRepoOf(row.gitUrl, row.hostKind),
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
  function view(row: ConnectionRow) {
    const { hostKind, agentProvider, ...rest } = decode(row)
    return { ...rest, host: hostKind, agent: agentProvider, hasHostToken: row.hostTokenEnc !== null, webhookPath: gitWebhookPath(row.appId), hasWebhookSecret: row.webhookSecretEnc !== null, updatedAt: isoUtc(row.updatedAt) }
  }

  return {
    /**
     * Creates or replaces the App's connection, queues the runs of reports that waited for one and records
     * `app.repo_connected` by `by`, in one transaction. The token is sealed; the result never carries it.
     */
    async connect(orgId: string, appId: string, input: ConnectionInput, by?: ActedBy) {
      await requireApp(orgId, appId)
      check(input)
      const host = input.host ?? 'none'
      const now = clock.now()
      // The webhook secret is made once, at the first connection, and kept when the connection is
      // replaced (the host keeps signing with it); `rotateWebhookSecret` replaces it. Shown only when made.
      const kept = (await repo.get(appId))?.webhookSecretEnc ?? null
      const fresh = kept === null ? newWebhookSecret() : null
      const row = {
        appId,
        gitUrl: input.gitUrl,
        baseBranch: input.baseBranch ?? CONNECTION_DEFAULTS.baseBranch,
        hostKind: host,
        hostApiUrl: input.hostApiUrl?.replace(/\/+$/, '') ?? defaultApiUrl(host, input.gitUrl),
        hostRepo: input.hostRepo ?? null,
        hostTokenEnc: input.hostToken ? box.seal(Buffer.from(input.hostToken, 'utf8')) : null,
        webhookSecretEnc: fresh === null ? kept : box.seal(Buffer.from(fresh, 'utf8')),
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
      const audit = note(by, orgId, 'app.repo_connected', appId, { gitUrl: row.gitUrl, host: row.hostKind, agent: row.agentProvider })
      const stored = view(await repo.connect(row, audit))
      return fresh === null ? stored : { ...stored, webhookSecret: fresh }
    },

    /**
     * A new webhook secret for the App's connection, shown once (the result's `webhookSecret`): set it in
     * the git host's webhook settings. Records `app.webhook_secret_rotated`. not_found without a connection.
     */
    async rotateWebhookSecret(orgId: string, appId: string, by?: ActedBy): Promise<{ appId: string; webhookPath: string; webhookSecret: string }> {
      await requireApp(orgId, appId)
      const secret = newWebhookSecret()
      if (!(await repo.setWebhookSecret(appId, box.seal(Buffer.from(secret, 'utf8')), note(by, orgId, 'app.webhook_secret_rotated', appId)))) {
        throw new ApiError('not_found', { appId }, `app ${appId} has no repository connected (fixloop app connect-repo)`)
      }
      return { appId, webhookPath: gitWebhookPath(appId), webhookSecret: secret }
    },

    /** The App's connection as an operator sees it (no token), or null when it has none. */
    /** Apps with a repository connected, over every Org (serve refuses to start without a sandbox then). */
    count: (): Promise<number> => repo.count(),

    async get(orgId: string, appId: string) {
      await requireApp(orgId, appId)
      const row = await repo.get(appId)
      return row ? view(row) : null
    },

    /** Removes the App's connection, recording `app.repo_disconnected` by `by` in the same transaction (nothing when it had none). */
    async disconnect(orgId: string, appId: string, by?: ActedBy): Promise<{ appId: string; disconnected: boolean }> {
      await requireApp(orgId, appId)
      return { appId, disconnected: await repo.remove(appId, note(by, orgId, 'app.repo_disconnected', appId)) }
    },

    /**
     * The stored host token for an update that omits it (the dashboard's form leaves it blank), or
     * undefined when none is stored. Kept only while it would go where it was given for: the same host
     * kind, API URL and git remote (core/kept-secret.ts); otherwise 400 invalid_argument asking for it.
     */
    async keptHostToken(appId: string, input: ConnectionInput): Promise<string | undefined> {
      const stored = await load(appId)
      if (!stored?.hostToken) return undefined
      const host = input.host ?? 'none'
      const apiUrl = input.hostApiUrl?.replace(/\/+$/, '') ?? defaultApiUrl(host, input.gitUrl)
      const moved = changedDestination(tokenDestination(stored.hostKind, stored.hostApiUrl, stored.gitUrl), tokenDestination(host, apiUrl, input.gitUrl))
      if (moved.length > 0) throw invalid(secretRequiredAgain('hostToken', moved))
      return stored.hostToken
    },

    /** For the runner only: the connection with the token decrypted. */
    load,
  }
}
export type ConnectionsService = ReturnType<typeof createConnectionsService>
