/**
 * Issue-tracker connections and their webhook (docs/trackers.md): connect an App to GitHub Issues,
 * GitLab, Gitea/Forgejo (Jira Cloud and Linear through their adapters), the token checked with the
 * tracker (`whoAmI`) and sealed with the webhook secret, the connection as the dashboard shows it (health
 * included, never a secret), a lead pushed by hand, the tracker issue of reports for their views, and
 * the tracker's deliveries: signature first, then the news applied (repo.applyNews). Tracker calls never
 * run inside a transaction; a failing tracker never blocks intake or a status move.
 */
import { randomBytes } from 'node:crypto'
import type { Store } from '../../db/store'
import type { Config } from '../../config'
import type { SecretBox } from '../../core/crypto'
import type { Clock } from '../../core/clock'
import { isoUtc } from '../../core/clock'
import { ApiError } from '../../core/errors'
import { parseDeliveryJson } from '../../core/nul'
import { changedDestination, secretRequiredAgain } from '../../core/kept-secret'
import { refusedAddress, resolveHost, type CheckedAddress } from '../../core/address-guard'
import { TRACKER_KINDS, TrackerError, type TrackerKind, type TrackerTarget } from '../../trackers/adapter'
import { adapterFor, DEFAULT_API_URLS } from '../../trackers/registry'
import type { Lifecycle } from '../../lifecycle/lifecycle'
import { auditEntry, type ActedBy, type AuditEntry } from '../audit/entry'
import { hasUserinfo } from '../webhooks/ssrf'
import { allowPrivateHint } from '../../core/process-role'
import { actionFor, MAPPED_ACTIONS, type StateMap } from './mapping'
import { linkFollows, type NewsAction, type TrackerConnectionRow, type TrackerIssueRow } from './repo'
import { deliveryKeys } from '../git-hooks/repo'

export const SEVERITY_CHOICES = ['low', 'medium', 'high', 'unset'] as const
export type SeverityChoice = (typeof SEVERITY_CHOICES)[number]
export const STATE_MAP_MAX = 50

export interface PushRules {
  minDuplicates: number | null
  onAwaitingManual: SeverityChoice[]
}

export interface TrackerInput {
  kind: TrackerKind
  apiUrl?: string
  project: string
  token?: string
  account?: string
  /** A signing secret the tracker made (Linear's webhook form): replaces fixloop's own. */
  webhookSecret?: string
  stateMap?: Record<string, NewsAction>
  rules?: { minDuplicates: number | null; onAwaitingManual: SeverityChoice[] }
}

export interface TrackerView {
  kind: TrackerKind
  apiUrl: string
  project: string
  account: string | null
  actor: string | null
  webhookUrl: string
  stateMap: StateMap
  rules: PushRules
  health: { state: 'ok' | 'failing'; lastError: string | null; lastErrorAt: string | null; retryAt: string | null; pending: number }
  createdAt: string
  updatedAt: string
}

export interface TrackerIssueView {
  kind: TrackerKind
  /** The project the issue is in (the connection's when the link was made; null when unknown, from before links kept it). */
  project: string | null
  key: string | null
  url: string | null
  state: string | null
  syncState: 'pending' | 'synced' | 'failing' | 'deleted'
  lastError: string | null
  syncedAt: string | null
}

/** The route a tracker sends its webhooks to, for an App. */
export const trackerWebhookPath = (appId: string) => `/v1/tracker-hooks/${appId}`

const DEFAULT_RULES: PushRules = { minDuplicates: null, onAwaitingManual: [] }
const invalid = (message: string) => new ApiError('invalid_argument', undefined, message)
const unauthenticated = () => new ApiError('invalid_authorization', undefined, "The webhook signature (or GitLab token) is missing or does not match this App's tracker webhook secret.")
const newSecret = () => randomBytes(32).toString('base64url')

/** What this service is given: the repositories and values it uses (a Context has them all). */
export interface TrackersDeps {
  store: Pick<Store, 'trackers' | 'apps'>
  box: SecretBox
  clock: Clock
  config: Pick<Config, 'trackerAllowPrivate' | 'publicUrl' | 'outboundTimeoutMs'>
}

export function parseStateMap(text: string): StateMap {
  try {
    const v = JSON.parse(text) as unknown
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as StateMap) : {}
  } catch {
    return {}
  }
}
export function parseRules(text: string): PushRules {
  try {
    const v = JSON.parse(text) as Partial<PushRules>
    return { minDuplicates: typeof v.minDuplicates === 'number' ? v.minDuplicates : null, onAwaitingManual: Array.isArray(v.onAwaitingManual) ? v.onAwaitingManual : [] }
  } catch {
    return DEFAULT_RULES
  }
}

