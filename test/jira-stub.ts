/**
 * A strict local stand-in for Jira Cloud's REST API v3 (the endpoints fixloop's adapter calls) and its
 * admin webhooks. Jira Cloud cannot run here, so this answers like it (developer.atlassian.com, "The Jira
 * Cloud platform REST API" v3, "Webhooks"): Basic auth of e-mail:API token (401 with Jira's plain-text
 * message otherwise), JSON only (415), the create-issue field checks with Jira's 400 body
 * `{ errorMessages, errors: { <field>: message } }`, descriptions and comments that must be Atlassian
 * Document Format (a markdown string is refused as Jira refuses it), labels without spaces, 404 with
 * "Issue does not exist or you do not have permission to see it.", and 429 with Retry-After when told.
 *
 * Issues live in memory; `setStatus` and `remove` change one as a person on Jira would and send the
 * real-shaped delivery (jira:issue_updated with a status changelog item, jira:issue_deleted), signed with
 * X-Hub-Signature: sha256=<hex HMAC-SHA256> (or forged / unsigned when asked).
 *
 * Configure fixloop with apiUrl = stub.url, account = stub.email, token = stub.token, project = 'PROJ'.
 */
import { createHmac, randomUUID } from 'node:crypto'

export interface JiraIssue {
  id: string
  key: string
  project: string
  summary: string
  description: unknown
  issueType: string
  labels: string[]
  status: { name: string; category: 'new' | 'indeterminate' | 'done' }
  comments: unknown[]
}
export interface StubRequest { method: string; path: string; headers: Record<string, string>; body: string; status: number }

export interface JiraStub {
  url: string
  email: string
  token: string
  /** The token's account (what /myself answers and what webhooks name as the actor of fixloop's own writes). */
  accountId: string
  issues: Map<string, JiraIssue>
  requests: StubRequest[]
  /** The next request (any) answers `status` (429 → with Retry-After: `retryAfter` seconds); calls queue up. */
  failNext(status: number, retryAfter?: number): void
  /**
   * A slow Jira: every call on an issue (create, edit, comment, read; not /myself) is done at once and
   * answered `ms` later (0: at once, the default). The requests of such calls are in `arrived` as they come in.
   */
  answerIssueCallsAfter(ms: number): void
  /** Every request as it arrives (`requests` records it once answered). */
  arrived: { method: string; path: string; at: number }[]
  /** Where admin webhooks go, with the secret configured on the webhook. */
  setWebhook(url: string, secret: string): void
  /** A person moves the issue to a status; the delivery is sent when a webhook is set. */
  setStatus(key: string, name: string, category: JiraIssue['status']['category'], opts?: SendOpts): Promise<Sent | null>
  /** A person deletes the issue; the delivery is sent when a webhook is set. */
  remove(key: string, opts?: SendOpts): Promise<Sent | null>
  stop(): Promise<void>
}
export interface SendOpts { secret?: string; sign?: boolean; id?: string; actor?: string }
export interface Sent { status: number; text: string; id: string; body: string; headers: Record<string, string> }

const PROJECTS: Record<string, { id: string; issueTypes: string[] }> = {
  PROJ: { id: '10000', issueTypes: ['Bug', 'Task', 'Story'] },
  // A Jira Work Management project: no Bug type.
  BIZ: { id: '10001', issueTypes: ['Task'] },
}
const STATUS_IDS: Record<string, string> = { 'To Do': '10000', 'In Progress': '3', Done: '10001', "Won't Do": '10002' }

// ADF node types and marks Jira accepts (developer.atlassian.com/cloud/jira/platform/apis/document/structure/).
const BLOCKS = new Set(['paragraph', 'heading', 'bulletList', 'orderedList', 'listItem', 'codeBlock', 'blockquote', 'rule', 'panel', 'table', 'mediaSingle'])
const INLINES = new Set(['text', 'hardBreak', 'mention', 'emoji', 'inlineCard'])
const MARKS = new Set(['strong', 'em', 'code', 'link', 'strike', 'underline', 'subsup', 'textColor'])

