/**
 * The git-host stub itself, against a real bare repository: one scenario table per host, written from
 * the hosts' documented behaviour. Rows run in order and share the stub's state (the first success makes
 * the later duplicate fail), so each table reads as one session against the host.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { tempDir } from './harness'
import { branchExists, changedFiles, git, makeBareRepo, pushCommit, readFileAtBranch } from './git-fixtures'
import { startGitHostStub, type GitHostKind, type GitHostStub } from './git-host-stub'

const TOKEN = 'stub-token-7d1f0c9a'
let dir: string
let barePath: string
const stubs = {} as Record<GitHostKind, GitHostStub>

beforeAll(async () => {
  dir = tempDir('fixloop-stub-')
  barePath = makeBareRepo(dir, { 'src/app.js': 'let total = null\n', 'README.md': '# app\n' })
  for (const branch of ['fix-1', 'fix-2', 'fix-3']) pushCommit(barePath, branch, { [`src/${branch}.js`]: `// ${branch}\n` })
  pushCommit(barePath, 'fix-1', { 'src/app.js': 'let total = 0\n' })
  git([`--git-dir=${barePath}`, 'branch', 'same', 'main']) // a branch with nothing new on it
  for (const kind of ['github', 'gitea', 'gitlab'] as const) {
    stubs[kind] = await startGitHostStub({ kind, token: TOKEN, repos: [{ owner: 'other', name: 'lib', barePath }, { owner: 'acme', name: 'app', barePath }] })
  }
})

afterAll(async () => {
  for (const stub of Object.values(stubs)) await stub.stop()
  rmSync(dir, { recursive: true, force: true })
})

interface Row {
  name: string
  method?: string
  path: string
  headers?: Record<string, string>
  body?: unknown
  raw?: string
  status: number
  expect?: Record<string, unknown>
}

async function send(stub: GitHostStub, row: Row): Promise<{ status: number; json: any }> {
  const init: RequestInit = { method: row.method ?? 'POST', headers: row.headers ?? {} }
  if (row.raw !== undefined) init.body = row.raw
  else if (row.body !== undefined) {
    init.body = JSON.stringify(row.body)
    init.headers = { 'content-type': 'application/json', ...row.headers }
  }
  const res = await fetch(stub.url + row.path, init)
  return { status: res.status, json: await res.json() }
}

function table(kind: GitHostKind, rows: Row[]) {
  describe(kind, () => {
    for (const row of rows) {
      test(`${row.name} → ${row.status}`, async () => {
        const { status, json } = await send(stubs[kind], row)
        expect({ status, json }).toMatchObject({ status: row.status, json: row.expect ?? {} })
      })
    }
  })
}

test('the fixtures built the branches the tables rely on', () => {
  expect(['main', 'fix-1', 'fix-2', 'fix-3', 'same'].every(b => branchExists(barePath, b))).toBe(true)
  expect(branchExists(barePath, 'nope')).toBe(false)
  expect(changedFiles(barePath, 'main', 'fix-1')).toEqual(['src/app.js', 'src/fix-1.js'])
  expect(changedFiles(barePath, 'main', 'same')).toEqual([])
  expect(readFileAtBranch(barePath, 'fix-1', 'src/app.js')).toBe('let total = 0\n')
  expect(readFileAtBranch(barePath, 'main', 'missing.txt')).toBeNull()
})

const gh = { authorization: `Bearer ${TOKEN}`, accept: 'application/vnd.github+json' }
const ghPr = { title: 'Guard the null total', head: 'fix-1', base: 'main', body: 'Fixes #12', draft: true }
table('github', [
  { name: 'create', path: '/repos/acme/app/pulls', headers: gh, body: ghPr, status: 201,
    expect: { number: 1, state: 'open', draft: true, title: ghPr.title, body: 'Fixes #12', html_url: 'https://github.example/acme/app/pull/1', head: { ref: 'fix-1' }, base: { ref: 'main' } } },
  { name: 'the same head again, `token` scheme', path: '/repos/acme/app/pulls', headers: { authorization: `token ${TOKEN}` }, body: ghPr, status: 422,
    expect: { message: 'Validation Failed', errors: [{ resource: 'PullRequest', code: 'custom', message: 'A pull request already exists for acme:fix-1.' }] } },
  { name: 'owner:branch head, draft omitted', path: '/repos/ACME/app/pulls', headers: gh, body: { title: 't', head: 'acme:fix-2', base: 'main' }, status: 201,
    expect: { number: 2, draft: false, head: { ref: 'fix-2' } } },
  { name: 'no Authorization', path: '/repos/acme/app/pulls', body: ghPr, status: 401, expect: { message: 'Requires authentication' } },
  { name: 'wrong token', path: '/repos/acme/app/pulls', headers: { authorization: 'Bearer nope' }, body: ghPr, status: 401, expect: { message: 'Bad credentials' } },
  { name: 'token under an unknown scheme', path: '/repos/acme/app/pulls', headers: { authorization: `Basic ${TOKEN}` }, body: ghPr, status: 401 },
  { name: 'unknown repository', path: '/repos/acme/nope/pulls', headers: gh, body: ghPr, status: 404, expect: { message: 'Not Found' } },
  { name: 'missing title, head and base', path: '/repos/acme/app/pulls', headers: gh, body: { body: 'x' }, status: 422,
    expect: { message: 'Validation Failed', errors: ['title', 'head', 'base'].map(field => ({ resource: 'PullRequest', field, code: 'missing_field' })) } },
  { name: 'draft is not a boolean', path: '/repos/acme/app/pulls', headers: gh, body: { ...ghPr, head: 'fix-3', draft: 'yes' }, status: 422, expect: { errors: [{ field: 'draft', code: 'invalid' }] } },
  { name: 'head branch not pushed', path: '/repos/acme/app/pulls', headers: gh, body: { ...ghPr, head: 'nope' }, status: 422, expect: { errors: [{ field: 'head', code: 'invalid' }] } },
  { name: 'base branch missing', path: '/repos/acme/app/pulls', headers: gh, body: { ...ghPr, head: 'fix-3', base: 'nope' }, status: 422, expect: { errors: [{ field: 'base', code: 'invalid' }] } },
  { name: 'head from another owner', path: '/repos/acme/app/pulls', headers: gh, body: { ...ghPr, head: 'other:fix-3' }, status: 422, expect: { errors: [{ field: 'head', code: 'invalid' }] } },
  { name: 'no commits between', path: '/repos/acme/app/pulls', headers: gh, body: { ...ghPr, head: 'same' }, status: 422, expect: { errors: [{ code: 'custom', message: 'No commits between main and same' }] } },
  { name: 'not JSON Content-Type', path: '/repos/acme/app/pulls', headers: { ...gh, 'content-type': 'text/plain' }, raw: JSON.stringify(ghPr), status: 415 },
  { name: 'malformed JSON', path: '/repos/acme/app/pulls', headers: { ...gh, 'content-type': 'application/json' }, raw: '{"title":', status: 400, expect: { message: 'Problems parsing JSON' } },
  { name: 'read the repository', method: 'GET', path: '/repos/acme/app', headers: gh, status: 200, expect: { full_name: 'acme/app', default_branch: 'main' } },
  { name: 'read the repository without a token', method: 'GET', path: '/repos/acme/app', status: 401 },
])

const gt = { authorization: `token ${TOKEN}` }
const gtPr = { title: 'WIP: Guard the null total', head: 'fix-1', base: 'main', body: 'Fixes #12' }
table('gitea', [
  { name: 'create (WIP: title makes a draft)', path: '/api/v1/repos/acme/app/pulls', headers: gt, body: gtPr, status: 201,
    expect: { number: 1, state: 'open', draft: true, title: gtPr.title, html_url: 'https://gitea.example/acme/app/pulls/1', head: { ref: 'fix-1' }, base: { ref: 'main' } } },
  { name: 'the same head again', path: '/api/v1/repos/acme/app/pulls', headers: gt, body: gtPr, status: 409,
    expect: { message: 'pull request already exists for these targets [id: 1, issue_id: 1, head_repo_id: 2, base_repo_id: 2, head_branch: fix-1, base_branch: main]' } },
  { name: 'Bearer scheme; unknown fields (draft) ignored', path: '/api/v1/repos/acme/app/pulls', headers: { authorization: `Bearer ${TOKEN}` }, body: { title: 'Plain', head: 'fix-2', base: 'main', draft: true, labels: [] }, status: 201,
    expect: { number: 2, draft: false } },
  { name: 'no token', path: '/api/v1/repos/acme/app/pulls', body: gtPr, status: 401, expect: { message: 'token is required' } },
  { name: 'wrong token (read as anonymous)', path: '/api/v1/repos/acme/app/pulls', headers: { authorization: 'token nope' }, body: gtPr, status: 401, expect: { message: 'token is required' } },
  { name: 'unknown repository', path: '/api/v1/repos/acme/nope/pulls', headers: gt, body: gtPr, status: 404, expect: { message: "The target couldn't be found." } },
  { name: 'missing head', path: '/api/v1/repos/acme/app/pulls', headers: gt, body: { title: 't', base: 'main' }, status: 422, expect: { message: '[Head]: Required' } },
  { name: 'missing title', path: '/api/v1/repos/acme/app/pulls', headers: gt, body: { head: 'fix-3', base: 'main' }, status: 422, expect: { message: '[Title]: Required' } },
  { name: 'title is not a string', path: '/api/v1/repos/acme/app/pulls', headers: gt, body: { title: 5, head: 'fix-3', base: 'main' }, status: 422 },
  { name: 'head equals base', path: '/api/v1/repos/acme/app/pulls', headers: gt, body: { ...gtPr, head: 'main' }, status: 422,
    expect: { message: 'Invalid PullRequest: There are no changes between the head and the base' } },
  { name: 'head branch not pushed', path: '/api/v1/repos/acme/app/pulls', headers: gt, body: { ...gtPr, head: 'nope' }, status: 404, expect: { message: "The target couldn't be found." } },
  { name: 'base branch missing', path: '/api/v1/repos/acme/app/pulls', headers: gt, body: { ...gtPr, head: 'fix-3', base: 'nope' }, status: 404 },
  { name: 'not JSON Content-Type', path: '/api/v1/repos/acme/app/pulls', headers: { ...gt, 'content-type': 'application/x-www-form-urlencoded' }, raw: 'title=t&head=fix-3&base=main', status: 415 },
  { name: 'path without /api/v1', path: '/repos/acme/app/pulls', headers: gt, body: gtPr, status: 404 },
  { name: 'read the repository', method: 'GET', path: '/api/v1/repos/acme/app', headers: gt, status: 200, expect: { full_name: 'acme/app', default_branch: 'main' } },
])

const gl = { 'private-token': TOKEN }
const glMr = { title: 'Draft: Guard the null total', source_branch: 'fix-1', target_branch: 'main', description: 'Closes #12' }
table('gitlab', [
  { name: 'create by encoded path (Draft: title makes a draft)', path: '/api/v4/projects/acme%2Fapp/merge_requests', headers: gl, body: glMr, status: 201,
    expect: { iid: 1, state: 'opened', draft: true, title: glMr.title, description: 'Closes #12', source_branch: 'fix-1', target_branch: 'main', web_url: 'https://gitlab.example/acme/app/-/merge_requests/1' } },
  { name: 'the same source branch again', path: '/api/v4/projects/acme%2Fapp/merge_requests', headers: gl, body: { ...glMr, target_branch: 'fix-3' }, status: 409,
    expect: { message: ['Another open merge request already exists for this source branch: !1'] } },
  { name: 'create by numeric id, Bearer; draft field ignored', path: '/api/v4/projects/2/merge_requests', headers: { authorization: `Bearer ${TOKEN}` }, body: { title: 'Plain', source_branch: 'fix-2', target_branch: 'main', draft: true }, status: 201,
    expect: { iid: 2, draft: false } },
  { name: 'no token', path: '/api/v4/projects/acme%2Fapp/merge_requests', body: glMr, status: 401, expect: { message: '401 Unauthorized' } },
  { name: 'wrong token', path: '/api/v4/projects/acme%2Fapp/merge_requests', headers: { 'private-token': 'nope' }, body: glMr, status: 401, expect: { message: '401 Unauthorized' } },
  { name: 'token under the GitHub scheme', path: '/api/v4/projects/acme%2Fapp/merge_requests', headers: { authorization: `token ${TOKEN}` }, body: glMr, status: 401 },
  { name: 'unknown project', path: '/api/v4/projects/acme%2Fnope/merge_requests', headers: gl, body: glMr, status: 404, expect: { message: '404 Project Not Found' } },
  { name: 'unencoded project path', path: '/api/v4/projects/acme/app/merge_requests', headers: gl, body: glMr, status: 404 },
  { name: 'missing fields (checked before the project)', path: '/api/v4/projects/acme%2Fnope/merge_requests', headers: gl, body: { description: 'x' }, status: 400,
    expect: { error: 'title is missing, source_branch is missing, target_branch is missing' } },
  { name: 'source branch not pushed', path: '/api/v4/projects/acme%2Fapp/merge_requests', headers: gl, body: { ...glMr, source_branch: 'nope' }, status: 422,
    expect: { message: ['Source branch "nope" does not exist'] } },
  { name: 'target branch missing', path: '/api/v4/projects/acme%2Fapp/merge_requests', headers: gl, body: { ...glMr, source_branch: 'fix-3', target_branch: 'nope' }, status: 422,
    expect: { message: ['Target branch "nope" does not exist'] } },
  { name: 'source equals target', path: '/api/v4/projects/acme%2Fapp/merge_requests', headers: gl, body: { ...glMr, source_branch: 'main' }, status: 422, expect: { message: ['You must select different branches'] } },
  { name: 'blank title', path: '/api/v4/projects/acme%2Fapp/merge_requests', headers: gl, body: { ...glMr, source_branch: 'fix-3', title: ' ' }, status: 400, expect: { message: { title: ["can't be blank"] } } },
  { name: 'not JSON Content-Type', path: '/api/v4/projects/acme%2Fapp/merge_requests', headers: { ...gl, 'content-type': 'text/plain' }, raw: JSON.stringify(glMr), status: 415 },
  { name: 'read the project', method: 'GET', path: '/api/v4/projects/acme%2Fapp', headers: gl, status: 200, expect: { id: 2, path_with_namespace: 'acme/app', default_branch: 'main' } },
])

describe('recording and failure injection', () => {
  test('every request is kept with its headers, body and answer; created lists only successes', () => {
    const { requests, created } = stubs.github
    expect(requests.length).toBeGreaterThan(10)
    expect(requests[0]).toMatchObject({ method: 'POST', path: '/repos/acme/app/pulls', body: ghPr, status: 201 })
    expect(requests[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`)
    expect(requests.find(r => r.status === 400)!.body).toBe('{"title":')
    expect(created).toEqual([
      { kind: 'github', repo: 'acme/app', number: 1, title: ghPr.title, head: 'fix-1', base: 'main', body: 'Fixes #12', draft: true, url: 'https://github.example/acme/app/pull/1' },
      { kind: 'github', repo: 'acme/app', number: 2, title: 't', head: 'fix-2', base: 'main', body: '', draft: false, url: 'https://github.example/acme/app/pull/2' },
    ])
    expect(stubs.gitlab.created.map(c => [c.kind, c.number, c.draft])).toEqual([['gitlab', 1, true], ['gitlab', 2, false]])
    expect(stubs.gitea.apiUrl).toBe(`${stubs.gitea.url}/api/v1`)
    expect(stubs.gitlab.apiUrl).toBe(`${stubs.gitlab.url}/api/v4`)
    expect(stubs.github.apiUrl).toBe(stubs.github.url)
  })

  test('failNext answers the next create calls, in order, then the stub is itself again', async () => {
    const stub = stubs.github
    stub.failNext(500)
    stub.failNext(422, { message: 'Validation Failed', errors: [{ code: 'custom', message: 'injected' }] })
    const row: Row = { name: '', path: '/repos/acme/app/pulls', headers: gh, body: { ...ghPr, head: 'fix-3' }, status: 0 }
    expect(await send(stub, row)).toEqual({ status: 500, json: { message: 'Server Error', documentation_url: 'https://docs.github.com/rest', status: '500' } })
    expect((await send(stub, row)).json.errors[0].message).toBe('injected')
    expect((await send(stub, { ...row, method: 'GET', path: '/repos/acme/app', body: undefined })).status).toBe(200) // reads are not create calls
    expect((await send(stub, row)).status).toBe(201)
    expect(stub.created).toHaveLength(3)
  })

  test('two concurrent creates for one branch: exactly one succeeds', async () => {
    const stub = stubs.gitlab
    const row: Row = { name: '', path: '/api/v4/projects/acme%2Fapp/merge_requests', headers: gl, body: { ...glMr, source_branch: 'fix-3' }, status: 0 }
    const answers = await Promise.all([send(stub, row), send(stub, row)])
    expect(answers.map(a => a.status).sort()).toEqual([201, 409])
  })
})
