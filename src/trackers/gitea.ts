/**
 * Gitea and Forgejo issues (apiUrl https://HOST/api/v1). REST: POST /repos/{owner}/{repo}/issues
 * {title, body, labels: [label ids]}, PATCH …/issues/{n} {title, body}, POST …/issues/{n}/comments
 * {body}, GET …/issues/{n} (state open|closed), GET /user, GET /repos/{o}/{r}/labels. Labels are ids in
 * Gitea: the repository's labels are read once per issue created and the draft's names matched (case-
 * insensitively); a name the repository has no label for is skipped (fixloop does not create labels).
 * Token: `Authorization: token …` (scopes write:issue, read:user). Webhook: the `issues` event,
 * X-Gitea-Signature (X-Forgejo-Signature) = hex HMAC-SHA256 of the body, X-Gitea-Delivery.
 */
import { constantTimeEqual, deliveryIdOr, hmacSha256Hex, remoteHttpUrl } from '../core/outbound'
import type { TrackedIssue, TrackerAdapter, TrackerNews, TrackerState, TrackerTarget } from './adapter'
import { callTracker, intId, malformed, obj, str } from './http'

const headers = (t: TrackerTarget) => ({ accept: 'application/json', authorization: `token ${t.token}` })
const repoUrl = (t: TrackerTarget) => `${t.apiUrl}/repos/${t.project.split('/').map(encodeURIComponent).join('/')}`

export const giteaState = (state: unknown): TrackerState => (state === 'closed' ? { name: 'closed', category: 'done' } : { name: 'open', category: 'open' })

function tracked(body: unknown): TrackedIssue {
  const b = obj(body)
  const id = intId(b?.number)
  const url = remoteHttpUrl(b?.html_url)
  if (!b || !id || !url) throw malformed('gitea', 'the issue number and html_url')
  return { id, key: `#${id}`, url, state: giteaState(b.state) }
}

/** The ids of the repository's labels named in `names` (one page of 50: more labels than that are not looked through). */
async function labelIds(t: TrackerTarget, names: string[], signal?: AbortSignal): Promise<number[]> {
  if (names.length === 0) return []
  const list = await callTracker(t, { method: 'GET', url: `${repoUrl(t)}/labels?limit=50`, headers: headers(t), what: 'reading the repository\'s labels' }, signal)
  const wanted = new Set(names.map((n) => n.toLowerCase()))
  const ids: number[] = []
  for (const l of Array.isArray(list) ? list.slice(0, 50) : []) {
    const label = obj(l)
    const name = str(label?.name, 200)
    if (name && wanted.has(name.toLowerCase()) && typeof label?.id === 'number' && Number.isSafeInteger(label.id)) ids.push(label.id)
  }
  return ids
}

export const gitea: TrackerAdapter = {
  kind: 'gitea',
  async whoAmI(t, signal) {
    const u = obj(await callTracker(t, { method: 'GET', url: `${t.apiUrl}/user`, headers: headers(t), what: 'reading the token\'s user (GET /user)' }, signal))
    const login = str(u?.login, 200) ?? str(u?.username, 200)
    if (!login) throw malformed('gitea', 'a login')
    return { actor: login, displayName: str(u?.full_name, 200) ?? login }
  },
  async createIssue(t, draft, signal) {
    const labels = await labelIds(t, draft.labels, signal)
    return tracked(await callTracker(t, { method: 'POST', url: `${repoUrl(t)}/issues`, headers: headers(t), body: { title: draft.title, body: draft.body, labels }, what: 'creating the issue' }, signal))
  },
  async updateIssue(t, issueId, draft, signal) {
    await callTracker(t, { method: 'PATCH', url: `${repoUrl(t)}/issues/${encodeURIComponent(issueId)}`, headers: headers(t), body: { title: draft.title, body: draft.body }, what: `updating issue #${issueId}` }, signal)
  },
  async addComment(t, issueId, text, signal) {
    await callTracker(t, { method: 'POST', url: `${repoUrl(t)}/issues/${encodeURIComponent(issueId)}/comments`, headers: headers(t), body: { body: text }, what: `commenting on issue #${issueId}` }, signal)
  },
  async readIssue(t, issueId, signal) {
    return tracked(await callTracker(t, { method: 'GET', url: `${repoUrl(t)}/issues/${encodeURIComponent(issueId)}`, headers: headers(t), what: `reading issue #${issueId}` }, signal))
  },
  verifyWebhook(h, raw, secret) {
    const given = h.get('x-gitea-signature') ?? h.get('x-forgejo-signature')
    return given !== null && constantTimeEqual(given.trim().toLowerCase(), hmacSha256Hex(secret, raw))
  },
  parseWebhook(h, body, raw): TrackerNews | null {
    const b = obj(body)
    const event = h.get('x-gitea-event') ?? h.get('x-forgejo-event')
    if (!b || event !== 'issues') return null
    const action = b.action
    if (action !== 'closed' && action !== 'reopened' && action !== 'deleted') return null
    const issue = obj(b.issue)
    const issueId = intId(issue?.number) ?? intId(b.number)
    if (!issue || !issueId || obj(issue.pull_request)) return null
    const project = str(obj(b.repository)?.full_name, 300)
    return {
      issueId,
      state: giteaState(action === 'closed' ? 'closed' : action === 'reopened' ? 'open' : issue.state),
      actor: str(obj(b.sender)?.login, 200) ?? str(obj(b.sender)?.username, 200),
      deliveryId: deliveryIdOr(h.get('x-gitea-delivery') ?? h.get('x-forgejo-delivery'), raw),
      ...(action === 'deleted' ? { deleted: true } : {}),
      ...(project ? { projects: [project] } : {}),
    }
  },
}
