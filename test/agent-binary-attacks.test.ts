/**
 * The compiled binary against hostile agents (test/fixtures/agents), with a LOCAL remote: a bare repository
 * on the same machine, reached as a path, a symlink to it, or a file:// URL.
 *   - Whatever the agent does to its clone's object store, the remote's refs and every file it held stay
 *     byte for byte as they were, the agent never sees another branch's content, and the guardrails judge
 *     the commit that is pushed (not objects the agent could rewrite).
 *   - An agent that fills .git/hooks or .git/info does not stall the server: /healthz keeps answering
 *     while fixloop checks that metadata, and the check refuses the run once a bound is hit.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { call, eventually, spawnServer, tempDir } from './harness'
import { cliJson, cliTenant, ensureBinary } from './helpers-lifecycle'
import { branchExists, changedFiles, git, makeBareRepo, pushCommit, readFileAtBranch } from './git-fixtures'

const AGENTS = join(import.meta.dir, 'fixtures', 'agents')
const MARKER = `other-branch-only-${createHash('sha256').update(String(Math.random())).digest('hex').slice(0, 16)}`
const REPO_FILES = { 'src/app.js': 'export function total(items) {\n  return items.reduce((a, b) => a + b.price, 0)\n}\n', 'README.md': '# shop\n' }

/** Every file of the bare repository with its SHA-256: refs, objects, config, everything. */
function snapshot(bare: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const d of readdirSync(bare, { recursive: true, withFileTypes: true })) {
    if (!d.isFile()) continue
    const full = join(d.parentPath, d.name)
    out.set(relative(bare, full), createHash('sha256').update(readFileSync(full)).digest('hex'))
  }
  return out
}

function refs(bare: string): string[] {
  return git([`--git-dir=${bare}`, 'for-each-ref', '--format=%(refname) %(objectname)']).trim().split('\n').sort()
}

let dir: string
let dataDir: string
let t: Awaited<ReturnType<typeof cliTenant>>
let server: Awaited<ReturnType<typeof spawnServer>>

beforeAll(async () => {
  ensureBinary()
  dir = tempDir('fixloop-upstream-')
  dataDir = join(dir, 'data')
  t = await cliTenant(dataDir, ['--processing-mode', 'auto_pr'])
  // The /healthz test polls fast: no rate limit in the way.
  server = await spawnServer(dataDir, { FIXLOOP_AGENT_SANDBOX_PATHS: AGENTS, FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
}, 60_000)

afterAll(async () => {
  await server?.stop()
  rmSync(dir, { recursive: true, force: true })
  for (const bare of remotes) rmSync(dirname(bare), { recursive: true, force: true })
})

/** A fresh remote per test (an attack that worked must not spoil the next one): `main` and a branch only it holds. */
const remotes: string[] = []
function remote(): string {
  const bare = makeBareRepo(tempDir('fixloop-remote-'), REPO_FILES, 'main', 'shop')
  remotes.push(bare)
  pushCommit(bare, 'secret-plans', { 'plans.txt': `${MARKER}\n` }, 'main', `Plans ${MARKER}`)
  return bare
}

async function run(gitUrl: string, bare: string, mode: string) {
  await cliJson(dataDir, ['app', 'connect-repo', t.appId, '--git-url', gitUrl, '--host', 'none', '--agent', 'command', '--agent-command', `sh ${join(AGENTS, 'upstream.sh')} ${mode} ${MARKER} ${bare}`, '--timeout-seconds', '30'])
  const sent = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: `Upstream attack ${mode} via ${gitUrl}: the total is wrong` } })
  expect(sent.status).toBe(201)
  const id = sent.body.id as string
  const item = await eventually(async () => {
    const g = await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })
    return ['pr_opened', 'failed'].includes(g.body.status) ? g.body : undefined
  }, 45_000)
  const runRow = (await call(server.url, 'GET', `/v1/agent-runs/${id}`, { auth: t.key })).body
  return { item, run: runRow }
}

