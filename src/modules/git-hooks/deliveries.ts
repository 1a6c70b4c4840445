/**
 * A git host's webhook delivery, read: its authenticity (each host's own scheme, compared in constant
 * time), its delivery id, and what it says about a pull/merge request. Pure: no I/O. Payload shapes are
 * the hosts' documented ones (GitHub "Webhook events and payloads", Gitea/Forgejo webhooks, GitLab
 * "Webhook events"); anything else reads as null (acknowledged, ignored).
 *
 *   GitHub  X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>; X-GitHub-Event; X-GitHub-Delivery
 *   Gitea   X-Gitea-Signature (or X-Forgejo-Signature): <hex HMAC-SHA256>; X-Gitea-Event (X-Forgejo-Event); X-Gitea-Delivery
 *   GitLab  X-Gitlab-Token: the secret itself; X-Gitlab-Event; X-Gitlab-Event-UUID
 */
import { constantTimeEqual, deliveryIdOr, hmacSha256Hex } from '../../core/outbound'
import type { PrChange } from './repo'
import { clip } from '../../core/clip'

export type GitHookHost = 'github' | 'gitea' | 'gitlab'

/** What a delivery says about a pull/merge request. */
export type HostNews =
  | { kind: 'change'; prUrl: string; change: PrChange }
  /** A review asking for changes, or a comment addressed to fixloop (`/fixloop …`): its text is hostile input. */
  | { kind: 'review'; prUrl: string; text: string; author: string | null }

/** Comments addressed to fixloop start with this (docs/agents.md "Review iteration"). */
export const COMMAND_PREFIX = '/fixloop'

/**
 * GitHub says how a commenter or reviewer relates to the repository (`author_association`): only people
 * with write access may start a review iteration, so a stranger commenting on a public repository's pull
 * request cannot spend the App's agent budget. Gitea/Forgejo and GitLab payloads carry no such field.
 */
const GITHUB_WRITERS = new Set(['OWNER', 'MEMBER', 'COLLABORATOR'])
const githubWriter = (o: Obj | null): boolean => GITHUB_WRITERS.has(String(o?.author_association))

export { constantTimeEqual }

/** Is the delivery signed (GitHub, Gitea) or tokened (GitLab) with `secret`? */
export function verifyDelivery(host: GitHookHost, headers: Headers, raw: Uint8Array, secret: string): boolean {
  if (host === 'gitlab') {
    const token = headers.get('x-gitlab-token')
    return token !== null && constantTimeEqual(token, secret)
  }
  const mac = hmacSha256Hex(secret, raw)
  if (host === 'github') {
    const given = headers.get('x-hub-signature-256')
    return given !== null && constantTimeEqual(given.trim().toLowerCase(), `sha256=${mac}`)
  }
  const given = headers.get('x-gitea-signature') ?? headers.get('x-forgejo-signature')
  return given !== null && constantTimeEqual(given.trim().toLowerCase(), mac)
}

/**
 * The delivery's id as the host names it (bounded, printable), or the body's hash when the host sends
 * none (older GitLab): a byte-identical replay is then still recognised.
 */
export function deliveryIdOf(host: GitHookHost, headers: Headers, raw: Uint8Array): string {
  const id =
    host === 'github' ? headers.get('x-github-delivery') : host === 'gitea' ? (headers.get('x-gitea-delivery') ?? headers.get('x-forgejo-delivery')) : (headers.get('x-gitlab-event-uuid') ?? headers.get('idempotency-key'))
  return deliveryIdOr(id, raw)
}

type Obj = Record<string, unknown>
const obj = (v: unknown): Obj | null => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : null)
const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 && v.length <= 2048 ? v : null)
/** Review text is bounded before anything else reads it. */
const REVIEW_TEXT_MAX = 8000
const text = (v: unknown): string | null => (typeof v === 'string' ? clip(v, REVIEW_TEXT_MAX) : null)
const addressed = (body: string | null): body is string => body !== null && body.trimStart().toLowerCase().startsWith(COMMAND_PREFIX)

function eventOf(host: GitHookHost, headers: Headers): string {
  if (host === 'github') return headers.get('x-github-event') ?? ''
  if (host === 'gitea') return headers.get('x-gitea-event') ?? headers.get('x-forgejo-event') ?? ''
  return headers.get('x-gitlab-event') ?? ''
}

