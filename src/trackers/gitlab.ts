/**
 * GitLab issues (apiUrl https://HOST/api/v4; project = its path group/sub/project or its numeric id).
 * REST: POST /projects/:id/issues {title, description, labels: "a,b"}, PUT /projects/:id/issues/:iid
 * {title, description}, POST …/issues/:iid/notes {body}, GET …/issues/:iid (state opened|closed),
 * GET /user. Token: a project, group or personal access token with `api`, as PRIVATE-TOKEN. Webhook:
 * "Issues events" (X-Gitlab-Event: Issue Hook), X-Gitlab-Token = the secret itself, X-Gitlab-Event-UUID;
 * object_attributes.action close and reopen are news.
 */
import { constantTimeEqual, deliveryIdOr, remoteHttpUrl } from '../core/outbound'
import type { TrackedIssue, TrackerAdapter, TrackerNews, TrackerState, TrackerTarget } from './adapter'
import { callTracker, intId, malformed, obj, str } from './http'

const headers = (t: TrackerTarget) => ({ accept: 'application/json', 'private-token': t.token })
const projectUrl = (t: TrackerTarget) => `${t.apiUrl}/projects/${encodeURIComponent(t.project)}`

export const gitlabState = (state: unknown): TrackerState => (state === 'closed' ? { name: 'closed', category: 'done' } : { name: 'opened', category: 'open' })

function tracked(body: unknown): TrackedIssue {
  const b = obj(body)
  const id = intId(b?.iid)
  const url = remoteHttpUrl(b?.web_url)
  if (!b || !id || !url) throw malformed('gitlab', 'the issue iid and web_url')
  return { id, key: `#${id}`, url, state: gitlabState(b.state) }
}

export const gitlab: TrackerAdapter = {
  kind: 'gitlab',
  async whoAmI(t, signal) {
    const u = obj(await callTracker(t, { method: 'GET', url: `${t.apiUrl}/user`, headers: headers(t), what: 'reading the token\'s user (GET /user)' }, signal))
    const username = str(u?.username, 200)
    if (!username) throw malformed('gitlab', 'a username')
    return { actor: username, displayName: str(u?.name, 200) ?? username }
  },
  async createIssue(t, draft, signal) {
    // GitLab takes labels as one comma-separated string, so a label name never holds a comma.
    const labels = draft.labels.map((l) => l.replace(/,/g, ' ')).join(',')
    return tracked(await callTracker(t, { method: 'POST', url: `${projectUrl(t)}/issues`, headers: headers(t), body: { title: draft.title, description: draft.body, labels }, what: 'creating the issue' }, signal))
  },
  async updateIssue(t, issueId, draft, signal) {
    await callTracker(t, { method: 'PUT', url: `${projectUrl(t)}/issues/${encodeURIComponent(issueId)}`, headers: headers(t), body: { title: draft.title, description: draft.body }, what: `updating issue #${issueId}` }, signal)
  },
  async addComment(t, issueId, text, signal) {
    await callTracker(t, { method: 'POST', url: `${projectUrl(t)}/issues/${encodeURIComponent(issueId)}/notes`, headers: headers(t), body: { body: text }, what: `commenting on issue #${issueId}` }, signal)
  },
  async readIssue(t, issueId, signal) {
    return tracked(await callTracker(t, { method: 'GET', url: `${projectUrl(t)}/issues/${encodeURIComponent(issueId)}`, headers: headers(t), what: `reading issue #${issueId}` }, signal))
  },
  verifyWebhook(h, _raw, secret) {
    const token = h.get('x-gitlab-token')
    return token !== null && constantTimeEqual(token, secret)
  },
  parseWebhook(h, body, raw): TrackerNews | null {
    const b = obj(body)
    const event = h.get('x-gitlab-event')
    // Confidential issues come as their own event, with the same payload.
    if (!b || (event !== 'Issue Hook' && event !== 'Confidential Issue Hook')) return null
    const attrs = obj(b.object_attributes)
    const action = attrs?.action
    if (action !== 'close' && action !== 'reopen') return null
    const issueId = intId(attrs?.iid)
    if (!issueId) return null
    const project = obj(b.project)
    const projects = [str(project?.path_with_namespace, 300), intId(project?.id)].filter((p): p is string => p !== null)
    return {
      issueId,
      state: gitlabState(action === 'close' ? 'closed' : 'opened'),
      actor: str(obj(b.user)?.username, 200),
      deliveryId: deliveryIdOr(h.get('x-gitlab-event-uuid') ?? h.get('idempotency-key'), raw),
      ...(projects.length > 0 ? { projects } : {}),
    }
  },
}
