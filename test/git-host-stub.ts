/**
 * A strict local stand-in for the create-pull-request endpoints of GitHub, Gitea/Forgejo and GitLab, the
 * read-one-pull-request endpoints (polling), and the hosts' webhooks: `deliver` changes a pull request
 * (merge, close, reopen) or reviews it and sends the real-shaped, signed delivery (test/git-host-webhooks.ts).
 * The real hosts cannot run in tests, so this one answers like them: the same paths, auth headers, status
 * codes and error bodies, and it checks branches against a real bare repository. Anything the real host
 * would refuse, this refuses too; where the hosts are lenient in ways fixloop must not rely on (a JSON
 * body without a JSON Content-Type), this is stricter. Every request is recorded, unredacted, so tests
 * can prove where the token travelled.
 *
 * What to configure fixloop with (`stub.apiUrl`):
 *   github  `stub.url`            e.g. http://127.0.0.1:PORT         (like https://api.github.com)
 *   gitea   `stub.url + /api/v1`  e.g. http://127.0.0.1:PORT/api/v1  (`stub.url` is the server root)
 *   gitlab  `stub.url + /api/v4`  e.g. http://127.0.0.1:PORT/api/v4  (`stub.url` is the server root)
 */

export type GitHostKind = 'github' | 'gitea' | 'gitlab'
export interface StubRepo { owner: string; name: string; barePath: string }
export interface StubRequest { method: string; path: string; headers: Record<string, string>; body: unknown; status: number }
export interface CreatedPull {
  kind: GitHostKind
  repo: string
  number: number
  title: string
  head: string
  base: string
  body: string
  draft: boolean
  url: string
}
export interface GitHostStub {
  /** Server root, http://127.0.0.1:PORT (for github this is also the API base). */
  url: string
  /** The API base fixloop should be configured with: see the table at the top of this file. */
  apiUrl: string
  requests: StubRequest[]
  created: CreatedPull[]
  /**
   * Makes the next create call (POST to the create path, whatever its auth or body) answer `status`
   * without creating anything; calls queue up, one per create. The body defaults to the host's usual one.
   */
  failNext(status: number, body?: unknown): void
  /** Sets a pull request's state, as a merge, a close or a reopen on the host would (the repository's first unless `repo` says). */
  setPullState(number: number, state: PullState, repo?: string): void
  /** Makes the next read of a pull request answer `status` (e.g. 429) with `Retry-After: retryAfter` seconds; calls queue up. */
  throttleNextRead(status: number, retryAfter: number): void
  /** Where the host sends its webhooks, and the secret it signs them with (as set in the host's webhook settings). */
  setWebhook(url: string, secret: string): void
  /**
   * What the host does when a pull request changes or is reviewed: `merged`/`closed`/`reopened` set its
   * state, then (like every event) a real-shaped delivery is sent to the webhook, signed with the
   * configured secret (`opts.secret` forges it with another, `opts.sign: false` sends none). The receiver's answer.
   */
  deliver(kind: HookKind, number: number, opts?: { text?: string; secret?: string; sign?: boolean; id?: string; association?: string }): Promise<{ status: number; body: any; id: string }>
  stop(): Promise<void>
}

export type PullState = 'open' | 'closed' | 'merged'
import { delivery, type HookKind } from './git-host-webhooks'
interface Reply { status: number; body: unknown; headers?: Record<string, string> }
interface OpenPull { number: number; head: string; base: string; state?: PullState; url?: string }
interface RepoState { repo: StubRepo; id: number; pulls: OpenPull[] }
interface Ctx { req: Request; path: string[]; raw: string; base: string; repos: RepoState[]; token: string; record(p: CreatedPull): void }

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 409: 'Conflict', 415: 'Unsupported Media Type',
  422: 'Unprocessable Entity', 429: 'Too Many Requests', 500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable',
}
const GITHUB_DOCS = 'https://docs.github.com/rest/pulls/pulls#create-a-pull-request'

// ---------------------------------------------------------------- shared helpers

const reply = (status: number, body: unknown): Reply => ({ status, body })