/** What the delivery says about a pull/merge request, or null (another event, another action, a malformed body). */
export function readNews(host: GitHookHost, headers: Headers, body: unknown): HostNews | null {
  const b = obj(body)
  if (!b) return null
  const event = eventOf(host, headers)
  if (host === 'gitlab') return gitlabNews(event, b)
  const pr = obj(b.pull_request)
  const prUrl = str(pr?.html_url)
  const action = b.action
  if (event === 'pull_request' && pr && prUrl) {
    if (action === 'closed') return { kind: 'change', prUrl, change: pr.merged === true ? 'merged' : 'closed' }
    if (action === 'reopened') return { kind: 'change', prUrl, change: 'reopened' }
    return null
  }
  const review = obj(b.review)
  // GitHub: pull_request_review, review.state "changes_requested". Gitea: pull_request_review_rejected, review.type.
  if (host === 'github' && event === 'pull_request_review' && action === 'submitted' && prUrl && String(review?.state).toLowerCase() === 'changes_requested' && githubWriter(review)) {
    return { kind: 'review', prUrl, text: text(review?.body) ?? '', author: login(review?.user) }
  }
  if (host === 'gitea' && event === 'pull_request_review_rejected' && prUrl) {
    return { kind: 'review', prUrl, text: text(review?.content) ?? '', author: login(b.sender) }
  }
  const comment = obj(b.comment)
  const commentText = text(comment?.body)
  if (!addressed(commentText)) return null
  if (host === 'github' && !githubWriter(comment)) return null
  // A review comment on a line of the diff (GitHub), or a comment on the pull request's conversation.
  if (event === 'pull_request_review_comment' && action === 'created' && prUrl) return { kind: 'review', prUrl, text: commentText, author: login(comment?.user) }
  if (event === 'issue_comment' && action === 'created') {
    const issue = obj(b.issue)
    // GitHub: issue.pull_request.html_url on a pull request; Gitea: is_pull, and the issue's html_url is the pull's (…/pulls/N).
    const url = host === 'github' ? str(obj(issue?.pull_request)?.html_url) : b.is_pull === true || obj(issue?.pull_request) ? str(issue?.html_url) : null
    if (url) return { kind: 'review', prUrl: url, text: commentText, author: login(comment?.user) }
  }
  return null
}

/**
 * GitLab (17.x and later) sends a "Merge Request Hook" with action `update` when a reviewer submits a review
 * with **Request changes**: `changes.reviewers.current` holds that reviewer with state `requested_changes`
 * (not so in `previous`). The review's own comments come as separate notes; the iteration is told so.
 */
const GITLAB_REQUESTED_CHANGES = 'A reviewer requested changes on the merge request (GitLab review state "Request changes"); their comments are on the merge request.'
const REVIEWERS_READ = 100
function reviewerRequestingChanges(reviewers: Obj | null): string | null | undefined {
  const list = (v: unknown): Obj[] => (Array.isArray(v) ? v.slice(0, REVIEWERS_READ).map(obj).filter((o): o is Obj => o !== null) : [])
  const before = new Set(list(reviewers?.previous).filter((r) => r.state === 'requested_changes').map((r) => String(r.id)))
  const now = list(reviewers?.current).find((r) => r.state === 'requested_changes' && !before.has(String(r.id)))
  return now ? (str(now.username) ?? null) : undefined
}

const login = (user: unknown): string | null => str(obj(user)?.login) ?? str(obj(user)?.username)

function gitlabNews(event: string, b: Obj): HostNews | null {
  const attrs = obj(b.object_attributes)
  if (!attrs) return null
  if (event === 'Merge Request Hook') {
    const prUrl = str(attrs.url)
    if (!prUrl) return null
    const change = ({ merge: 'merged', close: 'closed', reopen: 'reopened' } as const)[String(attrs.action) as 'merge' | 'close' | 'reopen']
    if (change) return { kind: 'change', prUrl, change }
    const reviewer = attrs.action === 'update' ? reviewerRequestingChanges(obj(obj(b.changes)?.reviewers)) : null
    return reviewer === undefined || reviewer === null ? null : { kind: 'review', prUrl, text: GITLAB_REQUESTED_CHANGES, author: reviewer }
  }
  if (event === 'Note Hook' && attrs.noteable_type === 'MergeRequest') {
    const note = text(attrs.note)
    const prUrl = str(obj(b.merge_request)?.url)
    if (prUrl && addressed(note)) return { kind: 'review', prUrl, text: note, author: str(obj(b.user)?.username) }
  }
  return null
}
