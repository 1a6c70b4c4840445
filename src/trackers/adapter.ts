/**
 * One issue tracker, as fixloop talks to it (issue 26, docs/trackers.md): create an issue for a lead,
 * keep its text current, comment when its cluster grows, read its state back (polling), and read the
 * tracker's webhook deliveries (signature first, then the news). One adapter per tracker kind, each in
 * its own file beside this one; the sync service (src/modules/trackers/) never sees a vendor's shape.
 *
 * Adapters do HTTP and parsing only: no database, no clock of their own, no logging. Every failure is a
 * TrackerError whose message never carries the token (scrub it, as src/agent/git.ts `scrub` does).
 */
import type { CheckedAddress } from '../core/address-guard'
import type { JobBudget } from '../core/job-budget'
import { OUTBOUND_TIMEOUT_MS_DEFAULT, saasTrackerDeadlineMs } from '../core/outbound-deadline'

export const TRACKER_KINDS = ['github', 'gitlab', 'gitea', 'jira', 'linear'] as const
export type TrackerKind = (typeof TRACKER_KINDS)[number]

/** Where issues go, decrypted for one call. Built by the sync service from the sealed connection row. */
export interface TrackerTarget {
  kind: TrackerKind
  /** API root: https://api.github.com, https://gitlab.example/api/v4, https://gitea.example/api/v1,
   *  https://acme.atlassian.net (Jira Cloud), https://api.linear.app (Linear; GraphQL at /graphql). */
  apiUrl: string
  /** owner/repo (GitHub, Gitea), group/project path or numeric id (GitLab), project key (Jira), team id (Linear). */
  project: string
  token: string
  /** Jira Cloud only: the account e-mail of the API token (Basic auth is e-mail:token). */
  account?: string
  /**
   * The addresses the tracker address guard checked for apiUrl's host (src/modules/trackers/service.ts):
   * every call connects to exactly these (DNS rebinding). Unset only where no guard applies (tests).
   */
  addresses?: CheckedAddress[]
  /**
   * FIXLOOP_OUTBOUND_TIMEOUT in ms, set by the trackers service: each call's deadline (Jira Cloud and
   * Linear a third longer, src/core/outbound-deadline.ts). Unset: the default, 15 s.
   */
  timeoutMs?: number
  /**
   * The time left of the job the calls are made for (a tracker push; core/job-budget.ts): a call whose
   * deadline would end past it is not started (OutOfJobTime). Unset: no job to end inside.
   */
  budget?: JobBudget
}

/** The deadline of one call to `t`'s tracker: FIXLOOP_OUTBOUND_TIMEOUT, Jira Cloud and Linear a third more. */
export function callDeadlineMs(t: Pick<TrackerTarget, 'kind' | 'timeoutMs'>): number {
  const outbound = t.timeoutMs ?? OUTBOUND_TIMEOUT_MS_DEFAULT
  return t.kind === 'jira' || t.kind === 'linear' ? saasTrackerDeadlineMs(outbound) : outbound
}

/** What fixloop writes: sanitized text only, never raw (the sync service builds it). */
export interface IssueDraft {
  title: string
  /** Markdown. Jira adapters convert it to Atlassian Document Format; Linear takes markdown as is. */
  body: string
  /** Labels by name (GitHub, Gitea, GitLab, Linear by label name; Jira labels may not contain spaces). */
  labels: string[]
}

/**
 * A tracker state, normalized. `name` is the tracker's own word (open, closed, "In Progress", "Done") and
 * is what a configurable state mapping matches first; `category` is the fallback every tracker has:
 * GitHub/Gitea/GitLab open|closed (GitHub state_reason not_planned → canceled), Jira statusCategory
 * new|indeterminate → open and done → done, Linear state type completed → done, canceled → canceled,
 * anything else → open.
 */
export interface TrackerState {
  name: string
  category: 'open' | 'done' | 'canceled'
}

export interface TrackedIssue {
  /** The id API calls take: issue number (GitHub, Gitea), iid (GitLab), key (Jira, PROJ-7), id (Linear). */
  id: string
  /** What people read: #12, PROJ-7, ENG-3. */
  key: string
  url: string
  state: TrackerState
}

/** What a webhook delivery says, or null (acknowledged and ignored: another event, another project). */
export interface TrackerNews {
  /** The tracker's id of the issue, as in TrackedIssue.id. */
  issueId: string
  state: TrackerState
  /** Who made the change, as the tracker names users (login, account id, user id): an echo of fixloop's
   *  own write is recognised by comparing it with TrackerIdentity.actor. */
  actor: string | null
  /** The delivery's id for replay protection (a header, or a hash of the body when the tracker sends none). */
  deliveryId: string
  /** The issue was deleted on the tracker side. */
  deleted?: boolean
  /**
   * The names the delivery gives the issue's project (GitHub/Gitea owner/repo, GitLab path and numeric
   * id, Jira key, Linear team id), when it says: news about another project than the connection's is
   * ignored (issue numbers repeat across repositories). Additive (issue 26, h-trk).
   */
  projects?: string[]
}

/** Who the token acts as (read once at connect): lets the sync service ignore its own echoes. */
export interface TrackerIdentity {
  actor: string
  displayName: string
}

export type TrackerFailure = 'unreachable' | 'unauthorized' | 'rate_limited' | 'not_found' | 'rejected'

/** Every adapter failure. `retryAfterMs` is the tracker's Retry-After (or reset header), bounded to an hour. */
export class TrackerError extends Error {
  constructor(
    readonly failure: TrackerFailure,
    message: string,
    readonly status: number | null = null,
    readonly retryAfterMs: number | null = null,
  ) {
    super(message)
  }
}

export interface TrackerAdapter {
  readonly kind: TrackerKind
  /** Checks the token and names who it acts as (connect time, and the dashboard's "test"). */
  whoAmI(target: TrackerTarget, signal?: AbortSignal): Promise<TrackerIdentity>
  createIssue(target: TrackerTarget, draft: IssueDraft, signal?: AbortSignal): Promise<TrackedIssue>
  /** Replaces title and body (labels are only added at creation). not_found when the issue was deleted. */
  updateIssue(target: TrackerTarget, issueId: string, draft: Pick<IssueDraft, 'title' | 'body'>, signal?: AbortSignal): Promise<void>
  addComment(target: TrackerTarget, issueId: string, body: string, signal?: AbortSignal): Promise<void>
  /** The issue's state now (polling); TrackerError not_found when it is gone. */
  readIssue(target: TrackerTarget, issueId: string, signal?: AbortSignal): Promise<TrackedIssue>
  /** Is the delivery signed with `secret` (the tracker's own scheme, constant time)? */
  verifyWebhook(headers: Headers, raw: Uint8Array, secret: string): boolean
  /** Pure: the news in a verified delivery's JSON body, or null. Hostile input: bounded, never throws. */
  parseWebhook(headers: Headers, body: unknown, raw: Uint8Array): TrackerNews | null
}