async function git(barePath: string, args: string[]): Promise<{ ok: boolean; out: string }> {
  const proc = Bun.spawn(['git', `--git-dir=${barePath}`, ...args], { stdout: 'pipe', stderr: 'ignore' })
  const out = await new Response(proc.stdout).text()
  return { ok: (await proc.exited) === 0, out: out.trim() }
}
/** The commit a branch points at, or null. `refs/heads/` in front means a name can never read as an option. */
async function branchSha(barePath: string, branch: string): Promise<string | null> {
  const r = await git(barePath, ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}^{commit}`])
  return r.ok ? r.out : null
}
async function commitsAhead(barePath: string, base: string, head: string): Promise<number> {
  return Number((await git(barePath, ['rev-list', '--count', `refs/heads/${base}..refs/heads/${head}`])).out)
}
async function defaultBranch(barePath: string): Promise<string> {
  return (await git(barePath, ['symbolic-ref', '--short', 'HEAD'])).out
}

/** Owner and repository names are case-insensitive on all three hosts. */
const findRepo = (repos: RepoState[], owner: string, name: string) =>
  repos.find(r => r.repo.owner.toLowerCase() === owner.toLowerCase() && r.repo.name.toLowerCase() === name.toLowerCase())

function isJson(req: Request): boolean {
  return /^application\/json\s*(;|$)/i.test(req.headers.get('content-type') ?? '')
}
function parseObject(raw: string): Record<string, unknown> | null {
  try {
    const v = JSON.parse(raw)
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : null
  } catch { return null }
}
/** `Authorization: <scheme> <token>` with one of the given schemes (case-insensitive), else null. */
function schemeToken(req: Request, schemes: string[]): string | null {
  const m = /^(\S+)\s+(\S+)$/.exec(req.headers.get('authorization') ?? '')
  return m && schemes.includes(m[1]!.toLowerCase()) ? m[2]! : null
}

// ---------------------------------------------------------------- GitHub

const ghError = (status: number, message: string, errors?: unknown[]): Reply =>
  reply(status, { message, ...(errors ? { errors } : {}), documentation_url: status === 422 ? GITHUB_DOCS : 'https://docs.github.com/rest', status: String(status) })
const ghInvalid = (field: string) => ghError(422, 'Validation Failed', [{ resource: 'PullRequest', field, code: 'invalid' }])
const ghCustom = (message: string) => ghError(422, 'Validation Failed', [{ resource: 'PullRequest', code: 'custom', message }])

async function github(c: Ctx, isCreate: boolean): Promise<Reply> {
  const { req, path } = c
  if (!req.headers.get('authorization')) return ghError(401, 'Requires authentication')
  if (schemeToken(req, ['bearer', 'token']) !== c.token) return ghError(401, 'Bad credentials')
  if (path[0] !== 'repos' || !path[1] || !path[2]) return ghError(404, 'Not Found')
  const state = findRepo(c.repos, path[1], path[2])
  if (!state) return ghError(404, 'Not Found')
  const { owner, name, barePath } = state.repo

  if (path.length === 3 && req.method === 'GET') {
    return reply(200, { id: state.id, name, full_name: `${owner}/${name}`, private: true, html_url: `https://github.example/${owner}/${name}`, default_branch: await defaultBranch(barePath) })
  }
  // GET /repos/{owner}/{repo}/pulls/{pull_number} (https://docs.github.com/rest/pulls/pulls#get-a-pull-request)
  if (path.length === 5 && path[3] === 'pulls' && req.method === 'GET') {
    const pull = state.pulls.find(p => String(p.number) === path[4])
    if (!pull) return ghError(404, 'Not Found')
    const st = pull.state ?? 'open'
    return reply(200, {
      url: `${c.base}/repos/${owner}/${name}/pulls/${pull.number}`, id: state.id * 1000 + pull.number, number: pull.number, html_url: pull.url,
      state: st === 'open' ? 'open' : 'closed', merged: st === 'merged', merged_at: st === 'merged' ? '2026-11-25T01:00:00Z' : null,
      closed_at: st === 'open' ? null : '2026-11-25T01:00:00Z', draft: false, head: { ref: pull.head }, base: { ref: pull.base },
    })
  }
  if (!isCreate) return ghError(404, 'Not Found')

  if (!isJson(req)) return ghError(415, `Unsupported 'Content-Type' header: ${req.headers.get('content-type') ?? '(none)'}; send application/json`)
  const body = parseObject(c.raw)
  if (!body) return ghError(400, 'Problems parsing JSON')
  const errors: unknown[] = []
  for (const field of ['title', 'head', 'base']) {
    const v = body[field]
    if (v === undefined || v === null || (typeof v === 'string' && v.trim() === '')) errors.push({ resource: 'PullRequest', field, code: 'missing_field' })
    else if (typeof v !== 'string') errors.push({ resource: 'PullRequest', field, code: 'invalid' })
  }
  if (body.body !== undefined && body.body !== null && typeof body.body !== 'string') errors.push({ resource: 'PullRequest', field: 'body', code: 'invalid' })
  if (body.draft !== undefined && typeof body.draft !== 'boolean') errors.push({ resource: 'PullRequest', field: 'draft', code: 'invalid' })
  if (errors.length) return ghError(422, 'Validation Failed', errors)

  // `head` may be `owner:branch`; forks are not modelled, so another owner is an invalid head.
  let head = body.head as string
  const colon = head.indexOf(':')
  if (colon >= 0) {
    if (head.slice(0, colon).toLowerCase() !== owner.toLowerCase()) return ghInvalid('head')
    head = head.slice(colon + 1)
  }
  const base = body.base as string
  const headSha = await branchSha(barePath, head)
  if (!headSha) return ghInvalid('head')
  const baseSha = await branchSha(barePath, base)
  if (!baseSha) return ghInvalid('base')
  if ((await commitsAhead(barePath, base, head)) === 0) return ghCustom(`No commits between ${base} and ${head}`)
  if (state.pulls.some(p => p.head === head && p.base === base)) return ghCustom(`A pull request already exists for ${owner}:${head}.`)

  const number = state.pulls.length + 1
  const htmlUrl = `https://github.example/${owner}/${name}/pull/${number}`
  const draft = body.draft === true
  const title = body.title as string
  const text = (body.body as string | null | undefined) ?? ''
  state.pulls.push({ number, head, base, url: htmlUrl })
  c.record({ kind: 'github', repo: `${owner}/${name}`, number, title, head, base, body: text, draft, url: htmlUrl })
  return reply(201, {
    id: state.id * 1000 + number, number, state: 'open', draft, title, body: text || null, html_url: htmlUrl,
    url: `${c.base}/repos/${owner}/${name}/pulls/${number}`,
    head: { label: `${owner}:${head}`, ref: head, sha: headSha }, base: { label: `${owner}:${base}`, ref: base, sha: baseSha },
    merged: false, mergeable: null,
  })
}

