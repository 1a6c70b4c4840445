/**
 * A newcomer's path through the compiled binary: the README's "First feedback, step by step" run as
 * written (its sh block, against a real `fixloop serve`), and the errors a first try runs into saying what
 * to do: a query parameter put in the body, a query parameter misspelt, a CLI command missing its --org.
 * SQLite only: what it checks is the same on both dialects, and the README's path is the data dir's.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { BINARY, call, ROOT, runBinary, spawnServer, tempDir } from './harness'
import { BROWSER_SKIP, launchBrowser } from './browser'

let dir: string
let server: Awaited<ReturnType<typeof spawnServer>>

async function cli(...args: string[]): Promise<any> {
  const r = await runBinary([...args, '--data-dir', dir, '--json'])
  if (r.code !== 0) throw new Error(`fixloop ${args.join(' ')}: exit ${r.code}: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

beforeAll(async () => {
  dir = join(tempDir('fixloop-newcomer-'), 'data')
  server = await spawnServer(dir)
}, 60_000)

afterAll(async () => {
  await server?.stop()
})

const HEX24 = '[0-9a-f]{24}'
/** The README's sample output line (`# → {...}`) as a pattern: each "…" stands for an id. */
const samplePattern = (line: string) => new RegExp('^' + line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/…/g, HEX24) + '$', 'm')

