/**
 * A strict local stand-in for Linear's GraphQL API (the operations fixloop's adapter runs) and its webhooks.
 * Linear cannot run here, so this answers like it (linear.app/developers: "GraphQL API", "Rate limiting",
 * "Webhooks"): POST /graphql only, a JSON body { query, variables }, the personal API key sent as is (or an
 * OAuth token as "Bearer …"; anything else is HTTP 400 with AUTHENTICATION_ERROR), GraphQL errors in
 * `errors[].extensions` (validation failures with HTTP 400, "Entity not found" as INVALID_INPUT, RATELIMITED
 * with HTTP 400 and X-RateLimit-Requests-Reset in epoch ms). It is no GraphQL engine: it recognises each
 * operation by its root field and checks the declared variable types and the input objects' fields against
 * Linear's schema (IssueCreateInput, IssueUpdateInput, CommentCreateInput) — an unknown input field is a
 * validation error, as on Linear.
 *
 * Issues live in memory; `setState` and `remove` change one as a person on Linear would and send the
 * real-shaped delivery (type Issue, action update with updatedFrom.stateId / remove), signed with
 * Linear-Signature: <hex HMAC-SHA256> (or forged / unsigned / old when asked).
 *
 * Configure fixloop with apiUrl = stub.url, token = stub.apiKey, project = stub.teamId.
 */
import { createHmac, randomUUID } from 'node:crypto'

export interface LinearIssue {
  id: string
  identifier: string
  teamId: string
  title: string
  description: string
  labelIds: string[]
  stateId: string
  comments: string[]
}
export interface StubRequest { headers: Record<string, string>; body: string; status: number }
export interface SendOpts { secret?: string; sign?: boolean; id?: string; actor?: string; timestamp?: number }
export interface Sent { status: number; text: string; id: string; body: string; headers: Record<string, string> }

export const STATES = [
  { id: 'a1b2c3d4-0000-4000-8000-000000000001', name: 'Backlog', type: 'backlog' },
  { id: 'a1b2c3d4-0000-4000-8000-000000000002', name: 'Todo', type: 'unstarted' },
  { id: 'a1b2c3d4-0000-4000-8000-000000000003', name: 'In Progress', type: 'started' },
  { id: 'a1b2c3d4-0000-4000-8000-000000000004', name: 'Done', type: 'completed' },
  { id: 'a1b2c3d4-0000-4000-8000-000000000005', name: 'Canceled', type: 'canceled' },
  // A team's own workflow (Linear lets a team add states of any type): Triage, where new issues land;
  // "In Review" and "Shipped" (deployed, not yet confirmed) as started-type states before Done. fixloop's
  // defaults read all three as open; a connection's state mapping says otherwise (docs/trackers.md).
  { id: 'a1b2c3d4-0000-4000-8000-000000000006', name: 'Triage', type: 'triage' },
  { id: 'a1b2c3d4-0000-4000-8000-000000000007', name: 'In Review', type: 'started' },
  { id: 'a1b2c3d4-0000-4000-8000-000000000008', name: 'Shipped', type: 'started' },
] as const

export interface LinearStub {
  url: string
  apiKey: string
  teamId: string
  viewerId: string
  issues: Map<string, LinearIssue>
  /** Labels: a workspace label "bug", a team label "severity:high", another team's "severity:low". */
  labels: { id: string; name: string; teamId: string | null }[]
  requests: StubRequest[]
  /** The next request answers: 'ratelimited' (HTTP 400 RATELIMITED, reset in `resetInMs`), or an HTTP status. */
  failNext(what: 'ratelimited' | number, resetInMs?: number): void
  setWebhook(url: string, secret: string): void
  setState(issueId: string, stateName: (typeof STATES)[number]['name'], opts?: SendOpts): Promise<Sent | null>
  remove(issueId: string, opts?: SendOpts): Promise<Sent | null>
  stop(): Promise<void>
}

