/**
 * GitHub Issues (github.com and GitHub Enterprise: apiUrl https://api.github.com or https://HOST/api/v3).
 * REST: POST /repos/{owner}/{repo}/issues {title, body, labels}, PATCH /repos/{o}/{r}/issues/{n}
 * {title, body}, POST …/issues/{n}/comments {body}, GET …/issues/{n} (state open|closed, state_reason
 * completed|not_planned|reopened), GET /user. Token: a fine-grained token with Issues read/write (or a
 * classic token with `repo`), as `Authorization: Bearer`. Webhook: the `issues` event, signed with
 * X-Hub-Signature-256, id in X-GitHub-Delivery; actions closed, reopened, deleted are news.
 */
import { constantTimeEqual, deliveryIdOr, githubHeaders, hmacSha256Hex, remoteHttpUrl } from '../core/outbound'
import type { TrackedIssue, TrackerAdapter, TrackerNews, TrackerState, TrackerTarget } from './adapter'
import { callTracker, intId, malformed, obj, str } from './http'

const headers = (t: TrackerTarget) => githubHeaders(t.token)
const repoUrl = (t: TrackerTarget) => `${t.apiUrl}/repos/${t.project.split('/').map(encodeURIComponent).join('/')}`

/** open → open; closed as not planned → canceled (name not_planned); closed otherwise → done. */
export function githubState(state: unknown, reason: unknown): TrackerState {
  if (state !== 'closed') return { name: 'open', category: 'open' }
  return reason === 'not_planned' ? { name: 'not_planned', category: 'canceled' } : { name: 'closed', category: 'done' }
}

function tracked(kind: 'github' | 'gitea', body: unknown, state: (b: Record<string, unknown>) => TrackerState): TrackedIssue {
  const b = obj(body)
  const id = intId(b?.number)
  const url = remoteHttpUrl(b?.html_url)
  if (!b || !id || !url) throw malformed(kind, 'the issue number and html_url')
  return { id, key: `#${id}`, url, state: state(b) }
}

export const github: TrackerAdapter = {
  kind: 'github',
  async whoAmI(t, signal) {
    const u = obj(await callTracker(t, { method: 'GET', url: `${t.apiUrl}/user`, headers: headers(t), what: 'reading the token\'s user (GET /user)' }, signal))
    const login = str(u?.login, 200)
    if (!login) throw malformed('github', 'a login')
    return { actor: login, displayName: str(u?.name, 200) ?? login }
  },
  async createIssue(t, draft, signal) {
    const body = await callTracker(t, { method: 'POST', url: `${repoUrl(t)}/issues`, headers: headers(t), body: { title: draft.title, body: draft.body, labels: draft.labels }, what: 'creating the issue' }, signal)
    return tracked('github', body, (b) => githubState(b.state, b.state_reason))
  },
  async updateIssue(t, issueId, draft, signal) {
    await callTracker(t, { method: 'PATCH', url: `${repoUrl(t)}/issues/${encodeURIComponent(issueId)}`, headers: headers(t), body: { title: draft.title, body: draft.body }, what: `updating issue #${issueId}` }, signal)
  },
  async addComment(t, issueId, text, signal) {
    await callTracker(t, { method: 'POST', url: `${repoUrl(t)}/issues/${encodeURIComponent(issueId)}/comments`, headers: headers(t), body: { body: text }, what: `commenting on issue #${issueId}` }, signal)
  },
  async readIssue(t, issueId, signal) {
    const body = await callTracker(t, { method: 'GET', url: `${repoUrl(t)}/issues/${encodeURIComponent(issueId)}`, headers: headers(t), what: `reading issue #${issueId}` }, signal)
    return tracked('github', body, (b) => githubState(b.state, b.state_reason))
  },
  verifyWebhook(h, raw, secret) {
    const given = h.get('x-hub-signature-256')
    return given !== null && constantTimeEqual(given.trim().toLowerCase(), `sha256=${hmacSha256Hex(secret, raw)}`)
  },
  parseWebhook(h, body, raw): TrackerNews | null {
    const b = obj(body)
    if (!b || h.get('x-github-event') !== 'issues') return null
    const action = b.action
    if (action !== 'closed' && action !== 'reopened' && action !== 'deleted') return null
    const issue = obj(b.issue)
    const issueId = intId(issue?.number)
    // A pull request is an issue to GitHub's numbering, but its events are pull_request ones: never here.
    if (!issue || !issueId || obj(issue.pull_request)) return null
    const project = str(obj(b.repository)?.full_name, 300)
    return {
      issueId,
      state: githubState(issue.state, issue.state_reason),
      actor: str(obj(b.sender)?.login, 200),
      deliveryId: deliveryIdOr(h.get('x-github-delivery'), raw),
      ...(action === 'deleted' ? { deleted: true } : {}),
      ...(project ? { projects: [project] } : {}),
    }
  },
}