// ---------------------------------------------------------------- Gitea / Forgejo

/** Gitea titles starting with one of the default WorkInProgressPrefixes make the pull request a draft. */
const GITEA_WIP = /^\s*(WIP:|\[WIP\])/i

async function gitea(c: Ctx, isCreate: boolean): Promise<Reply> {
  const { req, path } = c
  const swagger = `${c.base}/api/swagger`
  const err = (status: number, message: string): Reply => reply(status, { message, url: swagger })
  const notFound = (...details: string[]): Reply => reply(404, { message: "The target couldn't be found.", url: swagger, errors: details })
  if (path[0] !== 'api' || path[1] !== 'v1' || path[2] !== 'repos' || !path[3] || !path[4]) return notFound()
  // Gitea resolves the repository before it looks at the token (a wrong token just means "anonymous").
  const state = findRepo(c.repos, path[3], path[4])
  if (!state) return notFound()
  const { owner, name, barePath } = state.repo
  const signedIn = schemeToken(req, ['token', 'bearer']) === c.token

  // The stub's repositories behave as public ones: readable anonymously, writable only with the token.
  if (path.length === 5 && req.method === 'GET') {
    return reply(200, { id: state.id, name, full_name: `${owner}/${name}`, private: false, html_url: `https://gitea.example/${owner}/${name}`, default_branch: await defaultBranch(barePath) })
  }
  // GET /api/v1/repos/{owner}/{repo}/pulls/{index}
  if (path.length === 7 && path[5] === 'pulls' && req.method === 'GET') {
    const pull = state.pulls.find(p => String(p.number) === path[6])
    if (!pull) return notFound()
    const st = pull.state ?? 'open'
    return reply(200, {
      id: state.id * 1000 + pull.number, url: pull.url, number: pull.number, html_url: pull.url, state: st === 'open' ? 'open' : 'closed',
      merged: st === 'merged', merged_at: st === 'merged' ? '2026-11-25T01:00:00Z' : null, head: { ref: pull.head, label: pull.head }, base: { ref: pull.base, label: pull.base },
    })
  }
  if (!isCreate) return notFound()
  if (!signedIn) return err(401, 'token is required')

  if (!isJson(req)) return err(415, 'Content-Type must be application/json')
  const body = parseObject(c.raw)
  if (!body) return err(422, '[]: Deserialization: invalid JSON object')
  // JSON decoding fails before validation runs; then the first Required field in struct order is named.
  for (const field of ['head', 'base', 'title', 'body']) {
    const v = body[field]
    if (v !== undefined && v !== null && typeof v !== 'string') return err(422, `[]: json: cannot unmarshal ${typeof v} into Go struct field CreatePullRequestOption.${field} of type string`)
  }
  for (const [field, goName] of [['head', 'Head'], ['base', 'Base'], ['title', 'Title']]) {
    if (!body[field!]) return err(422, `[${goName}]: Required`)
  }
  let head = body.head as string
  const base = body.base as string
  if (head === base) return err(422, 'Invalid PullRequest: There are no changes between the head and the base')
  const colon = head.indexOf(':')
  if (colon >= 0) {
    if (head.slice(0, colon).toLowerCase() !== owner.toLowerCase()) return notFound('GetForkedRepo')
    head = head.slice(colon + 1)
  }
  const headSha = await branchSha(barePath, head)
  const baseSha = await branchSha(barePath, base)
  if (!headSha || !baseSha) return notFound()
  const existing = state.pulls.find(p => p.head === head && p.base === base)
  if (existing) {
    return err(409, `pull request already exists for these targets [id: ${existing.number}, issue_id: ${existing.number}, head_repo_id: ${state.id}, base_repo_id: ${state.id}, head_branch: ${head}, base_branch: ${base}]`)
  }

  const number = state.pulls.length + 1
  const htmlUrl = `https://gitea.example/${owner}/${name}/pulls/${number}`
  const title = body.title as string
  const text = (body.body as string | undefined) ?? ''
  const draft = GITEA_WIP.test(title)
  state.pulls.push({ number, head, base, url: htmlUrl })
  c.record({ kind: 'gitea', repo: `${owner}/${name}`, number, title, head, base, body: text, draft, url: htmlUrl })
  return reply(201, {
    id: state.id * 1000 + number, url: htmlUrl, number, title, body: text, state: 'open', draft, is_locked: false,
    html_url: htmlUrl, diff_url: `${htmlUrl}.diff`, patch_url: `${htmlUrl}.patch`, mergeable: true, merged: false,
    head: { label: head, ref: head, sha: headSha, repo_id: state.id }, base: { label: base, ref: base, sha: baseSha, repo_id: state.id },
  })
}

