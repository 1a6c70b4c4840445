/**
 * A stub of the issue APIs of GitHub, GitLab and Gitea/Forgejo (loopback), checking requests like the
 * real APIs do: the auth header of each (GitHub `Authorization: Bearer` with `Accept:
 * application/vnd.github+json` and `X-GitHub-Api-Version`, GitLab `PRIVATE-TOKEN`, Gitea `Authorization:
 * token`), JSON bodies with the required fields and their types (GitHub labels: names; GitLab labels: one
 * comma-separated string, `description`; Gitea labels: ids), unknown fields refused. Issues live in
 * memory; a test closes, reopens or deletes them as a person would on the tracker, and injects failures
 * (429 with Retry-After, 401, 5xx) for the next calls. Plus real-shaped, signed webhook deliveries of
 * each (`issues` events, GitLab "Issue Hook").
 *
 * Shapes: GitHub REST "Issues" (POST/PATCH/GET /repos/{owner}/{repo}/issues[/{n}], POST …/comments,
 * GET /user); GitLab REST "Issues API" and "Notes API"; Gitea API v1 (swagger: CreateIssueOption labels
 * []int64, EditIssueOption, CreateIssueCommentOption).
 */
import { createHmac, randomUUID } from 'node:crypto'

export type StubKind = 'github' | 'gitlab' | 'gitea'
export const STUB_PROJECT = 'acme/shop'
export const BOT = 'fixloop-bot'

export interface StubIssue {
  number: number
  title: string
  body: string
  labels: unknown
  state: 'open' | 'closed'
  stateReason: string | null
  comments: string[]
  deleted: boolean
}

export interface StubRequest {
  method: string
  path: string
  headers: Record<string, string>
  body: unknown
}

type Fault = { status: number; headers?: Record<string, string>; body?: unknown }

const GITEA_LABELS = [
  { id: 11, name: 'fixloop', color: '00aabb' },
  { id: 12, name: 'severity:high', color: 'ff0000' },
  { id: 13, name: 'severity:low', color: '00ff00' },
]

export interface TrackerStub {
  kind: StubKind
  url: string
  /** The apiUrl a connection gives: the stub's root plus /api/v4 (GitLab) or /api/v1 (Gitea). */
  apiUrl: string
  token: string
  issues: Map<number, StubIssue>
  requests: StubRequest[]
  faults: Fault[]
  stop(): void
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } })

/** Every key of `body` is one of `allowed`, each required one present with its type. */
function shapeProblem(body: unknown, spec: Record<string, { type: 'string' | 'string[]' | 'int[]'; required?: boolean }>): string | null {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return 'body must be a JSON object'
  const b = body as Record<string, unknown>
  for (const k of Object.keys(b)) if (!(k in spec)) return `unknown field ${k}`
  for (const [k, s] of Object.entries(spec)) {
    const v = b[k]
    if (v === undefined) {
      if (s.required) return `${k} is missing`
      continue
    }
    const ok = s.type === 'string' ? typeof v === 'string' : s.type === 'string[]' ? Array.isArray(v) && v.every((x) => typeof x === 'string') : Array.isArray(v) && v.every((x) => Number.isInteger(x))
    if (!ok) return `${k} must be ${s.type}`
  }
  if (typeof b.title === 'string' && b.title.trim() === '') return 'title is empty'
  return null
}