export function issueView(row: TrackerIssueRow): TrackerIssueView {
  return {
    kind: row.kind as TrackerKind,
    project: row.project === '' ? null : row.project,
    key: row.issue_key,
    url: row.issue_url,
    state: row.state_name,
    syncState: row.sync_state,
    lastError: row.last_error,
    syncedAt: row.synced_at === null ? null : isoUtc(row.synced_at),
  }
}

/** Syntax of a project per kind (what each tracker's API takes in its path). */
function checkProject(kind: TrackerKind, project: string): void {
  const ok =
    kind === 'github' || kind === 'gitea'
      ? /^[A-Za-z0-9._-]{1,100}\/[A-Za-z0-9._-]{1,100}$/.test(project)
      : kind === 'gitlab'
        ? /^([1-9]\d{0,15}|[A-Za-z0-9._-]{1,255}(\/[A-Za-z0-9._-]{1,255}){1,20})$/.test(project)
        : kind === 'jira'
          ? /^[A-Z][A-Z0-9_]{0,99}$/.test(project)
          : /^[A-Za-z0-9-]{1,100}$/.test(project)
  if (!ok) {
    const shape = kind === 'github' || kind === 'gitea' ? 'owner/repo' : kind === 'gitlab' ? 'group/project (or its numeric id)' : kind === 'jira' ? 'a project key (PROJ)' : 'a team id'
    throw invalid(`project must be ${shape} for ${kind}, got "${project.slice(0, 100)}"`)
  }
}

/** The API URL's syntax: absolute http(s), no credentials, no query or fragment; trailing slashes dropped. */
function checkApiUrl(text: string): string {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw invalid('apiUrl must be an absolute http(s) URL')
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || text.length > 2048) throw invalid('apiUrl must be an absolute http(s) URL of at most 2048 characters')
  if (url.username || url.password || hasUserinfo(text)) throw invalid('apiUrl must not carry credentials: give the token in `token`')
  if (url.search || url.hash) throw invalid('apiUrl must not have a query or a fragment')
  return text.replace(/\/+$/, '')
}

/** An API URL as compared for the kept-token rule: the parsed form (host lower-cased, default port dropped), no trailing slash. */
const urlKey = (url: string) => new URL(url).href.replace(/\/+$/, '')