type Obj = Record<string, unknown>
type Reply = { status: number; body: unknown; headers?: Record<string, string> }
const gqlError = (status: number, message: string, code: string, type: string, extra: Obj = {}): Reply =>
  ({ status, body: { errors: [{ message, extensions: { code, type, userError: true, userPresentableMessage: message, ...extra } }] } })
const invalid = (message: string) => gqlError(400, message, 'GRAPHQL_VALIDATION_FAILED', 'graphql error')
const notFound = (what: string) => ({ status: 200, body: { data: null, errors: [{ message: `Entity not found: ${what}`, path: [], extensions: { code: 'INVALID_INPUT', type: 'invalid input', userError: true, userPresentableMessage: `Could not find referenced ${what}.` } }] } })

/** The operation's root field and its declared variables ($name: Type). */
function parseOperation(query: string): { kind: 'query' | 'mutation'; root: string; vars: Record<string, string> } | null {
  const m = /^\s*(query|mutation)\s*(\w+)?\s*(\(([^)]*)\))?\s*\{\s*(\w+)/.exec(query)
  if (!m) return null
  const vars: Record<string, string> = {}
  for (const v of (m[4] ?? '').split(',').map(s => s.trim()).filter(Boolean)) {
    const d = /^\$(\w+)\s*:\s*([\w![\]]+)$/.exec(v)
    if (!d) return null
    vars[d[1]!] = d[2]!
  }
  return { kind: m[1] as 'query' | 'mutation', root: m[5]!, vars }
}

const ROOTS: Record<string, { kind: 'query' | 'mutation'; vars: Record<string, string> }> = {
  viewer: { kind: 'query', vars: {} },
  issueLabels: { kind: 'query', vars: { names: '[String!]' } },
  issue: { kind: 'query', vars: { id: 'String!' } },
  issueCreate: { kind: 'mutation', vars: { input: 'IssueCreateInput!' } },
  issueUpdate: { kind: 'mutation', vars: { id: 'String!', input: 'IssueUpdateInput!' } },
  commentCreate: { kind: 'mutation', vars: { input: 'CommentCreateInput!' } },
}
const INPUT_FIELDS: Record<string, Set<string>> = {
  IssueCreateInput: new Set(['teamId', 'title', 'description', 'labelIds', 'priority', 'stateId', 'assigneeId', 'projectId']),
  IssueUpdateInput: new Set(['title', 'description', 'labelIds', 'stateId', 'priority']),
  CommentCreateInput: new Set(['issueId', 'body']),
}