/** A stub of `kind` serving one repository/project, `project` (another one answers 404, as a repository the token cannot see). */
export function startTrackerStub(kind: StubKind, token = `tok-${kind}-${randomUUID()}`, project = STUB_PROJECT): TrackerStub {
  const issues = new Map<number, StubIssue>()
  const requests: StubRequest[] = []
  const faults: Fault[] = []
  let next = 1
  const prefix = kind === 'github' ? '' : kind === 'gitlab' ? '/api/v4' : '/api/v1'
  const base = kind === 'gitlab' ? `${prefix}/projects/${encodeURIComponent(project)}` : `${prefix}/repos/${project}`
  let url = ''

  function authorized(h: Headers): boolean {
    if (kind === 'github') return h.get('authorization') === `Bearer ${token}` && h.get('accept') === 'application/vnd.github+json' && h.get('x-github-api-version') === '2022-11-28'
    if (kind === 'gitlab') return h.get('private-token') === token
    return h.get('authorization') === `token ${token}`
  }
  const webUrl = (n: number) => (kind === 'gitlab' ? `${url}/${project}/-/issues/${n}` : `${url}/${project}/issues/${n}`)
  const view = (i: StubIssue) =>
    kind === 'gitlab'
      ? { id: 9000 + i.number, iid: i.number, title: i.title, description: i.body, state: i.state === 'open' ? 'opened' : 'closed', labels: i.labels, web_url: webUrl(i.number) }
      : { id: 9000 + i.number, number: i.number, title: i.title, body: i.body, state: i.state, ...(kind === 'github' ? { state_reason: i.stateReason } : {}), labels: i.labels, html_url: webUrl(i.number) }
  const notFound = () => json(404, { message: kind === 'gitlab' ? '404 Not found' : 'Not Found' })

  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const u = new URL(req.url)
      // The raw path: GitLab's project path stays percent-encoded (acme%2Fshop), as the real API expects.
      const path = req.url.slice(u.origin.length).split('?')[0]
      const text = await req.text()
      let body: unknown = undefined
      if (text !== '') {
        if (req.headers.get('content-type') !== 'application/json') return json(415, { message: 'Unsupported Media Type' })
        try {
          body = JSON.parse(text)
        } catch {
          return json(400, { message: 'Problems parsing JSON' })
        }
      }
      requests.push({ method: req.method, path, headers: Object.fromEntries(req.headers), body })
      if (!authorized(req.headers)) return json(401, { message: kind === 'gitlab' ? '401 Unauthorized' : 'Bad credentials' })
      const fault = faults.shift()
      if (fault) return json(fault.status, fault.body ?? { message: `stub fault ${fault.status}` }, fault.headers)
      if (req.method === 'GET' && path === `${prefix}/user`) {
        return json(200, kind === 'github' ? { login: BOT, id: 1, name: 'Fixloop Bot' } : kind === 'gitlab' ? { id: 1, username: BOT, name: 'Fixloop Bot' } : { id: 1, login: BOT, full_name: 'Fixloop Bot' })
      }
      if (kind === 'gitea' && req.method === 'GET' && path === `${base}/labels`) return json(200, GITEA_LABELS)
      const m = new RegExp(`^${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/issues(?:/(\\d+)(/comments|/notes)?)?$`).exec(path)
      if (!m) return notFound()
      const n = m[1] ? Number(m[1]) : null
      const issue = n === null ? undefined : issues.get(n)
      if (n === null && req.method === 'POST') {
        const problem = shapeProblem(
          body,
          kind === 'github'
            ? { title: { type: 'string', required: true }, body: { type: 'string' }, labels: { type: 'string[]' } }
            : kind === 'gitlab'
              ? { title: { type: 'string', required: true }, description: { type: 'string' }, labels: { type: 'string' } }
              : { title: { type: 'string', required: true }, body: { type: 'string' }, labels: { type: 'int[]' } },
        )
        if (problem) return json(kind === 'gitlab' ? 400 : 422, { message: problem })
        const b = body as Record<string, unknown>
        const created: StubIssue = { number: next++, title: String(b.title), body: String(b.body ?? b.description ?? ''), labels: b.labels ?? null, state: 'open', stateReason: null, comments: [], deleted: false }
        issues.set(created.number, created)
        return json(201, view(created))
      }
      if (!issue || issue.deleted) return kind === 'github' && issue?.deleted ? json(410, { message: 'This issue was deleted' }) : notFound()
      if (!m[2] && req.method === 'GET') return json(200, view(issue))
      if (!m[2] && (kind === 'gitlab' ? req.method === 'PUT' : req.method === 'PATCH')) {
        const problem = shapeProblem(body, kind === 'gitlab' ? { title: { type: 'string' }, description: { type: 'string' }, state_event: { type: 'string' } } : { title: { type: 'string' }, body: { type: 'string' }, state: { type: 'string' } })
        if (problem) return json(422, { message: problem })
        const b = body as Record<string, unknown>
        if (typeof b.title === 'string') issue.title = b.title
        const text = b.body ?? b.description
        if (typeof text === 'string') issue.body = text
        return json(200, view(issue))
      }
      if (m[2] === (kind === 'gitlab' ? '/notes' : '/comments') && req.method === 'POST') {
        const problem = shapeProblem(body, { body: { type: 'string', required: true } })
        if (problem) return json(422, { message: problem })
        issue.comments.push(String((body as { body: string }).body))
        return json(201, { id: issue.comments.length, body: (body as { body: string }).body })
      }
      return json(405, { message: 'Method Not Allowed' })
    },
  })
  url = `http://127.0.0.1:${server.port}`
  return { kind, url, apiUrl: `${url}${prefix}`, token, issues, requests, faults, stop: () => server.stop(true) }
}