/** Why `v` is not an ADF document, or null. */
export function adfProblem(v: unknown, depth = 0): string | null {
  if (depth === 0) {
    const d = v as Record<string, unknown>
    if (!d || typeof d !== 'object' || Array.isArray(d) || d.type !== 'doc' || d.version !== 1 || !Array.isArray(d.content)) return 'Operation value must be an Atlassian Document (see the Atlassian Document Format)'
    for (const n of d.content) { const p = adfProblem(n, 1); if (p) return p }
    return null
  }
  if (depth > 20) return 'ADF nested too deep'
  const n = v as Record<string, unknown>
  if (!n || typeof n !== 'object' || typeof n.type !== 'string') return 'ADF node without a type'
  if (!BLOCKS.has(n.type) && !INLINES.has(n.type)) return `ADF: unknown node type ${n.type}`
  if (n.type === 'text') {
    if (typeof n.text !== 'string' || n.text.length === 0) return 'ADF: a text node must have non-empty text'
    if (n.marks !== undefined) {
      if (!Array.isArray(n.marks)) return 'ADF: marks must be an array'
      for (const m of n.marks as Record<string, unknown>[]) {
        if (!MARKS.has(String(m?.type))) return `ADF: unknown mark ${m?.type}`
        if (m.type === 'link' && typeof (m.attrs as Record<string, unknown>)?.href !== 'string') return 'ADF: a link needs attrs.href'
      }
    }
    return null
  }
  if (n.type === 'heading') {
    const level = (n.attrs as Record<string, unknown>)?.level
    if (typeof level !== 'number' || level < 1 || level > 6) return 'ADF: heading needs attrs.level 1-6'
  }
  if (n.content !== undefined) {
    if (!Array.isArray(n.content)) return 'ADF: content must be an array'
    for (const c of n.content) { const p = adfProblem(c, depth + 1); if (p) return p }
  }
  return null
}

type Reply = { status: number; body?: unknown; text?: string; headers?: Record<string, string> }
const json = (status: number, body?: unknown): Reply => ({ status, body })
const errors = (status: number, errs: Record<string, string>, messages: string[] = []): Reply => json(status, { errorMessages: messages, errors: errs })
const NO_ISSUE = errors(404, {}, ['Issue does not exist or you do not have permission to see it.'])