// ---------------------------------------------------------------- GitLab

/** GitLab's draft title prefixes (Gitlab::Regex.merge_request_draft); the create API has no draft field. */
const GITLAB_DRAFT = /^\s*(\[draft\]|\(draft\)|draft:)/i

async function gitlab(c: Ctx, isCreate: boolean): Promise<Reply> {
  const { req, path } = c
  if (path[0] !== 'api' || path[1] !== 'v4') return reply(404, { error: '404 Not Found' })
  const given = req.headers.get('private-token') ?? schemeToken(req, ['bearer'])
  if (given !== c.token) return reply(401, { message: '401 Unauthorized' })
  if (path[2] !== 'projects' || !path[3]) return reply(404, { error: '404 Not Found' })
  // `{id}` is the URL-encoded full path (owner%2Frepo, decoded by the router) or the numeric project id.
  // The last slash splits it, so an owner may be a nested group (group/sub).
  const id = path[3]
  const slash = id.lastIndexOf('/')
  const state = /^\d+$/.test(id) ? c.repos.find(r => r.id === Number(id)) : slash > 0 ? findRepo(c.repos, id.slice(0, slash), id.slice(slash + 1)) : undefined

  if (path.length === 4 && req.method === 'GET') {
    if (!state) return reply(404, { message: '404 Project Not Found' })
    const { owner, name, barePath } = state.repo
    return reply(200, { id: state.id, name, path_with_namespace: `${owner}/${name}`, web_url: `https://gitlab.example/${owner}/${name}`, default_branch: await defaultBranch(barePath) })
  }
  // GET /api/v4/projects/{id}/merge_requests/{merge_request_iid}
  if (path.length === 6 && path[4] === 'merge_requests' && req.method === 'GET') {
    const pull = state?.pulls.find(p => String(p.number) === path[5])
    if (!state || !pull) return reply(404, { message: '404 Not found' })
    const st = pull.state ?? 'open'
    return reply(200, {
      id: state.id * 1000 + pull.number, iid: pull.number, project_id: state.id, state: st === 'open' ? 'opened' : st, web_url: pull.url,
      source_branch: pull.head, target_branch: pull.base, merged_at: st === 'merged' ? '2026-11-25T01:00:00Z' : null,
    })
  }
  if (!isCreate) return reply(404, { error: '404 Not Found' })

  if (!isJson(req)) return reply(415, { message: `The provided content-type '${req.headers.get('content-type') ?? ''}' is not supported.` })
  const body = parseObject(c.raw)
  if (!body) return reply(400, { error: 'The request body is not a valid JSON object' })
  // Grape validates declared params before the endpoint runs, so these come before the project lookup.
  const problems: string[] = []
  const params: Record<string, string> = {}
  for (const field of ['title', 'source_branch', 'target_branch', 'description']) {
    const v = body[field]
    if (v === undefined || v === null) { if (field !== 'description') problems.push(`${field} is missing`) }
    else if (typeof v === 'object') problems.push(`${field} is invalid`)
    else params[field] = String(v) // Grape coerces numbers and booleans to String
  }
  if (problems.length) return reply(400, { error: problems.join(', ') })
  if (!state) return reply(404, { message: '404 Project Not Found' })
  const { owner, name, barePath } = state.repo
  const { title, source_branch: source, target_branch: target } = params as Record<string, string>

  const base: string[] = []
  if (!source || !target) base.push('You must select source and target branch')
  else if (source === target) base.push('You must select different branches')
  const sourceSha = source ? await branchSha(barePath, source) : null
  const targetSha = target ? await branchSha(barePath, target) : null
  if (source && !sourceSha) base.push(`Source branch "${source}" does not exist`)
  if (target && !targetSha) base.push(`Target branch "${target}" does not exist`)
  if (base.length) return reply(422, { message: base })
  const open = state.pulls.find(p => p.head === source)
  if (open) return reply(409, { message: [`Another open merge request already exists for this source branch: !${open.number}`] })
  if (!title!.trim()) return reply(400, { message: { title: ["can't be blank"] } })

  const iid = state.pulls.length + 1
  const webUrl = `https://gitlab.example/${owner}/${name}/-/merge_requests/${iid}`
  const draft = GITLAB_DRAFT.test(title!)
  const description = params.description ?? ''
  state.pulls.push({ number: iid, head: source!, base: target!, url: webUrl })
  c.record({ kind: 'gitlab', repo: `${owner}/${name}`, number: iid, title: title!, head: source!, base: target!, body: description, draft, url: webUrl })
  return reply(201, {
    id: state.id * 1000 + iid, iid, project_id: state.id, title, description: description || null, state: 'opened',
    source_branch: source, target_branch: target, draft, work_in_progress: draft, web_url: webUrl, sha: sourceSha,
    merge_status: 'checking', detailed_merge_status: 'checking',
  })
}