describe('the README, step by step', () => {
  const hasJq = Bun.which('jq') !== null && Bun.which('curl') !== null
  test.skipIf(!hasJq)('"First feedback, step by step" runs as written and prints what its comments show (skipped without jq and curl, which the README asks for)', async () => {
    const readme = await Bun.file(join(ROOT, 'README.md')).text()
    const section = readme.slice(readme.indexOf('## First feedback, step by step'))
    const script = /```sh\n([\s\S]*?)```/.exec(section)![1]
    expect(script).toContain('F=./dist/fixloop')
    expect(script).toContain('http://127.0.0.1:8080/')
    const run = script.replaceAll('F=./dist/fixloop', `F=${BINARY}`).replaceAll('http://127.0.0.1:8080', server.url)
    const proc = Bun.spawn(['bash', '-euo', 'pipefail', '-c', run], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', FIXLOOP_DATA_DIR: dir, FIXLOOP_PASSWORD_HASH_MIB: '19' },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    expect(code, stderr).toBe(0)
    // The signing secret step prints 64 hex characters.
    expect(stdout).toMatch(/^[0-9a-f]{64}$/m)
    // Every "# → …" sample line of the block is what the command above it printed.
    const samples = [...script.matchAll(/^# → (.*)$/gm)].map((m) => m[1])
    expect(samples.length).toBeGreaterThanOrEqual(2)
    for (const sample of samples) expect(stdout).toMatch(samplePattern(sample))
  }, 60_000)
})

describe('errors a first try runs into say what to do', () => {
  test('POST /v1/tokens/mint with appId in the body: the answer says appId goes in the query string', async () => {
    const org = await cli('org', 'create', '--name', 'Newcomer')
    const key = (await cli('key', 'create', '--org', org.id, '--name', 'backend')).key
    const app = await cli('app', 'create', '--org', org.id, '--name', 'Shop')
    const r = await call(server.url, 'POST', '/v1/tokens/mint', { auth: key, body: { sub: 'user-42', appId: app.id } })
    expect(r.status).toBe(400)
    expect(r.body.error.code).toBe('invalid_body')
    expect(r.body.error.message).toBe('A query parameter is not valid (see details.issues).')
    expect(r.body.error.details.issues).toEqual([{ path: '/appId', message: 'query parameter appId is missing: add ?appId=… to the URL' }])
    // The same call as the README makes it works.
    const ok = await call(server.url, 'POST', `/v1/tokens/mint?appId=${app.id}`, { auth: key, body: { sub: 'user-42' } })
    expect(ok.status).toBe(200)
  })

  test('a misspelt or a bad query parameter is named as one; a bad body field still reads as the body', async () => {
    const org = await cli('org', 'create', '--name', 'Newcomer')
    const key = (await cli('key', 'create', '--org', org.id, '--name', 'backend')).key
    const misspelt = await call(server.url, 'GET', '/v1/feedback?lmit=3', { auth: key })
    expect(misspelt.status).toBe(400)
    expect(misspelt.body.error.message).toBe('A query parameter is not valid (see details.issues).')
    expect(misspelt.body.error.details.issues).toEqual([{ path: '/lmit', message: 'lmit is not a query parameter of this route' }])
    const status = await call(server.url, 'GET', '/v1/feedback?status=open', { auth: key })
    expect(status.status).toBe(400)
    expect(status.body.error.details.issues[0].path).toBe('/status')
    expect(status.body.error.details.issues[0].message).toStartWith('query parameter status must be one of: "received"')
    const limit = await call(server.url, 'GET', '/v1/feedback?limit=0', { auth: key })
    expect(limit.status).toBe(400)
    expect(limit.body.error.message).toBe('A query parameter is not valid (see details.issues).')
    expect(limit.body.error.details.issues[0].path).toBe('/limit')
    const body = await call(server.url, 'POST', '/v1/tokens/mint?appId=' + '0'.repeat(24), { auth: key, body: { sub: 'u', appId: 'x' } })
    expect(body.status).toBe(400)
    expect(body.body.error.message).toBe('The request body is not valid.')
    expect(body.body.error.details.issues[0]).toEqual({ path: '/appId', message: "Property 'appId' should not be provided" })
  })

  test('query parameters checked in the handler read as query parameters too: /v1/audit?since, /v1/reporters/feedback without or with both identifiers', async () => {
    const org = await cli('org', 'create', '--name', 'Newcomer')
    const key = (await cli('key', 'create', '--org', org.id, '--name', 'backend')).key
    const cases: [string, string, string][] = [
      ['/v1/audit?since=2026-02-30', '/since', 'must be an ISO 8601 date or instant, e.g. 2026-01-31T00:00:00Z'],
      ['/v1/reporters/feedback', '/externalUserId', 'externalUserId or email is required'],
      ['/v1/reporters/feedback?externalUserId=u1&email=a@b.example', '/email', 'give externalUserId or email, not both'],
    ]
    for (const [path, at, message] of cases) {
      const r = await call(server.url, 'GET', path, { auth: key })
      expect([path, r.status, r.body.error.code, r.body.error.message]).toEqual([path, 400, 'invalid_body', 'A query parameter is not valid (see details.issues).'])
      expect(r.body.error.details.issues).toEqual([{ path: at, message }])
    }
    // The same rule on the erase route's body still names the body.
    const erase = await call(server.url, 'POST', '/v1/reporters/erase', { auth: key, body: {} })
    expect([erase.status, erase.body.error.message]).toEqual([400, 'The request body is not valid.'])
    expect(erase.body.error.details.issues).toEqual([{ path: '/externalUserId', message: 'externalUserId or email is required' }])
  })

  test('a submission refused for its Origin says whether it had none (a curl, a backend) or which one it had', async () => {
    const org = await cli('org', 'create', '--name', 'Newcomer')
    const app = await cli('app', 'create', '--org', org.id, '--name', 'Shop', '--allowed-origins', 'https://shop.example')
    const none = await call(server.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: { text: 'from curl' } })
    expect(none.status).toBe(403)
    expect(none.body.error.code).toBe('origin_not_allowed')
    expect(none.body.error.details).toEqual({ origin: null })
    expect(none.body.error.message).toContain('this request has no Origin header: a server-side submitter sends one of them as Origin')
    const other = await call(server.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: { text: 'from elsewhere' }, headers: { origin: 'http://127.0.0.1:3000' } })
    expect(other.status).toBe(403)
    expect(other.body.error.details).toEqual({ origin: 'http://127.0.0.1:3000' })
    expect(other.body.error.message).toBe("The Origin http://127.0.0.1:3000 is not one of this App's allowed origins (fixloop app update APP_ID --allowed-origins …).")
    const ok = await call(server.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: { text: 'from the shop' }, headers: { origin: 'https://shop.example' } })
    expect(ok.status).toBe(201)
  })

  test('a CLI command missing --org or its id, or given an unknown one, says where the ids come from (and its usage when missing; exit 2)', async () => {
    const list = await runBinary(['app', 'list', '--data-dir', dir])
    expect(list.code).toBe(2)
    expect(list.stdout).toBe('')
    expect(list.stderr).toStartWith('fixloop: missing --org (the Org ids: fixloop org list)\n')
    expect(list.stderr).toContain('Usage:\n  fixloop app list --org ORG_ID [--json]')
    const create = await runBinary(['key', 'create', '--data-dir', dir])
    expect(create.code).toBe(2)
    expect(create.stderr).toContain('fixloop: missing --org (the Org ids: fixloop org list)')
    expect(create.stderr).toContain('  fixloop key create --org ORG_ID [--name N] [--json]')
    // An Org's name where its id goes: the error names the command that lists the ids.
    const named = await runBinary(['key', 'create', '--org', 'Acme', '--data-dir', dir])
    expect(named.code).toBe(2)
    expect(named.stderr).toBe('fixloop: unknown org: Acme (org_not_found); the Org ids: fixloop org list\n')
    const app = await runBinary(['app', 'rotate-secret', '0'.repeat(24), '--data-dir', dir])
    expect(app.code).toBe(2)
    expect(app.stderr).toEndWith('(app_not_found); the App ids: fixloop app list --org ORG_ID\n')
    const rotate = await runBinary(['key', 'rotate', '--data-dir', dir])
    expect(rotate.code).toBe(2)
    expect(rotate.stderr).toStartWith('fixloop: missing KEY_ID argument (the key ids: fixloop key list --org ORG_ID)\n')
    expect(rotate.stderr).toContain('  fixloop key rotate KEY_ID [--json]')
  })
})

