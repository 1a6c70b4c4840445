/**
 * Guardrail gaps found by the agent attack (attack-agent session): a hostile agent's change that passed
 * every guardrail and was pushed. Real git, a local bare remote, the sandbox, a stub GitHub API.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { call, seedTenant, startTestServer, tempDir, type Tenant, type TestServer } from './harness'
import { runEnd } from './agent-run-end'
import { startGitHostStub, type GitHostStub } from './git-host-stub'
import { branchExists, makeBareRepo } from './git-fixtures'
import type { ConnectionInput } from '../src/modules/connections/service'

const TOKEN = 'ghp_' + 'Q7mZ2xW9kL4vB8nR1tY6uI3oP5aS0dF2gH4j'
// A passed-through variable (FIXLOOP_AGENT_ENV) whose value no credential rule recognises: a proxy
// password, an internal service's key.
const PASSED = 'corp-egress-7731-swordfish'
const ANTHROPIC = 'sk-ant-api03-' + randomBytes(72).toString('base64url').slice(0, 93) + 'AA'

let srv: TestServer
let t: Tenant
let stub: GitHostStub
let bare: string

beforeAll(async () => {
  const dir = tempDir('fixloop-repo-')
  bare = makeBareRepo(dir, { 'src/app.js': 'export const x = 1\n', 'README.md': '# shop\n' }, 'main', 'shop')
  stub = await startGitHostStub({ kind: 'github', token: TOKEN, repos: [{ owner: 'acme', name: 'shop', barePath: bare }] })
  process.env.AA_PROXY_PASSWORD = PASSED
  process.env.ANTHROPIC_API_KEY = ANTHROPIC
  process.env.AWS_REGION = 'eu-central-1'
  srv = await startTestServer({ FIXLOOP_MASTER_KEY: 'a1'.repeat(32), FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000', FIXLOOP_AGENT_ENV: 'AA_PROXY_PASSWORD,ANTHROPIC_API_KEY,AWS_REGION' })
  t = await seedTenant(srv.admin, { processingMode: 'auto_pr' })
})

afterAll(async () => {
  delete process.env.AA_PROXY_PASSWORD
  delete process.env.ANTHROPIC_API_KEY
  delete process.env.AWS_REGION
  await srv.close()
  await stub.stop()
  rmSync(dirname(bare), { recursive: true, force: true })
})

function connect(overrides: Partial<ConnectionInput>) {
  return srv.services.connections.connect(t.orgId, t.appId, {
    gitUrl: bare,
    host: 'github',
    hostApiUrl: stub.apiUrl,
    hostRepo: 'acme/shop',
    hostToken: TOKEN,
    agent: 'command',
    timeoutSeconds: 30,
    // More runs than the default 20 a day: this file's cases are 21 runs of one App.
    runsPerDay: 100,
    ...overrides,
  } as ConnectionInput)
}

async function runWith(agentCommand: string, text: string, timeoutMs?: number) {
  await connect({ agentCommand })
  const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text } })
  expect(r.status).toBe(201)
  return (await runEnd(srv, t.key, r.body.id, timeoutMs)).run
}

describe('secrets the agent holds never reach the pushed change', () => {
  test("a passed-through variable's literal value written into a file is guardrailed", async () => {
    const run = await runWith(`printf 'export const proxy = "%s"\\n' "$AA_PROXY_PASSWORD" > src/proxy.js`, 'Proxy settings page shows nothing at all today')
    expect(run.status).toBe('guardrailed')
    expect(run.guardrailReason).toMatch(/secret/)
    expect(JSON.stringify(run)).not.toContain(PASSED)
    expect(branchExists(bare, run.branch)).toBe(false)
  })

  test("the model API key as a file's NAME is guardrailed (paths were never scanned)", async () => {
    const run = await runWith(`echo ok > "docs-$ANTHROPIC_API_KEY.md"`, 'The docs index page lists no documents anymore')
    expect(run.status).toBe('guardrailed')
    expect(run.guardrailReason).toMatch(/secret/)
    expect(JSON.stringify(run)).not.toContain(ANTHROPIC)
    expect(branchExists(bare, run.branch)).toBe(false)
  })

  test("a passed-through variable's value as a folder name is guardrailed", async () => {
    const run = await runWith(`mkdir -p "cache/$AA_PROXY_PASSWORD" && echo ok > "cache/$AA_PROXY_PASSWORD/x.txt"`, 'The cache folder fills up with stale entries again')
    expect(run.status).toBe('guardrailed')
    expect(JSON.stringify(run)).not.toContain(PASSED)
    expect(branchExists(bare, run.branch)).toBe(false)
  })
})

test('a passed-through setting (AWS_REGION) is no secret: a fix naming the region is pushed', async () => {
  const run = await runWith(`printf 'export const region = "%s"\\n' "$AWS_REGION" > src/region.js`, 'The region picker shows the wrong default region')
  expect(run.status).toBe('succeeded')
  expect(branchExists(bare, run.branch)).toBe(true)
})

describe('CI configuration of every supported host is denied', () => {
  for (const path of ['.gitea/workflows/evil.yml', '.forgejo/workflows/evil.yml', '.gitea/actions/x/action.yml', '.forgejo/actions/x/action.yml', '.woodpecker/build.yml', '.woodpecker.yml', '.drone.yml']) {
    test(`${path} (Gitea/Forgejo Actions, Woodpecker, Drone run it with the repository's secrets)`, async () => {
      const run = await runWith(`mkdir -p "$(dirname ${path})" && printf 'on: [push]\\njobs:\\n  x:\\n    runs-on: docker\\n    steps:\\n      - run: env\\n' > ${path}`, `Workflow case for ${path} in the settings page`)
      expect(run.status).toBe('guardrailed')
      expect(run.guardrailReason).toContain(`denied path: ${path}`)
      expect(branchExists(bare, run.branch)).toBe(false)
    })
  }
})

describe('binary files are found wherever their NUL byte is', () => {
  test('8 KB of text, then a zip (a Python zipapp): git calls it text, fixloop calls it binary', async () => {
    // git's own test reads the first 8,000 bytes only; a zip is read from its end, so any prefix works.
    const zipapp = `{ printf '#!/usr/bin/env python3\\n'; i=0; while [ $i -lt 140 ]; do printf '# padding line %03d: nothing to see here, this is only a comment ...\\n' $i; i=$((i+1)); done; printf 'PK\\003\\004\\024\\000\\000\\000\\010\\000payload\\000\\000\\377\\n'; } > tools/run.pyz`
    const run = await runWith(`mkdir -p tools && ${zipapp} && test $(wc -c < tools/run.pyz) -gt 8000`, 'The tools page should run the helper script faster')
    expect(run.status).toBe('guardrailed')
    expect(run.guardrailReason).toBe('binary file: tools/run.pyz')
    expect(branchExists(bare, run.branch)).toBe(false)
  })

  test('the NUL is pinned to its own file: a text change beside it is not the one named', async () => {
    const run = await runWith(`echo 'export const y = 2' >> src/app.js && { head -c 9000 /dev/zero | tr '\\0' 'a'; printf '\\nx\\000y\\n'; } > late.bin.txt`, 'The app shows a blank page after the last update')
    expect(run.status).toBe('guardrailed')
    expect(run.guardrailReason).toBe('binary file: late.bin.txt')
  })
})

describe('git URLs that are no repository', () => {
  for (const gitUrl of ['ext::sh@host:path', 'fd::3@host:path', '-oProxyCommand=touch@host:path', 'ext::git-remote-x@x:y']) {
    test(`${gitUrl} is refused by connect-repo`, async () => {
      await expect(connect({ gitUrl, agentCommand: 'true' })).rejects.toThrow(/--git-url must be/)
    })
  }
})

describe("fixloop's own git follows no symlink the agent named .git", () => {
  test('a nested repository that is a symlink (sub/.git -> a crafted git dir whose packed-refs is a host file) is guardrailed; no line of the file is quoted', async () => {
    // A host file the agent cannot read (0600, outside the sandbox): fixloop's git, outside the sandbox,
    // read it for the agent and quoted a line in its error ("unexpected line in sub/.git/packed-refs: …").
    const dir = tempDir('fixloop-hostfile-')
    const hostFile = join(dir, 'secret.txt')
    // Prose, not credential-shaped (the scrubber masks a key; a line of a private file passes it).
    const marker = `the host file says ${[...randomBytes(6)].map((b) => String.fromCharCode(97 + (b % 26))).join('')} quietly`
    writeFileSync(hostFile, `${marker}\n${marker}-two\n`, { mode: 0o600 })
    try {
      const plant = `mkdir -p fake/refs/heads fake/objects sub && echo 'ref: refs/heads/x' > fake/HEAD && ln -s ${hostFile} fake/packed-refs && ln -s ../fake sub/.git && echo hi > sub/file && echo 'export const y = 2' >> src/app.js`
      const run = await runWith(plant, 'The profile page shows the wrong avatar image')
      expect(run.status).toBe('guardrailed')
      expect(run.guardrailReason).toBe('a nested git repository (sub/.git)')
      expect(JSON.stringify(run)).not.toContain(marker)
      const item = (await call(srv.url, 'GET', `/v1/feedback/${run.feedbackId}`, { auth: t.key })).body
      expect(JSON.stringify(item)).not.toContain(marker)
      expect(branchExists(bare, run.branch)).toBe(false)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('a nested .git symlink to a folder of files is guardrailed too (git reads its HEAD and refs)', async () => {
    const run = await runWith(`mkdir -p lib && ln -s /usr lib/.git && echo 'export const z = 3' >> src/app.js`, 'The library page loads forever after the update')
    expect(run.status).toBe('guardrailed')
    expect(run.guardrailReason).toBe('a nested git repository (lib/.git)')
  })
})

describe('file names that are not UTF-8', () => {
  test('two names that read alike once decoded (big\\xfe.txt, big\\xff.txt) do not share one size: the large file is refused', async () => {
    // Decoded as UTF-8 both are "big\uFFFD.txt": sizes were looked up by that name, so the small file's
    // size stood for the large one too.
    const run = await runWith(`head -c 3000000 /dev/zero | tr '\\0' 'a' > "$(printf 'big\\376.txt')" && echo small > "$(printf 'big\\377.txt')"`, 'The export page times out on large accounts today')
    expect(run.status).toBe('guardrailed')
    expect(run.guardrailReason).toMatch(/^file too large: big.*\.txt \(3000000 bytes/)
  })
})

describe('a huge file is refused by its size before git reads it', () => {
  test('a 20 GB sparse file is guardrailed in seconds (git hashed all of it, up to its 120 s timeout, before the size check)', async () => {
    const started = Date.now()
    const run = await runWith(`truncate -s 20G huge.bin && echo 'export const y = 2' >> src/app.js`, 'The download page hangs on the biggest files')
    expect(run.status).toBe('guardrailed')
    expect(run.guardrailReason).toBe(`file too large: huge.bin (${20 * 1024 ** 3} bytes, limit 1048576)`)
    expect(branchExists(bare, run.branch)).toBe(false)
    expect(Date.now() - started).toBeLessThan(15_000)
  })

  test('a 20 GB sparse file the repository ignores is no reason: git never stages it, the fix beside it is pushed', async () => {
    const started = Date.now()
    const run = await runWith(`printf 'out/\\n' > .gitignore && mkdir -p out && truncate -s 20G out/cache.bin && echo 'export const y = 3' >> src/app.js`, 'The cache page shows stale numbers after a reload')
    expect(run.status).toBe('succeeded')
    expect(branchExists(bare, run.branch)).toBe(true)
    expect(Date.now() - started).toBeLessThan(15_000)
  })

  // The walk and git's judgement of the files touch no database: on the PostgreSQL run of this file
  // (scripts/test-pg.sh) this case would only repeat the SQLite run's ~30 s of git work.
  test.skipIf(process.env.FIXLOOP_TEST_DIALECT === 'pg')('50,000 sparse files the repository ignores by a pattern are judged in seconds (git was asked about them 200 at a time, each call re-reading their folder: minutes, a million of them hours)', async () => {
    const files = (size: string, y: number) => `printf '*.bin\\n' > .gitignore && mkdir -p out && (cd out && seq -f 'f%06g.bin' 1 50000 | xargs truncate -s ${size}) && echo 'export const y = ${y}' >> src/app.js`
    // The same run with files under the size limit first: the clone, the agent's 50,000 truncates, the size
    // walk, add -A and the push, on this machine at this moment, with no large file for git to judge.
    const baselineStarted = Date.now()
    const baseline = await runWith(files('2K', 5), 'Shipping labels cut off the last line of long addresses', 90_000)
    const baselineMs = Date.now() - baselineStarted
    expect(baseline.status).toBe('succeeded')
    const started = Date.now()
    const run = await runWith(files('2M', 4), 'Invoice PDFs render Korean street names as empty boxes', 90_000)
    const ms = Date.now() - started
    expect({ status: run.status, reason: run.guardrailReason }).toEqual({ status: 'succeeded', reason: null })
    expect(branchExists(bare, run.branch)).toBe(true)
    // Not a speed target: the old walk took ~40 s for these alone on a quiet machine (and hours for a million),
    // and under load did not end within a minute. Against the baseline, not a fixed 30 s: under CI-like load
    // this run took 19.5-27.5 s of those 30 (the baseline 11-15 s), and the baseline slows with it.
    expect(ms).toBeLessThan(3 * baselineMs + 10_000)
  }, 240_000)
})

describe('the output scrubber sees the text as it is stored', () => {
  test('a passed-through key printed with a control character or a bidi override inside is not stored whole once they are dropped', async () => {
    // Split the value with \x01 (and U+202E): the literal scrub found no match, then the control characters
    // were dropped, joining the key back together in the stored output tail and summary.
    const split = `half=$((\${#AA_PROXY_PASSWORD} / 2)); a=$(printf '%s' "$AA_PROXY_PASSWORD" | cut -c1-$half); b=$(printf '%s' "$AA_PROXY_PASSWORD" | cut -c$((half + 1))-)`
    const cmd = `${split}; printf '%s\\001%s\\n' "$a" "$b"; printf '{"summary":"key %s\\\\u202e%s"}' "$a" "$b" > "$FIXLOOP_RESULT_FILE"; echo 'export const w = 1' >> src/app.js`
    const run = await runWith(cmd, 'The settings page forgets the chosen language')
    expect(run.status).toBe('succeeded')
    expect(run.outputTail).toContain('[REDACTED:agent_env]')
    expect(run.summary).toContain('[REDACTED:agent_env]')
    expect(JSON.stringify(run)).not.toContain(PASSED)
  })
})

describe('a large file inside a submodule of the repository', () => {
  test('is no reason (git add never stages inside a submodule; check-ignore refused to be asked about it and the run failed)', async () => {
    // An App of its own: the first one has spent its 20 runs a day.
    t = await seedTenant(srv.admin, { processingMode: 'auto_pr' }, 'Submodules')
    // The base gains a submodule at vendor/lib (a gitlink; its commit need not exist here).
    const work = tempDir('fixloop-gitlink-')
    const git = (...args: string[]) => {
      const r = Bun.spawnSync(['git', '-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: work, stderr: 'pipe' })
      if (r.exitCode !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr.toString()}`)
    }
    git('clone', '-q', bare, '.')
    git('update-index', '--add', '--cacheinfo', `160000,${'ab'.repeat(20)},vendor/lib`)
    git('commit', '-qm', 'vendor lib as a submodule')
    git('push', '-q', 'origin', 'HEAD:main')
    const run = await runWith(
      `mkdir -p vendor/lib && truncate -s 2M vendor/lib/big.bin && echo 'export const y = 5' >> src/app.js`,
      'The pricing table rounds euros to whole numbers since Monday',
    )
    expect({ status: run.status, reason: run.guardrailReason }, JSON.stringify(run)).toEqual({ status: 'succeeded', reason: null })
    expect(branchExists(bare, run.branch)).toBe(true)
  })
})

describe('a large file whose name holds a line break', () => {
  // The base tracks a 2 MB file named "data<LF>set.bin". The base's sizes were read with cat-file
  // --batch-check, one name a line, so such a name was never looked up and always refused, even left
  // as the base has it; it is now looked up by ls-tree -z and judged like any other name.
  const NAME = 'data\nset.bin'
  beforeAll(() => {
    const work = tempDir('fixloop-newline-')
    const git = (...args: string[]) => {
      const r = Bun.spawnSync(['git', '-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: work, stderr: 'pipe' })
      if (r.exitCode !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr.toString()}`)
    }
    git('clone', '-q', bare, '.')
    writeFileSync(join(work, NAME), Buffer.alloc(2_000_000, 'a'))
    git('add', '-A')
    git('commit', '-qm', 'a data set whose name holds a line break')
    git('push', '-q', 'origin', 'HEAD:main')
  })

  test('left at its base size it is no reason: the fix beside it is pushed', async () => {
    // An App of its own: the first one has spent its 20 runs a day.
    t = await seedTenant(srv.admin, { processingMode: 'auto_pr' }, 'Line breaks')
    const run = await runWith(`echo 'export const y = 6' >> src/app.js`, 'The receipt page shows yesterday as the order date')
    expect({ status: run.status, reason: run.guardrailReason }, JSON.stringify(run)).toEqual({ status: 'succeeded', reason: null })
    expect(branchExists(bare, run.branch)).toBe(true)
  })

  test('grown, or new under such a name, it is refused as too large', async () => {
    const grown = await runWith(`printf 'more' >> "$(printf 'data\\nset.bin')" && echo 'export const y = 7' >> src/app.js`, 'The receipt page shows the wrong currency sign')
    expect({ status: grown.status, reason: grown.guardrailReason }).toEqual({ status: 'guardrailed', reason: `file too large: ${NAME} (2000004 bytes, limit 1048576)` })
    const added = await runWith(`head -c 3000000 /dev/zero > "$(printf 'new\\nbig.bin')" && echo 'export const y = 8' >> src/app.js`, 'The receipt page prints the tax line twice')
    expect({ status: added.status, reason: added.guardrailReason }).toEqual({ status: 'guardrailed', reason: 'file too large: new\nbig.bin (3000000 bytes, limit 1048576)' })
  })
})