export function createTrackersService(ctx: TrackersDeps, lifecycle: Lifecycle) {
  const { box, clock, config } = ctx
  const repo = ctx.store.trackers
  const apps = ctx.store.apps
  const note = (by: ActedBy | undefined, orgId: string, action: string, targetId: string, data?: Record<string, unknown>): AuditEntry[] => {
    const e = auditEntry(by, orgId, action, targetId, data)
    return e ? [e] : []
  }
  async function liveApp(orgId: string, appId: string) {
    if (!(await apps.getForOrg(orgId, appId))) throw new ApiError('app_not_found', { appId })
  }

  /**
   * The tracker's address rule (src/core/address-guard.ts, shared with webhooks and SMTP): every address
   * the API host resolves to must be public, unless FIXLOOP_TRACKER_ALLOW_PRIVATE=1. Checked at connect
   * and before every sync; a refusal is a TrackerError (the sync retries it, the health shows it). The
   * checked addresses are what the calls connect to (TrackerTarget.addresses): no second DNS answer.
   */
  async function guard(apiUrl: string): Promise<CheckedAddress[]> {
    const host = new URL(apiUrl).hostname.replace(/^\[|\]$/g, '')
    const addresses = await resolveHost(host)
    if (addresses.length === 0) throw new TrackerError('unreachable', `the tracker host ${host} does not resolve`)
    const bad = refusedAddress(addresses, config.trackerAllowPrivate)
    if (bad) throw new TrackerError('rejected', `refused by the tracker address guard: ${host} resolves to ${bad.address}, a private, loopback, link-local or reserved address (${allowPrivateHint('FIXLOOP_TRACKER_ALLOW_PRIVATE')})`)
    return addresses
  }

  /** The connection as one call's target: the token unsealed, the address checked, the deadline (FIXLOOP_OUTBOUND_TIMEOUT). */
  async function targetOf(conn: TrackerConnectionRow): Promise<TrackerTarget> {
    const addresses = await guard(conn.api_url)
    return { kind: conn.kind as TrackerKind, apiUrl: conn.api_url, project: conn.project, token: box.open(conn.token_sealed).toString('utf8'), ...(conn.account ? { account: conn.account } : {}), addresses, timeoutMs: config.outboundTimeoutMs }
  }

  async function view(row: TrackerConnectionRow, baseUrl: string): Promise<TrackerView> {
    const pending = await repo.pendingCount(row.app_id)
    return {
      kind: row.kind as TrackerKind,
      apiUrl: row.api_url,
      project: row.project,
      account: row.account,
      actor: row.actor,
      webhookUrl: `${config.publicUrl ?? baseUrl}${trackerWebhookPath(row.app_id)}`,
      stateMap: parseStateMap(row.state_map),
      rules: parseRules(row.rules),
      health: {
        state: row.last_error === null ? 'ok' : 'failing',
        lastError: row.last_error,
        lastErrorAt: row.last_error_at === null ? null : isoUtc(row.last_error_at),
        retryAt: row.retry_at === null ? null : isoUtc(row.retry_at),
        pending,
      },
      createdAt: isoUtc(row.created_at),
      updatedAt: isoUtc(row.updated_at),
    }
  }

  return {
    repo,
    targetOf,

    /**
     * Connects (or reconnects) the App's tracker: the token checked with the tracker (400 invalid_argument
     * with the tracker's answer, never the token), sealed with a webhook secret made on the first connect
     * (kept on a reconnect; shown only when made). Records `app.tracker_connected`.
     * `confirmRetarget`: called once the input is checked, before the tracker is contacted, when the
     * connection is new or would send issues elsewhere or as someone else (kind, apiUrl, project, account,
     * token) or takes a webhook secret (whoever knows it can move reports); the route asks a dashboard
     * session there for a fresh re-authentication. Changing only stateMap or rules is not asked about.
     */
    async connect(orgId: string, appId: string, input: TrackerInput, baseUrl: string, by?: ActedBy, confirmRetarget?: () => Promise<void>): Promise<{ tracker: TrackerView; webhookSecret?: string }> {
      await liveApp(orgId, appId)
      if (!(TRACKER_KINDS as readonly string[]).includes(input.kind)) throw invalid(`kind must be one of ${TRACKER_KINDS.join(', ')}`)
      const adapter = adapterFor(input.kind)
      if (!adapter) throw invalid(`${input.kind} is not available on this server`)
      checkProject(input.kind, input.project)
      const defaultUrl = DEFAULT_API_URLS[input.kind]
      if (input.apiUrl === undefined && defaultUrl === null) throw invalid(`apiUrl is required for ${input.kind} (${input.kind === 'gitlab' ? 'https://HOST/api/v4' : input.kind === 'gitea' ? 'https://HOST/api/v1' : 'https://SITE.atlassian.net'})`)
      const apiUrl = checkApiUrl(input.apiUrl ?? defaultUrl!)
      if (input.kind === 'jira' && !input.account) throw invalid('account (the e-mail of the API token) is required for jira')
      if (input.account !== undefined && (input.account.length > 320 || /[\s\u0000-\u001f]/.test(input.account))) throw invalid('account must be one e-mail address')
      const stateMap: StateMap = {}
      const entries = Object.entries(input.stateMap ?? {})
      if (entries.length > STATE_MAP_MAX) throw invalid(`stateMap takes at most ${STATE_MAP_MAX} entries`)
      for (const [name, action] of entries) {
        if (name.trim() === '' || name.length > 100) throw invalid('stateMap keys are tracker state names of 1-100 characters')
        if (!(MAPPED_ACTIONS as readonly string[]).includes(action)) throw invalid(`stateMap values are ${MAPPED_ACTIONS.join(', ')}`)
        stateMap[name.trim().toLowerCase()] = action
      }
      const rules: PushRules = input.rules ? { minDuplicates: input.rules.minDuplicates, onAwaitingManual: [...new Set(input.rules.onAwaitingManual)] } : DEFAULT_RULES
      if (rules.minDuplicates !== null && (!Number.isInteger(rules.minDuplicates) || rules.minDuplicates < 1 || rules.minDuplicates > 1_000_000)) throw invalid('rules.minDuplicates must be an integer from 1 to 1000000, or null')
      for (const s of rules.onAwaitingManual) if (!(SEVERITY_CHOICES as readonly string[]).includes(s)) throw invalid(`rules.onAwaitingManual takes ${SEVERITY_CHOICES.join(', ')}`)

      const before = await repo.connection(appId)
      // The stored token is kept only while it would go where it was given for (core/kept-secret.ts).
      const moved = before && input.token === undefined ? changedDestination({ kind: before.kind, apiUrl: urlKey(before.api_url) }, { kind: input.kind, apiUrl: urlKey(apiUrl) }) : []
      if (moved.length > 0) throw invalid(secretRequiredAgain('token', moved))
      const token = input.token ?? (before ? box.open(before.token_sealed).toString('utf8') : undefined)
      if (!token) throw invalid('token is required to connect a tracker')
      const retargets =
        !before ||
        input.token !== undefined ||
        input.webhookSecret !== undefined ||
        changedDestination({ kind: before.kind, apiUrl: urlKey(before.api_url), project: before.project, account: before.account }, { kind: input.kind, apiUrl: urlKey(apiUrl), project: input.project, account: input.account ?? null }).length > 0
      if (retargets) await confirmRetarget?.()
      const target: TrackerTarget = { kind: input.kind, apiUrl, project: input.project, token, ...(input.account ? { account: input.account } : {}), timeoutMs: config.outboundTimeoutMs }
      let actor: string
      try {
        actor = (await adapter.whoAmI({ ...target, addresses: await guard(apiUrl) })).actor
      } catch (e) {
        if (e instanceof TrackerError) throw invalid(`the tracker refused the connection: ${e.message}`)
        throw e
      }
      if (input.webhookSecret !== undefined && !/^[\x21-\x7e]{16,256}$/.test(input.webhookSecret)) throw invalid('webhookSecret must be 16-256 printable characters without spaces')
      // The tracker's own secret when given (never shown back: the caller has it); else one made on the first connect.
      const fresh = before || input.webhookSecret !== undefined ? null : newSecret()
      const secret = input.webhookSecret ?? fresh
      const now = clock.now()
      await repo.putConnection(
        {
          app_id: appId,
          org_id: orgId,
          kind: input.kind,
          api_url: apiUrl,
          project: input.project,
          account: input.account ?? null,
          token_sealed: box.seal(Buffer.from(token, 'utf8')),
          webhook_secret_sealed: secret === null ? before!.webhook_secret_sealed : box.seal(Buffer.from(secret, 'utf8')),
          actor,
          state_map: JSON.stringify(stateMap),
          rules: JSON.stringify(rules),
          created_at: now,
          updated_at: now,
        },
        note(by, orgId, 'app.tracker_connected', appId, { kind: input.kind, apiUrl, project: input.project, tokenChanged: input.token !== undefined, webhookSecretSet: input.webhookSecret !== undefined }),
      )
      const tracker = await view((await repo.connection(appId))!, baseUrl)
      return fresh === null ? { tracker } : { tracker, webhookSecret: fresh }
    },

    async get(orgId: string, appId: string, baseUrl: string): Promise<{ tracker: TrackerView | null }> {
      await liveApp(orgId, appId)
      const row = await repo.connection(appId)
      return { tracker: row ? await view(row, baseUrl) : null }
    },

    /** Stops syncing (the links of existing issues stay readable). not_found when none was connected. */
    async disconnect(orgId: string, appId: string, by?: ActedBy): Promise<void> {
      await liveApp(orgId, appId)
      if (!(await repo.removeConnection(appId, note(by, orgId, 'app.tracker_disconnected', appId)))) throw new ApiError('tracker_not_connected', { appId })
    },

    /**
     * A new tracker webhook secret, in this answer only. `confirm`: as for `connect` with a webhook secret
     * (whoever holds it can move reports through forged tracker events, after the session too).
     */
    async rotateWebhookSecret(orgId: string, appId: string, by?: ActedBy, confirm?: () => Promise<void>): Promise<{ webhookSecret: string }> {
      await liveApp(orgId, appId)
      if (confirm) {
        if (!(await repo.connection(appId))) throw new ApiError('tracker_not_connected', { appId })
        await confirm()
      }
      const secret = newSecret()
      if (!(await repo.setWebhookSecret(appId, box.seal(Buffer.from(secret, 'utf8')), clock.now(), note(by, orgId, 'app.tracker_webhook_secret_rotated', appId)))) {
        throw new ApiError('tracker_not_connected', { appId })
      }
      return { webhookSecret: secret }
    },

    /**
     * Pushes a lead by hand: 202 with the pending issue (a job creates it), 200 with the issue a lead
     * already has; 404 for a report of another Org, 409 invalid_target (with leadFeedbackId) for a
     * duplicate, 409 tracker_not_connected when its App has no tracker.
     */
    async push(orgId: string, feedbackId: string): Promise<{ created: boolean; trackerIssue: TrackerIssueView }> {
      const lead = await repo.lead(feedbackId)
      if (!lead || lead.org_id !== orgId) throw new ApiError('not_found')
      if (lead.duplicate_of_id) throw new ApiError('invalid_target', { leadFeedbackId: lead.duplicate_of_id })
      const conn = await repo.connection(lead.app_id)
      const existing = await repo.issue(feedbackId)
      if (existing && existing.sync_state !== 'deleted' && (!conn || linkFollows(conn, existing))) return { created: false, trackerIssue: issueView(existing) }
      if (!conn) throw new ApiError('tracker_not_connected', { appId: lead.app_id })
      if (existing?.sync_state === 'deleted') throw new ApiError('invalid_transition', undefined, 'The issue of this report was deleted on the tracker; fixloop does not create it again.')
      if (existing) {
        const where = existing.kind === conn.kind ? `project ${existing.project === '' ? '(unknown)' : existing.project}` : `tracker (${existing.kind})`
        throw new ApiError('invalid_transition', undefined, `This report already has an issue in the App's previous ${where}; one issue per lead.`)
      }
      await repo.queuePushes(lead.app_id, { create: [{ feedbackId, orgId, kind: conn.kind, project: conn.project }], refresh: [] })
      return { created: true, trackerIssue: issueView((await repo.issue(feedbackId))!) }
    },

    /**
     * The tracker issue each report shows: its own as a lead, its lead's as a duplicate. One read for a
     * whole page. `reports`: id and lead id (null for a lead).
     */
    async issuesFor(reports: { id: string; duplicateOfId: string | null }[]): Promise<Map<string, TrackerIssueView>> {
      const ids = [...new Set(reports.map((r) => r.duplicateOfId ?? r.id))]
      const rows = new Map((await repo.issuesOf(ids)).map((r) => [r.feedback_id, issueView(r)]))
      const out = new Map<string, TrackerIssueView>()
      for (const r of reports) {
        const v = rows.get(r.duplicateOfId ?? r.id)
        if (v) out.set(r.id, v)
      }
      return out
    },

    /**
     * One tracker delivery for `appId`: 401 invalid_authorization unless the App has a tracker and the
     * delivery is signed with its webhook secret (an unknown App and a wrong signature look alike); 400
     * invalid_body when the signed body is not JSON. Outcomes: moved, unchanged, replayed, deleted,
     * echo (fixloop's own change), ignored (another event or project, an issue fixloop did not create).
     */
    async receive(appId: string, headers: Headers, raw: Uint8Array): Promise<{ outcome: string }> {
      const conn = await repo.connection(appId)
      const adapter = conn ? adapterFor(conn.kind as TrackerKind) : null
      if (!conn || !adapter) throw unauthenticated()
      if (!adapter.verifyWebhook(headers, raw, box.open(conn.webhook_secret_sealed).toString('utf8'))) throw unauthenticated()
      let body: unknown
      try {
        // NUL stripped, not refused: the host would redeliver a refused delivery forever (core/nul.ts).
        body = parseDeliveryJson(raw)
      } catch {
        throw new ApiError('invalid_body', { issues: [{ path: '/', message: 'not JSON (or not UTF-8)' }] }, "The delivery is not JSON: set the webhook's content type to application/json.")
      }
      const news = adapter.parseWebhook(headers, body, raw)
      if (!news) return { outcome: 'ignored' }
      const project = conn.project.toLowerCase()
      if (news.projects && !news.projects.some((p) => p.toLowerCase() === project)) return { outcome: 'ignored' }
      // A link of the connection's project only: the same issue number in another project is another issue.
      const link = await repo.issueByTrackerId(conn, news.issueId)
      if (!link || !linkFollows(conn, link)) return { outcome: 'ignored' }
      // Loop prevention: a change made with fixloop's own token is fixloop's echo.
      if (news.actor !== null && conn.actor !== null && news.actor === conn.actor) return { outcome: 'echo' }
      const action = actionFor(news.state, parseStateMap(conn.state_map))
      // Its id and its body's hash: a signed body replayed under a new (unsigned) delivery id is still a replay.
      const r = await repo.applyNews(appId, { deliveryId: deliveryKeys(news.deliveryId, raw), feedbackId: link.feedback_id, state: news.state, deleted: news.deleted === true, action })
      return { outcome: r.outcome }
    },

    /** Connections whose last tracker call failed, the first 100, for /readyz details (never a token). */
    async failing() {
      return (await repo.failing()).map((c) => ({ appId: c.app_id, kind: c.kind, lastError: c.last_error, lastErrorAt: c.last_error_at === null ? null : isoUtc(c.last_error_at), retryAt: c.retry_at === null ? null : isoUtc(c.retry_at) }))
    },

    /** How many connections' last tracker call failed, by kind: every one (the metric; /readyz's count). */
    async failingByKind(): Promise<Map<string, number>> {
      return new Map((await repo.failingByKind()).map((r) => [r.kind, Number(r.n)]))
    },
  }
}
export type TrackersService = ReturnType<typeof createTrackersService>