describe('fixloop --help', () => {
  test('names every subcommand of each command group, as the group\'s own --help lists them', async () => {
    const main = (await runBinary(['--help'])).stdout
    const lines = new Map([...main.matchAll(/^ {2}([a-z][a-z-]*) {2,}(.*)$/gm)].map((m) => [m[1], m[2].toLowerCase()]))
    expect(lines.size).toBeGreaterThanOrEqual(10)
    const missing: string[] = []
    for (const [group, line] of lines) {
      const own = await runBinary([group, '--help'])
      const subs = new Set([...(own.stdout + own.stderr).matchAll(new RegExp(`fixloop ${group} ([a-z][a-z-]*)`, 'g'))].map((m) => m[1]))
      // "redeliver" names redeliver-failed too; every other subcommand by its own name.
      for (const sub of subs) if (!line.includes(sub) && !(sub.endsWith('-failed') && line.includes(sub.split('-')[0]))) missing.push(`${group} ${sub}`)
    }
    expect(missing).toEqual([])
  }, 60_000)
})

describe('the widget on a page its App does not accept', () => {
  test.skipIf(!!BROWSER_SKIP)('keeps the report queued, as for a network error, and tells the integrator in the console to check the allowed origins', async () => {
    const org = await cli('org', 'create', '--name', 'Newcomer')
    const app = await cli('app', 'create', '--org', org.id, '--name', 'Shop', '--allowed-origins', 'https://shop.example')
    // The integrator's page, served from another origin than fixloop's (as on a real site).
    const page = `<!doctype html><meta charset="utf-8"><h1>Shop</h1><script src="${server.url}/widget.js" data-public-key="${app.publicKey}" async></script>`
    const site = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response(page, { headers: { 'content-type': 'text/html' } }) })
    const browser = await launchBrowser()
    try {
      const tab = await browser.newPage()
      const warnings: string[] = []
      tab.on('console', (m) => {
        if (m.type() === 'warning') warnings.push(m.text())
      })
      await tab.goto(`http://127.0.0.1:${site.port}/`)
      await tab.getByRole('button', { name: 'Report a problem' }).click()
      await tab.getByLabel('Describe the problem').fill('Refused for its origin')
      await tab.getByRole('button', { name: 'Send' }).click()
      // Online (the page loaded), so not "offline": the report waits, and the reporter is told it could not go now.
      await tab.getByText('Your report couldn’t be sent just now.').waitFor({ timeout: 20_000 })
      const hint = `[fixloop] ${server.url} answers, but the browser refused its answer to this page: is http://127.0.0.1:${site.port} one of the App's allowed origins?`
      const deadline = Date.now() + 10_000
      while (!warnings.some((w) => w.startsWith(hint)) && Date.now() < deadline) await Bun.sleep(50)
      expect(warnings.filter((w) => w.startsWith('[fixloop]'))).toEqual([expect.stringContaining(hint)])
    } finally {
      await browser.close()
      site.stop(true)
    }
  }, 60_000)
})
