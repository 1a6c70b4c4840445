/**
 * Jira Cloud through its REST API v3 (https://developer.atlassian.com/cloud/jira/platform/rest/v3/).
 * docs/trackers.md says what is pushed and how to configure the webhook.
 *
 *   auth        Authorization: Basic base64(<account e-mail>:<API token>)        ("Basic auth for REST APIs")
 *   whoAmI      GET  /rest/api/3/myself → { accountId, displayName }            ("Myself")
 *   createIssue POST /rest/api/3/issue { fields: { project: { key }, summary, description: ADF, issuetype: { name }, labels } }
 *               → 201 { id, key, self }                                          ("Issues: Create issue")
 *   updateIssue PUT  /rest/api/3/issue/{key} { fields: { summary, description } } → 204   ("Edit issue")
 *   addComment  POST /rest/api/3/issue/{key}/comment { body: ADF } → 201        ("Issue comments: Add comment")
 *   readIssue   GET  /rest/api/3/issue/{key}?fields=status,summary → fields.status { name, statusCategory { key } }
 *   rate limit  429 with Retry-After (seconds)                                   ("Rate limiting")
 *   webhooks    admin webhooks with a secret: X-Hub-Signature: sha256=<hex HMAC-SHA256 of the raw body>;
 *               X-Atlassian-Webhook-Identifier: the delivery's id (the same on retries); body { webhookEvent,
 *               user { accountId }, issue { key, fields { status } }, changelog { items [{ field, fieldId,
 *               fromString, toString }] } }                                     ("Webhooks", "Secure admin webhooks")
 */
import { TrackerError, type IssueDraft, type TrackedIssue, type TrackerAdapter, type TrackerIdentity, type TrackerNews, type TrackerState, type TrackerTarget } from './adapter'
import { markdownToAdf } from './adf'
import { constantTimeEqual, deliveryIdOf, hmacHex, obj, send, str, type Answer, type Call } from './saas-http'

/**
 * The issue type fixloop creates. A project without it (Jira Work Management projects have Task but no
 * Bug) answers 400 with errors.issuetype; the push is then retried once as FALLBACK_ISSUE_TYPE.
 */
export const ISSUE_TYPE = 'Bug'
export const FALLBACK_ISSUE_TYPE = 'Task'