describe('a hostile agent cannot reach a local remote through its clone (compiled binary)', () => {
  const remotes: [string, (bare: string) => string][] = [
    ['a path', (bare) => bare],
    [
      'a symlink to the path',
      (bare) => {
        const link = join(tempDir('fixloop-link-'), 'link.git')
        symlinkSync(bare, link)
        return link
      },
    ],
    ['a file:// URL', (bare) => `file://${bare}`],
  ]
  const attacks: [string, string, 'succeeded' | 'guardrailed', RegExp | null][] = [
    ['rewrites the base blob in place to hide an added AWS key', 'rewrite', 'guardrailed', /added lines contain secrets/],
    ['appends to every object file in place', 'scribble', 'succeeded', null],
    ['points objects/info/alternates at the remote', 'alternates', 'guardrailed', /git metadata \(\.git\/objects\/info\/alternates\)/],
    ['replaces .git by a gitdir: file naming the remote', 'gitfile', 'guardrailed', /replaced the \.git directory/],
  ]
  for (const [remoteName, url] of remotes) {
    for (const [attack, mode, status, reason] of attacks) {
      // Every attack through a plain path; the two object-store attacks through the other forms too.
      if (remoteName !== 'a path' && !['rewrite', 'scribble'].includes(mode)) continue
      test(`${remoteName}: an agent that ${attack}; the remote is unchanged byte for byte`, async () => {
        const bare = remote()
        const before = snapshot(bare)
        const refsBefore = refs(bare)
        const { run: r } = await run(url(bare), bare, mode)
        expect(r.outputTail).toContain('other-branch check done')
        expect(r.outputTail).not.toContain('SAW-OTHER-BRANCH')
        expect(r.outputTail).not.toContain('READ-UPSTREAM')
        expect(r.status).toBe(status)
        if (reason) expect(r.guardrailReason).toMatch(reason)
        // Every file the remote held is unchanged, byte for byte; only the pushed branch may be new.
        const after = snapshot(bare)
        for (const [path, hash] of before) expect({ path, hash: after.get(path) }).toEqual({ path, hash })
        expect(refs(bare).filter((l) => !l.startsWith(`refs/heads/${r.branch} `))).toEqual(refsBefore.filter((l) => !l.startsWith(`refs/heads/${r.branch} `)))
        expect(readFileAtBranch(bare, 'main', 'src/app.js')).toBe(REPO_FILES['src/app.js'])
        expect(git([`--git-dir=${bare}`, 'fsck', '--strict', '--no-dangling']).trim()).toBe('')
        if (status === 'succeeded') {
          // What was judged is what was pushed: one commit on main changing README.md only.
          expect(changedFiles(bare, 'main', r.branch)).toEqual(['README.md'])
          expect(readFileAtBranch(bare, r.branch, 'src/app.js')).toBe(REPO_FILES['src/app.js'])
        } else {
          expect(branchExists(bare, r.branch)).toBe(false)
          expect(after.size).toBe(before.size)
        }
      }, 60_000)
    }
  }
})

describe('an agent that fills its git metadata does not stall the server (compiled binary)', () => {
  const fillers: [string, string, RegExp][] = [
    ['20,000 files in .git/info', 'many', /the agent filled git metadata with more than 2000 entries/],
    ['300 sparse 8 MiB files in .git/hooks', 'big', /the agent wrote a 8388608-byte file into git metadata \(\.git\/hooks\/blob-\d+; limit 1048576 bytes\)/],
    ['40 files of 1 MiB in .git/hooks', 'bulk', /the agent filled git metadata with more than 16777216 bytes/],
  ]
  for (const [name, mode, reason] of fillers) {
    test(`${name}: every /healthz during the run answers in under 1 s; the run is refused with the bound`, async () => {
      const bare = remote()
      await cliJson(dataDir, ['app', 'connect-repo', t.appId, '--git-url', bare, '--host', 'none', '--agent', 'command', '--agent-command', `sh ${join(AGENTS, 'fill-meta.sh')} ${mode}`, '--timeout-seconds', '60'])
      const sent = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: `Metadata filler ${mode}: the total is wrong` } })
      expect(sent.status).toBe(201)
      const id = sent.body.id as string
      // Poll /healthz until the run ends (bounded: 90 s), recording the slowest answer.
      let slowest = 0
      let polls = 0
      let item: { status: string } | undefined
      const deadline = Date.now() + 90_000
      let readAt = -Infinity
      while (Date.now() < deadline) {
        const t0 = performance.now()
        const h = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(10_000) })
        slowest = Math.max(slowest, performance.now() - t0)
        polls++
        expect(h.status).toBe(200)
        // The report is read every 120 ms, under the sk_ key's refill of 10 a second (SPEC 8): faster, a
        // long run emptied its bucket and the agent run's read below was a 429. /healthz, which needs no
        // key, is asked every 20 ms, so a run over in half a second is still looked at a dozen times (at
        // 120 ms, a fast machine's run saw 3 looks).
        if (performance.now() - readAt >= 120) {
          readAt = performance.now()
          item = (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body
          if (item && ['pr_opened', 'failed'].includes(item.status)) break
        }
        await Bun.sleep(20)
      }
      expect(item?.status).toBe('failed')
      const r = (await call(server.url, 'GET', `/v1/agent-runs/${id}`, { auth: t.key })).body
      expect({ status: r.status, reason: r.guardrailReason, error: r.error, tail: r.outputTail }).toMatchObject({ tail: expect.stringContaining(`filled .git (${mode})`) })
      expect(r.status).toBe('guardrailed')
      expect(r.guardrailReason).toMatch(reason)
      expect(branchExists(bare, r.branch)).toBe(false)
      expect(polls).toBeGreaterThan(3)
      expect(slowest).toBeLessThan(1000)
    }, 120_000)
  }
})