export async function startLinearStub(opts: { apiKey?: string } = {}): Promise<LinearStub> {
  const apiKey = opts.apiKey ?? 'lin_api_stubSecretKey0123456789abcdef'
  const teamId = '9cfb482a-81e3-4154-b5b9-2c805e70a02d'
  const viewerId = 'f2b0c7e1-1111-4aaa-8bbb-0123456789ab'
  const issues = new Map<string, LinearIssue>()
  const labels = [
    { id: 'b0000000-0000-4000-8000-000000000001', name: 'bug', teamId: null },
    { id: 'b0000000-0000-4000-8000-000000000002', name: 'severity:high', teamId },
    { id: 'b0000000-0000-4000-8000-000000000003', name: 'severity:low', teamId: 'ffffffff-0000-4000-8000-000000000000' },
  ]
  const requests: StubRequest[] = []
  const failures: { what: 'ratelimited' | number; resetInMs?: number }[] = []
  let hook: { url: string; secret: string } | null = null
  let n = 0
  let base = ''

  const find = (id: unknown) => (typeof id === 'string' ? (issues.get(id) ?? [...issues.values()].find(i => i.identifier === id)) : undefined)
  const stateOf = (i: LinearIssue) => STATES.find(s => s.id === i.stateId)!
  const view = (i: LinearIssue) => ({ id: i.id, identifier: i.identifier, url: `https://linear.app/acme/issue/${i.identifier}/fixloop`, state: { name: stateOf(i).name, type: stateOf(i).type } })

  function handle(req: Request, raw: string): Reply {
    const f = failures.shift()
    if (f) {
      if (f.what === 'ratelimited') return { ...gqlError(400, 'Rate limit exceeded', 'RATELIMITED', 'ratelimited'), headers: { 'x-ratelimit-requests-reset': String(Date.now() + (f.resetInMs ?? 5000)), 'x-ratelimit-requests-remaining': '0' } }
      return { status: f.what, body: { errors: [{ message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } }] } }
    }
    if (req.method !== 'POST' || new URL(req.url).pathname !== '/graphql') return { status: 404, body: { errors: [{ message: 'Not found' }] } }
    const auth = req.headers.get('authorization') ?? ''
    if (auth !== apiKey && auth !== `Bearer ${apiKey}`.replace('lin_api_', 'lin_oauth_')) return gqlError(400, 'Authentication required, not authenticated', 'AUTHENTICATION_ERROR', 'authentication error', { statusCode: 401 })
    if (!/^application\/json\s*(;|$)/i.test(req.headers.get('content-type') ?? '')) return invalid('Must provide query string.')
    let body: Obj
    try { body = JSON.parse(raw) } catch { return invalid('Unexpected token in JSON') }
    if (typeof body?.query !== 'string') return invalid('Must provide query string.')
    const variables = (body.variables ?? {}) as Obj
    if (typeof variables !== 'object' || Array.isArray(variables)) return invalid('Variables must be provided as an Object.')
    const op = parseOperation(body.query)
    const spec = op && ROOTS[op.root]
    if (!op || !spec || spec.kind !== op.kind) return invalid(`Cannot query field "${op?.root ?? '?'}"`)
    if (JSON.stringify(op.vars) !== JSON.stringify(spec.vars)) return invalid(`Variable types do not match the schema for ${op.root}`)
    for (const [name, type] of Object.entries(spec.vars)) {
      const v = variables[name]
      if (type.endsWith('!') && (v === undefined || v === null)) return invalid(`Variable "$${name}" of required type "${type}" was not provided.`)
      const input = INPUT_FIELDS[type.replace('!', '')]
      if (input) {
        if (typeof v !== 'object' || v === null || Array.isArray(v)) return invalid(`Variable "$${name}" got invalid value; expected an object`)
        for (const k of Object.keys(v)) if (!input.has(k)) return invalid(`Variable "$${name}" got invalid value; Field "${k}" is not defined by type "${type.replace('!', '')}".`)
      } else if (type === 'String!' && typeof v !== 'string') return invalid(`Variable "$${name}" got invalid value; String cannot represent a non string value`)
    }
    switch (op.root) {
      case 'viewer':
        return { status: 200, body: { data: { viewer: { id: viewerId, name: 'fixloop bot' } } } }
      case 'issueLabels': {
        const names = variables.names as string[] | undefined
        return { status: 200, body: { data: { issueLabels: { nodes: labels.filter(l => !names || names.includes(l.name)).map(l => ({ id: l.id, name: l.name, team: l.teamId ? { id: l.teamId } : null })) } } } }
      }
      case 'issue': {
        const i = find(variables.id)
        return i ? { status: 200, body: { data: { issue: view(i) } } } : notFound('Issue')
      }
      case 'issueCreate': {
        const input = variables.input as Obj
        if (input.teamId !== teamId) return notFound('Team')
        if (typeof input.title !== 'string' || !input.title.trim()) return gqlError(400, 'Argument Validation Error', 'INVALID_INPUT', 'invalid input', { validationErrors: [{ property: 'title', constraints: { isNotEmpty: 'title should not be empty' } }] })
        if (input.description !== undefined && typeof input.description !== 'string') return invalid('description must be a String')
        const labelIds = (input.labelIds ?? []) as unknown[]
        if (!Array.isArray(labelIds) || labelIds.some(id => !labels.some(l => l.id === id && (l.teamId === null || l.teamId === teamId)))) return notFound('IssueLabel')
        n++
        const issue: LinearIssue = { id: randomUUID(), identifier: `ENG-${n}`, teamId, title: input.title, description: (input.description as string) ?? '', labelIds: labelIds as string[], stateId: STATES[1].id, comments: [] }
        issues.set(issue.id, issue)
        return { status: 200, body: { data: { issueCreate: { success: true, issue: view(issue) } } } }
      }
      case 'issueUpdate': {
        const i = find(variables.id)
        if (!i) return notFound('Issue')
        const input = variables.input as Obj
        if (input.title !== undefined) { if (typeof input.title !== 'string' || !input.title.trim()) return invalid('title must be a non-empty String'); i.title = input.title }
        if (input.description !== undefined) { if (typeof input.description !== 'string') return invalid('description must be a String'); i.description = input.description }
        return { status: 200, body: { data: { issueUpdate: { success: true } } } }
      }
      case 'commentCreate': {
        const input = variables.input as Obj
        const i = find(input.issueId)
        if (!i) return notFound('Issue')
        if (typeof input.body !== 'string' || !input.body) return invalid('body must be a non-empty String')
        i.comments.push(input.body)
        return { status: 200, body: { data: { commentCreate: { success: true } } } }
      }
    }
    return invalid('unknown operation')
  }

  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const raw = await req.text()
      const r = handle(req, raw)
      requests.push({ headers: Object.fromEntries(req.headers), body: raw, status: r.status })
      return new Response(JSON.stringify(r.body), { status: r.status, headers: { 'content-type': 'application/json; charset=utf-8', ...(r.headers ?? {}) } })
    },
  })
  base = `http://127.0.0.1:${server.port}`

  async function send(action: 'update' | 'remove', i: LinearIssue, from: string | null, o: SendOpts = {}): Promise<Sent | null> {
    if (!hook) return null
    const st = stateOf(i)
    const payload = {
      action, type: 'Issue', createdAt: new Date().toISOString(),
      actor: { id: o.actor ?? 'e5d4c3b2-2222-4ccc-8ddd-0123456789ab', name: 'Dana Triager', type: 'user' },
      data: { id: i.id, identifier: i.identifier, title: i.title, teamId: i.teamId, stateId: i.stateId, state: { id: st.id, name: st.name, type: st.type, color: '#5e6ad2' }, labelIds: i.labelIds, updatedAt: new Date().toISOString() },
      ...(action === 'update' ? { updatedFrom: { stateId: from, updatedAt: new Date().toISOString() } } : {}),
      url: view(i).url, organizationId: 'org-0001', webhookTimestamp: o.timestamp ?? Date.now(), webhookId: 'wh-0001',
    }
    const body = JSON.stringify(payload)
    const id = o.id ?? randomUUID()
    const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', 'linear-delivery': id, 'linear-event': 'Issue', 'user-agent': 'Linear-Webhook' }
    if (o.sign !== false) headers['linear-signature'] = createHmac('sha256', o.secret ?? hook.secret).update(body).digest('hex')
    const res = await fetch(hook.url, { method: 'POST', headers, body })
    return { status: res.status, text: await res.text(), id, body, headers }
  }

  return {
    url: base, apiKey, teamId, viewerId, issues, labels, requests,
    failNext: (what, resetInMs) => { failures.push({ what, resetInMs }) },
    setWebhook: (url, secret) => { hook = { url, secret } },
    async setState(issueId, name, o) {
      const i = find(issueId)
      if (!i) throw new Error(`no issue ${issueId}`)
      const from = i.stateId
      i.stateId = STATES.find(s => s.name === name)!.id
      return send('update', i, from, o)
    },
    async remove(issueId, o) {
      const i = find(issueId)
      if (!i) throw new Error(`no issue ${issueId}`)
      issues.delete(i.id)
      return send('remove', i, null, o)
    },
    stop: async () => { server.stop(true) },
  }
}