export async function startJiraStub(opts: { email?: string; token?: string } = {}): Promise<JiraStub> {
  const email = opts.email ?? 'bot@acme.example'
  const token = opts.token ?? 'ATATT3xFfGF0-jira-secret-token-123'
  const accountId = '5b10ac8d82e05b22cc7d4ef5'
  const issues = new Map<string, JiraIssue>()
  const requests: StubRequest[] = []
  const failures: { status: number; retryAfter?: number }[] = []
  const arrived: { method: string; path: string; at: number }[] = []
  let issueCallMs = 0
  let hook: { url: string; secret: string } | null = null
  let next = 1
  let base = ''

  const view = (i: JiraIssue) => ({
    id: i.id, key: i.key, self: `${base}/rest/api/3/issue/${i.id}`,
    fields: { summary: i.summary, project: { self: `${base}/rest/api/3/project/${PROJECTS[i.project]?.id}`, id: PROJECTS[i.project]?.id, key: i.project, name: i.project }, status: { self: `${base}/rest/api/3/status/${STATUS_IDS[i.status.name] ?? '1'}`, name: i.status.name, id: STATUS_IDS[i.status.name] ?? '1', statusCategory: { key: i.status.category, name: { new: 'To Do', indeterminate: 'In Progress', done: 'Done' }[i.status.category] } } },
  })

  async function handle(req: Request, raw: string): Promise<Reply> {
    const f = failures.shift()
    if (f) return f.status === 429 ? { status: 429, text: 'Rate limit exceeded.', headers: { 'retry-after': String(f.retryAfter ?? 1) } } : json(f.status, { errorMessages: ['Internal server error'], errors: {} })
    const expected = `Basic ${Buffer.from(`${email}:${token}`).toString('base64')}`
    if (req.headers.get('authorization') !== expected) return { status: 401, text: 'Client must be authenticated to access this resource.' }
    const url = new URL(req.url)
    const path = url.pathname
    if (req.method === 'GET' && path === '/rest/api/3/myself') return json(200, { self: `${base}/rest/api/3/user?accountId=${accountId}`, accountId, accountType: 'atlassian', emailAddress: email, displayName: 'fixloop bot', active: true, timeZone: 'UTC' })
    if ((req.method === 'POST' || req.method === 'PUT') && !/^application\/json\s*(;|$)/i.test(req.headers.get('content-type') ?? '')) return { status: 415, text: 'Unsupported Media Type' }
    let body: Record<string, unknown> = {}
    if (req.method !== 'GET') {
      try { body = JSON.parse(raw) } catch { return errors(400, {}, ['Unexpected character: was expecting a JSON value']) }
      if (!body || typeof body !== 'object' || Array.isArray(body)) return errors(400, {}, ['Can not deserialize instance'])
    }
    if (req.method === 'POST' && path === '/rest/api/3/issue') return create(body)
    const m = /^\/rest\/api\/3\/issue\/([^/]+)(\/comment)?$/.exec(path)
    if (!m) return errors(404, {}, ['Not found'])
    const key = decodeURIComponent(m[1]!)
    const issue = issues.get(key) ?? [...issues.values()].find(i => i.id === key)
    if (!issue) return NO_ISSUE
    if (m[2]) {
      if (req.method !== 'POST') return { status: 405, text: 'Method Not Allowed' }
      const p = adfProblem(body.body)
      if (p) return errors(400, { comment: p })
      issue.comments.push(body.body)
      return json(201, { id: String(issue.comments.length), body: body.body, author: { accountId } })
    }
    if (req.method === 'GET') return json(200, view(issue))
    if (req.method !== 'PUT') return { status: 405, text: 'Method Not Allowed' }
    const fields = body.fields as Record<string, unknown>
    if (!fields || typeof fields !== 'object') return errors(400, {}, ['Can not deserialize instance'])
    for (const k of Object.keys(fields)) if (k !== 'summary' && k !== 'description') return errors(400, { [k]: `Field '${k}' cannot be set. It is not on the appropriate screen, or unknown.` })
    if (fields.summary !== undefined && (typeof fields.summary !== 'string' || !fields.summary.trim() || fields.summary.length > 255)) return errors(400, { summary: 'Summary must be less than 255 characters.' })
    if (fields.description !== undefined) { const p = adfProblem(fields.description); if (p) return errors(400, { description: p }) }
    if (typeof fields.summary === 'string') issue.summary = fields.summary
    if (fields.description !== undefined) issue.description = fields.description
    return { status: 204 }
  }

  function create(body: Record<string, unknown>): Reply {
    const fields = body.fields as Record<string, unknown>
    if (!fields || typeof fields !== 'object' || Array.isArray(fields)) return errors(400, {}, ['Can not deserialize instance'])
    const errs: Record<string, string> = {}
    const allowed = new Set(['project', 'summary', 'description', 'issuetype', 'labels'])
    for (const k of Object.keys(fields)) if (!allowed.has(k)) errs[k] = `Field '${k}' cannot be set. It is not on the appropriate screen, or unknown.`
    const projectKey = (fields.project as Record<string, unknown>)?.key
    const project = typeof projectKey === 'string' ? PROJECTS[projectKey] : undefined
    if (!project) errs.project = 'valid project is required'
    if (typeof fields.summary !== 'string' || !fields.summary.trim()) errs.summary = 'You must specify a summary of the issue.'
    else if (fields.summary.length > 255 || /[\r\n]/.test(fields.summary)) errs.summary = 'Summary must be less than 255 characters.'
    const typeName = (fields.issuetype as Record<string, unknown>)?.name
    if (project && (typeof typeName !== 'string' || !project.issueTypes.includes(typeName))) errs.issuetype = 'Specify a valid issue type'
    if (fields.description !== undefined) { const p = adfProblem(fields.description); if (p) errs.description = p }
    if (fields.labels !== undefined && (!Array.isArray(fields.labels) || fields.labels.some(l => typeof l !== 'string' || /\s/.test(l) || l.length > 255))) errs.labels = 'The label must not contain spaces.'
    if (Object.keys(errs).length) return errors(400, errs)
    const n = next++
    const key = `${projectKey}-${n}`
    const issue: JiraIssue = { id: String(10000 + n), key, project: projectKey as string, summary: fields.summary as string, description: fields.description, issueType: typeName as string, labels: (fields.labels as string[]) ?? [], status: { name: 'To Do', category: 'new' }, comments: [] }
    issues.set(key, issue)
    return json(201, { id: issue.id, key, self: `${base}/rest/api/3/issue/${issue.id}` })
  }

  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname
      arrived.push({ method: req.method, path, at: performance.now() })
      const raw = await req.text()
      const r = await handle(req, raw)
      if (issueCallMs > 0 && path.startsWith('/rest/api/3/issue')) await Bun.sleep(issueCallMs)
      const headers: Record<string, string> = { ...(r.headers ?? {}) }
      const text = r.body !== undefined ? JSON.stringify(r.body) : (r.text ?? '')
      headers['content-type'] = r.body !== undefined ? 'application/json;charset=UTF-8' : 'text/plain;charset=UTF-8'
      requests.push({ method: req.method, path: new URL(req.url).pathname + new URL(req.url).search, headers: Object.fromEntries(req.headers), body: raw, status: r.status })
      return new Response(r.status === 204 ? null : text, { status: r.status, headers })
    },
  })
  base = `http://127.0.0.1:${server.port}`

  async function send(payload: unknown, o: SendOpts = {}): Promise<Sent | null> {
    if (!hook) return null
    const body = JSON.stringify(payload)
    const id = o.id ?? randomUUID()
    const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', 'x-atlassian-webhook-identifier': id, 'user-agent': 'Atlassian Webhook HTTP Client' }
    if (o.sign !== false) headers['x-hub-signature'] = `sha256=${createHmac('sha256', o.secret ?? hook.secret).update(body).digest('hex')}`
    const res = await fetch(hook.url, { method: 'POST', headers, body })
    return { status: res.status, text: await res.text(), id, body, headers }
  }
  const user = (o?: SendOpts) => ({ self: `${base}/rest/api/2/user?accountId=${o?.actor ?? '60c1f3a2b4d5e6f7a8b9c0d1'}`, accountId: o?.actor ?? '60c1f3a2b4d5e6f7a8b9c0d1', displayName: 'Dana Triager', active: true, accountType: 'atlassian' })

  return {
    url: base, email, token, accountId, issues, requests, arrived,
    failNext: (status, retryAfter) => { failures.push({ status, retryAfter }) },
    answerIssueCallsAfter: (ms) => { issueCallMs = ms },
    setWebhook: (url, secret) => { hook = { url, secret } },
    async setStatus(key, name, category, o) {
      const issue = issues.get(key)
      if (!issue) throw new Error(`no issue ${key}`)
      const from = issue.status
      issue.status = { name, category }
      return send({
        timestamp: Date.now(), webhookEvent: 'jira:issue_updated', issue_event_type_name: 'issue_generic', user: user(o),
        issue: view(issue),
        changelog: { id: String(Date.now()), items: [{ field: 'status', fieldtype: 'jira', fieldId: 'status', from: STATUS_IDS[from.name] ?? '1', fromString: from.name, to: STATUS_IDS[name] ?? '1', toString: name }] },
      }, o)
    },
    async remove(key, o) {
      const issue = issues.get(key)
      if (!issue) throw new Error(`no issue ${key}`)
      issues.delete(key)
      return send({ timestamp: Date.now(), webhookEvent: 'jira:issue_deleted', user: user(o), issue: view(issue) }, o)
    },
    stop: async () => { server.stop(true) },
  }
}