// ---------------------------------------------------------------- server

const HANDLERS = { github, gitea, gitlab }

/** The create endpoint's path for each host, as split segments (the owner/repo parts are wildcards). */
function isCreatePath(kind: GitHostKind, method: string, p: string[]): boolean {
  if (method !== 'POST') return false
  if (kind === 'github') return p.length === 4 && p[0] === 'repos' && p[3] === 'pulls'
  if (kind === 'gitea') return p.length === 6 && p[0] === 'api' && p[1] === 'v1' && p[2] === 'repos' && p[5] === 'pulls'
  return p.length === 5 && p[0] === 'api' && p[1] === 'v4' && p[2] === 'projects' && p[4] === 'merge_requests'
}

function defaultFailure(kind: GitHostKind, status: number, base: string): unknown {
  const text = STATUS_TEXT[status] ?? 'Error'
  if (kind === 'github') return { message: status >= 500 ? 'Server Error' : text, documentation_url: 'https://docs.github.com/rest', status: String(status) }
  if (kind === 'gitea') return { message: text, url: `${base}/api/swagger` }
  return { message: `${status} ${text}` }
}

function decodeSegments(pathname: string): string[] | null {
  try {
    return pathname.split('/').filter(Boolean).map(decodeURIComponent)
  } catch { return null }
}