/** Status names in Jira's "done" category that mean the work was not done (Jira ships "Won't Do"). */
const CANCELED_NAMES = /\b(won'?t (do|fix)|cancel+ed|declined|rejected|obsolete|invalid|not a bug|duplicate)\b/i

/**
 * Jira's status, normalized: the status category (new | indeterminate | done) is the fallback every
 * workflow has; a done-category status named like a refusal ("Won't Do", "Declined") is canceled.
 */
export function jiraState(name: string, categoryKey: string | null): TrackerState {
  if (categoryKey === 'done') return { name, category: CANCELED_NAMES.test(name) ? 'canceled' : 'done' }
  return { name, category: 'open' }
}

/** A project key (PROJ) or an issue key (PROJ-7): letters, digits, underscores; bounded. */
const PROJECT_KEY = /^[A-Za-z][A-Za-z0-9_]{0,254}$/
const ISSUE_KEY = /^[A-Za-z][A-Za-z0-9_]{0,254}-\d{1,12}$/

function base(t: TrackerTarget): string {
  return t.apiUrl.replace(/\/+$/, '')
}

function credentials(t: TrackerTarget): { header: string; secrets: string[] } {
  if (!t.account) throw new TrackerError('unauthorized', 'Jira needs the account e-mail the API token belongs to (Basic auth is e-mail:token)')
  const basic = Buffer.from(`${t.account}:${t.token}`).toString('base64')
  return { header: `Basic ${basic}`, secrets: [t.token, basic] }
}

function call(t: TrackerTarget, doing: string, method: Call['method'], path: string, body: unknown, signal?: AbortSignal): Promise<Answer> {
  const auth = credentials(t)
  return send({ vendor: 'Jira', doing, url: `${base(t)}${path}`, method, headers: { authorization: auth.header }, body, secrets: auth.secrets, signal, addresses: t.addresses, timeoutMs: t.timeoutMs, budget: t.budget })
}

function issuePath(issueId: string): string {
  if (!ISSUE_KEY.test(issueId) && !/^\d{1,18}$/.test(issueId)) throw new TrackerError('not_found', 'not a Jira issue key')
  return `/rest/api/3/issue/${encodeURIComponent(issueId)}`
}

/** Jira labels may not contain spaces: each whitespace run becomes a dash; bounded to Jira's 255. */
export function jiraLabels(labels: string[]): string[] {
  const out = labels.map((l) => l.trim().replace(/\s+/g, '-').slice(0, 255)).filter(Boolean)
  return [...new Set(out)]
}

/** Jira's summary is one line of at most 255 characters. */
const summary = (title: string) => {
  const line = title.replace(/[\x00-\x1f\x7f]+/g, ' ').trim()
  return line.length > 255 ? `${line.slice(0, 254)}…` : line || 'fixloop report'
}

function issueTypeRefused(json: unknown): boolean {
  return obj(obj(json)?.errors)?.issuetype !== undefined
}

function trackedOf(t: TrackerTarget, json: unknown, fallbackKey: string): TrackedIssue {
  const b = obj(json)
  const key = str(b?.key) ?? fallbackKey
  const status = obj(obj(b?.fields)?.status)
  const name = str(status?.name) ?? ''
  return { id: key, key, url: `${base(t)}/browse/${encodeURIComponent(key)}`, state: jiraState(name, str(obj(status?.statusCategory)?.key)) }
}

async function readIssue(t: TrackerTarget, issueId: string, signal?: AbortSignal): Promise<TrackedIssue> {
  const a = await call(t, `reading issue ${issueId}`, 'GET', `${issuePath(issueId)}?fields=status,summary`, undefined, signal)
  return trackedOf(t, a.json, issueId)
}

async function createIssue(t: TrackerTarget, draft: IssueDraft, signal?: AbortSignal): Promise<TrackedIssue> {
  if (!PROJECT_KEY.test(t.project)) throw new TrackerError('rejected', 'the Jira project must be a project key (letters, digits, underscores)')
  const fields = (issueType: string) => ({
    fields: { project: { key: t.project }, summary: summary(draft.title), description: markdownToAdf(draft.body), issuetype: { name: issueType }, labels: jiraLabels(draft.labels) },
  })
  let a: Answer
  try {
    a = await call(t, 'creating the issue', 'POST', '/rest/api/3/issue', fields(ISSUE_TYPE), signal)
  } catch (e) {
    if (!(e instanceof TrackerError && e.status === 400 && /issuetype/.test(e.message))) throw e
    a = await call(t, 'creating the issue', 'POST', '/rest/api/3/issue', fields(FALLBACK_ISSUE_TYPE), signal)
  }
  const key = str(obj(a.json)?.key)
  if (!key || !ISSUE_KEY.test(key)) throw new TrackerError('rejected', `Jira API answered ${a.status} without an issue key`, a.status)
  // The create answer carries no status: read it once (a new issue's first status is the workflow's own).
  // Optional: when it fails, or is not started because it would end past the job's time (OutOfJobTime,
  // after a create and a retry as FALLBACK_ISSUE_TYPE), the issue is linked without its status name, and
  // the next poll or webhook brings it. The retry above is not optional: OutOfJobTime there ends the push's run.
  try {
    return await readIssue(t, key, signal)
  } catch {
    return { id: key, key, url: `${base(t)}/browse/${key}`, state: { name: '', category: 'open' } }
  }
}

export const jiraAdapter: TrackerAdapter = {
  kind: 'jira',

  async whoAmI(t, signal): Promise<TrackerIdentity> {
    const a = await call(t, 'reading the token\u2019s account', 'GET', '/rest/api/3/myself', undefined, signal)
    const b = obj(a.json)
    const actor = str(b?.accountId)
    if (!actor) throw new TrackerError('rejected', `Jira API answered ${a.status} without an accountId`, a.status)
    return { actor, displayName: str(b?.displayName) ?? actor }
  },

  createIssue,

  async updateIssue(t, issueId, draft, signal) {
    await call(t, `updating issue ${issueId}`, 'PUT', issuePath(issueId), { fields: { summary: summary(draft.title), description: markdownToAdf(draft.body) } }, signal)
  },

  async addComment(t, issueId, body, signal) {
    await call(t, `commenting on issue ${issueId}`, 'POST', `${issuePath(issueId)}/comment`, { body: markdownToAdf(body) }, signal)
  },

  readIssue,

  verifyWebhook(headers, raw, secret) {
    const given = headers.get('x-hub-signature')
    return given !== null && secret.length > 0 && constantTimeEqual(given.trim().toLowerCase(), `sha256=${hmacHex(secret, raw)}`)
  },

  parseWebhook(headers, body, raw): TrackerNews | null {
    try {
      return jiraNews(headers, body, raw)
    } catch {
      return null
    }
  },
}

/** Changelog entries read at most (Jira sends one per changed field). */
const CHANGELOG_MAX = 100

function jiraNews(headers: Headers, body: unknown, raw: Uint8Array): TrackerNews | null {
  const b = obj(body)
  const event = str(b?.webhookEvent)
  if (event !== 'jira:issue_updated' && event !== 'jira:issue_deleted') return null
  const issue = obj(b?.issue)
  const key = str(issue?.key)
  if (!key || !ISSUE_KEY.test(key)) return null
  const status = obj(obj(issue?.fields)?.status)
  const actor = str(obj(b?.user)?.accountId)
  const deliveryId = deliveryIdOf(headers.get('x-atlassian-webhook-identifier'), raw)
  const current = str(status?.name)
  const currentState = current ? jiraState(current, str(obj(status?.statusCategory)?.key)) : null
  // The project: fields.project.key when the payload has it, else the issue key's prefix (PROJ of PROJ-7).
  const projects = [...new Set([str(obj(obj(issue?.fields)?.project)?.key), key.slice(0, key.lastIndexOf('-'))].filter((p): p is string => !!p))]
  if (event === 'jira:issue_deleted') return { issueId: key, state: currentState ?? { name: '', category: 'open' }, actor, deliveryId, deleted: true, projects }
  // An update matters when it changed the status; an edit of the summary (fixloop's own) does not.
  const items = obj(b?.changelog)?.items
  if (!Array.isArray(items)) return null
  const change = items.slice(0, CHANGELOG_MAX).map(obj).find((i) => i && (i.fieldId === 'status' || i.field === 'status'))
  if (!change) return null
  // issue.fields.status is the status after the change, with its category; toString names it when the
  // payload's issue is trimmed (the category is then guessed from the name, and the sync's poll corrects it).
  const state = currentState ?? jiraState(str(change.toString) ?? '', /^(done|closed|resolved)$/i.test(str(change.toString) ?? '') ? 'done' : null)
  if (!state.name) return null
  return { issueId: key, state, actor, deliveryId, projects }
}