export interface HookDelivery {
  headers: Record<string, string>
  body: string
}

/**
 * A real-shaped delivery about `issue`: GitHub/Gitea `issues` (action closed | reopened | deleted), GitLab
 * "Issue Hook" (object_attributes.action close | reopen), signed with `secret` the tracker's way.
 */
export function issueHook(stub: TrackerStub, action: 'closed' | 'reopened' | 'deleted', issue: StubIssue, secret: string, sender = 'maintainer', project = STUB_PROJECT): HookDelivery {
  const id = randomUUID()
  const repository = { id: 42, name: project.split('/')[1], full_name: project, html_url: `${stub.url}/${project}`, owner: { login: project.split('/')[0] } }
  if (stub.kind === 'gitlab') {
    const body = JSON.stringify({
      object_kind: 'issue',
      event_type: 'issue',
      user: { id: 5, name: 'A Maintainer', username: sender },
      project: { id: 42, name: 'shop', path_with_namespace: project, web_url: `${stub.url}/${project}` },
      object_attributes: { id: 9000 + issue.number, iid: issue.number, title: issue.title, state: action === 'closed' ? 'closed' : 'opened', action: action === 'closed' ? 'close' : 'reopen', url: `${stub.url}/${project}/-/issues/${issue.number}` },
      labels: [],
    })
    return { headers: { 'content-type': 'application/json', 'x-gitlab-event': 'Issue Hook', 'x-gitlab-token': secret, 'x-gitlab-event-uuid': id }, body }
  }
  const issueBody = {
    id: 9000 + issue.number,
    number: issue.number,
    title: issue.title,
    state: action === 'reopened' ? 'open' : 'closed',
    ...(stub.kind === 'github' ? { state_reason: action === 'closed' ? (issue.stateReason ?? 'completed') : action === 'reopened' ? 'reopened' : null } : {}),
    html_url: `${stub.url}/${project}/issues/${issue.number}`,
    user: { login: BOT },
  }
  const body = JSON.stringify({ action, ...(stub.kind === 'gitea' ? { number: issue.number } : {}), issue: issueBody, repository, sender: { login: sender, id: 5 } })
  const mac = createHmac('sha256', secret).update(body).digest('hex')
  return stub.kind === 'github'
    ? { headers: { 'content-type': 'application/json', 'x-github-event': 'issues', 'x-github-delivery': id, 'x-hub-signature-256': `sha256=${mac}` }, body }
    : { headers: { 'content-type': 'application/json', 'x-gitea-event': 'issues', 'x-gitea-delivery': id, 'x-gitea-signature': mac }, body }
}