/**
 * Starts the stub on 127.0.0.1 and a free port. Requests are handled one at a time so two concurrent
 * creates for the same branch behave as on the real host: the second sees the first and is refused.
 */
export async function startGitHostStub(opts: { kind: GitHostKind; token: string; repos: StubRepo[] }): Promise<GitHostStub> {
  const requests: StubRequest[] = []
  const created: CreatedPull[] = []
  const failures: Reply[] = []
  const readFailures: Reply[] = []
  let webhook: { url: string; secret: string } | null = null
  const repos: RepoState[] = opts.repos.map((repo, i) => ({ repo, id: i + 1, pulls: [] }))
  let base = ''
  let lock: Promise<unknown> = Promise.resolve()

  async function handle(req: Request, raw: string): Promise<Reply> {
    const path = decodeSegments(new URL(req.url).pathname)
    if (!path) return reply(400, { message: 'Bad Request' })
    const isCreate = isCreatePath(opts.kind, req.method, path)
    if (isCreate && failures.length) return failures.shift()!
    if (req.method === 'GET' && readFailures.length && /\/(pulls|merge_requests)\/\d+$/.test(new URL(req.url).pathname)) return readFailures.shift()!
    const ctx: Ctx = { req, path, raw, base, repos, token: opts.token, record: p => created.push(p) }
    try {
      return await HANDLERS[opts.kind](ctx, isCreate)
    } catch {
      return reply(500, defaultFailure(opts.kind, 500, base))
    }
  }

  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const url = new URL(req.url)
      const raw = await req.text()
      let body: unknown = null
      if (raw) { try { body = JSON.parse(raw) } catch { body = raw } }
      const entry: StubRequest = { method: req.method, path: url.pathname + url.search, headers: Object.fromEntries(req.headers), body, status: 0 }
      requests.push(entry)
      const run = lock.then(() => handle(req, raw))
      lock = run.catch(() => undefined)
      const { status, body: out, headers } = await run
      entry.status = status
      return new Response(JSON.stringify(out), { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers } })
    },
  })
  base = `http://127.0.0.1:${server.port}`
  const apiUrl = opts.kind === 'github' ? base : `${base}/api/${opts.kind === 'gitea' ? 'v1' : 'v4'}`

  return {
    url: base,
    apiUrl,
    requests,
    created,
    failNext(status, body) {
      failures.push(reply(status, body ?? defaultFailure(opts.kind, status, base)))
    },
    setPullState(number, state, repo) {
      const r = repo ? repos.find(x => `${x.repo.owner}/${x.repo.name}` === repo) : repos[0]
      const pull = r?.pulls.find(p => p.number === number)
      if (!pull) throw new Error(`the stub has no pull request ${number}`)
      pull.state = state
    },
    setWebhook(url, secret) {
      webhook = { url, secret }
    },
    async deliver(kind, number, o = {}) {
      if (!webhook) throw new Error('the stub has no webhook: setWebhook(url, secret) first')
      const r = repos.find(x => x.pulls.some(p => p.number === number))
      const pull = r?.pulls.find(p => p.number === number)
      if (!pull) throw new Error(`the stub has no pull request ${number}`)
      if (kind === 'merged' || kind === 'closed') pull.state = kind
      if (kind === 'reopened') pull.state = 'open'
      const d = delivery(opts.kind, kind, { url: pull.url!, number, head: pull.head, base: pull.base }, o.secret ?? webhook.secret, o)
      const res = await fetch(webhook.url, { method: 'POST', headers: d.headers, body: d.body })
      const text = await res.text()
      let body: unknown = text
      try { body = JSON.parse(text) } catch { /* keep the text */ }
      return { status: res.status, body, id: d.id }
    },
    throttleNextRead(status, retryAfter) {
      readFailures.push({ status, body: defaultFailure(opts.kind, status, base), headers: { 'retry-after': String(retryAfter) } })
    },
    async stop() {
      await server.stop(true)
    },
  }
}
