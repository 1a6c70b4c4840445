/**
 * /openapi.json is a valid OpenAPI 3.1 document listing every route with its error responses, and
 * /docs renders an interactive explorer in a real browser with no internet access.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { call, seedTenant, startTestServer, type TestServer } from './harness'
import { BROWSER_SKIP, launchBrowser } from './browser'
import { brokenDocLinks } from './doc-links'
import { readdirSync, readFileSync } from 'node:fs'
import { SETTINGS } from '../src/core/settings'

let srv: TestServer
let browser: Browser
beforeAll(async () => {
  srv = await startTestServer()
  if (!BROWSER_SKIP) browser = await launchBrowser()
})
afterAll(async () => {
  await browser?.close()
  await srv.close()
})

const ROUTES: [string, string, string[]][] = [
  ['post', '/v1/feedback', ['201', '400', '401', '403', '409', '413', '429', '500']],
  ['get', '/v1/feedback', ['200', '400', '401', '404', '413', '429', '500']],
  ['get', '/v1/feedback/{id}', ['200', '400', '401', '404', '413', '429', '500']],
  ['patch', '/v1/feedback/{id}', ['200', '400', '401', '404', '409', '413', '429', '500']],
  ['get', '/v1/apps', ['200', '401', '413', '429', '500']],
  ['post', '/v1/tokens/mint', ['200', '400', '401', '403', '404', '413', '429', '500']],
  ['post', '/v1/feedback/upload-url', ['200', '400', '401', '403', '413', '429', '500']],
  ['put', '/v1/uploads/{appId}/{name}', ['200', '400', '401', '403', '404', '409', '413', '500']],
  ['get', '/v1/uploads/{appId}/{name}', ['200', '400', '403', '404', '500']],
  ['get', '/v1/feedback/{id}/similar', ['200', '400', '401', '404', '409', '413', '429', '500']],
  ['post', '/v1/feedback/{id}/merge', ['200', '400', '401', '404', '409', '413', '429', '500']],
  ['post', '/v1/feedback/{id}/unmerge', ['200', '400', '401', '404', '409', '413', '429', '500']],
  ['post', '/v1/feedback/{id}/reject-suggestion', ['200', '400', '401', '404', '409', '413', '429', '500']],
  ['get', '/v1/apps/{id}/triage', ['200', '400', '401', '404', '413', '429', '500']],
  ['get', '/healthz', ['200']],
  ['get', '/readyz', ['200', '413', '500', '503']],
  ['get', '/metrics', ['200', '401', '413', '500']],
  ['get', '/', ['200']],
]

describe('/openapi.json', () => {
  test('is OpenAPI 3.1 and lists every route with its error responses', async () => {
    const r = await call(srv.url, 'GET', '/openapi.json')
    expect(r.status).toBe(200)
    expect(r.body.openapi).toMatch(/^3\.1\./)
    for (const [method, path, statuses] of ROUTES) {
      const op = r.body.paths[path]?.[method]
      expect(op, `${method} ${path}`).toBeDefined()
      expect(Object.keys(op.responses).sort()).toEqual([...statuses].sort())
    }
    const submit = r.body.paths['/v1/feedback'].post
    const body = submit.requestBody.content['application/json'].schema
    expect(body.additionalProperties).toBe(false)
    expect(body.properties.text.maxLength).toBe(8192)
    const conflict = submit.responses['409'].content['application/json'].schema
    expect(conflict.properties.error.properties.code.enum).toContain('idempotency_key_reused')
  })

  test('closing the loop (CONTRACT.md): the resolved status, notifyEmail, the run\'s trigger, the reporter\'s and the git host\'s routes', async () => {
    const doc = (await call(srv.url, 'GET', '/openapi.json')).body
    const ok = (path: string, method: string) => doc.paths[path]?.[method]?.responses['200'].content['application/json'].schema
    expect(ok('/v1/feedback/{id}', 'get').properties.status.enum).toContain('resolved')
    expect(ok('/v1/me/feedback', 'get').properties.data.items.properties.status.enum).toContain('resolved')
    expect(ok('/v1/me/feedback', 'get').properties.data.items.required.sort()).toEqual(['createdAt', 'id', 'status', 'text'])
    expect(ok('/v1/agent-runs/{id}', 'get').properties.trigger.enum).toEqual(['report', 'review'])
    expect(doc.paths['/v1/feedback'].post.requestBody.content['application/json'].schema.properties.notifyEmail.type).toBe('boolean')
    expect(doc.paths['/v1/git-hooks/{appId}']?.post).toBeDefined()
  })

  test('passes an OpenAPI 3.1 schema validator', async () => {
    const { Validator } = await import('@seriousme/openapi-schema-validator')
    const doc = (await call(srv.url, 'GET', '/openapi.json')).body
    const validator = new Validator()
    const result = await validator.validate(doc)
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
    expect(validator.version).toBe('3.1')
  })

  test('every API operation documents a success status, and the 413 the 8 MB body limit answers on every route before routing (the signed download aside, which is exempt)', async () => {
    const doc = (await call(srv.url, 'GET', '/openapi.json')).body
    const missing: string[] = []
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, { responses?: Record<string, unknown> }>>)) {
      for (const [method, op] of Object.entries(item)) {
        const statuses = Object.keys(op.responses ?? {})
        // Pages and probes (/, /healthz, /admin, the mail links) document no error envelope.
        if (!statuses.some((s) => s.startsWith('4'))) continue
        if (!statuses.some((s) => s.startsWith('2'))) missing.push(`${method} ${path}: no 2xx`)
        const exempt = method === 'get' && path === '/v1/uploads/{appId}/{name}'
        if (statuses.includes('413') === exempt) missing.push(`${method} ${path}: 413 ${exempt ? 'documented' : 'missing'}`)
      }
    }
    expect(missing).toEqual([])
    // What the document says is what the server does: routes that did not list 413 answer it.
    const t = await seedTenant(srv.admin)
    const big = 'x'.repeat(8 * 1024 * 1024 + 1)
    for (const [method, path] of [['PATCH', `/v1/feedback/${'a'.repeat(24)}`], ['POST', `/v1/tokens/mint?appId=${t.appId}`], ['POST', '/v1/reporters/erase']] as const) {
      const r = await call(srv.url, method, path, { auth: t.key, rawBody: big, headers: { 'content-type': 'application/json' } })
      expect([method, path, r.status, r.body.error.code]).toEqual([method, path, 413, 'payload_too_large'])
    }
    // The signed download refuses a query it does not take (400 invalid_body), as its document now says.
    const junk = await call(srv.url, 'GET', `/v1/uploads/${t.appId}/${'a'.repeat(32)}?expires=1&sig=x&junk=1`)
    expect([junk.status, junk.body.error.code]).toEqual([400, 'invalid_body'])
    expect(doc.paths['/v1/uploads/{appId}/{name}'].get.responses['400'].content['application/json'].schema.properties.error.properties.code.enum).toContain('invalid_body')
    // A tracker's disconnection answers 204 with no body: documented so, with no content.
    expect(doc.paths['/v1/apps/{id}/tracker'].delete.responses['204']).toEqual({ description: expect.any(String) })
  })

  test('error codes documented for a route are the ones it sends', async () => {
    const doc = (await call(srv.url, 'GET', '/openapi.json')).body
    const t = await seedTenant(srv.admin)
    const r = await call(srv.url, 'PATCH', '/v1/feedback/zzz', { auth: t.key, body: { status: 'archived' } })
    expect(r.status).toBe(400)
    expect(doc.paths['/v1/feedback/{id}'].patch.responses['400'].content['application/json'].schema.properties.error.properties.code.enum).toContain(r.body.error.code)
  })
})

describe('what pr_opened with no URL means (branch mode)', () => {
  /** The JSON schema of a 200 response, with a $ref followed once. */
  const okSchema = (doc: any, path: string) => {
    const s = doc.paths[path].get.responses['200'].content['application/json'].schema
    return s.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s
  }
  test('the OpenAPI fields and the docs say: the branch was pushed, no pull request was opened (host none or --pr-mode branch)', async () => {
    const doc = (await call(srv.url, 'GET', '/openapi.json')).body
    const feedback = okSchema(doc, '/v1/feedback/{id}').properties.mergeRequestUrl
    const run = okSchema(doc, '/v1/agent-runs/{id}').properties.prUrl
    for (const field of [feedback, run]) {
      expect([field.type].flat().sort()).toEqual(['null', 'string'])
      expect(field.description).toMatch(/pr_opened/)
      expect(field.description).toMatch(/fixloop\/<feedback id>/)
      expect(field.description).toMatch(/--host none/)
      expect(field.description).toMatch(/--pr-mode branch/)
    }
    const api = await Bun.file(new URL('../docs/api.md', import.meta.url)).text()
    const row = api.split('\n').find((l) => l.startsWith('| `pr_opened` |'))!
    expect(row).toMatch(/`mergeRequestUrl` null/)
    expect(row).toMatch(/branch `fixloop\/<feedback id>` was pushed/)
    const agents = await Bun.file(new URL('../docs/agents.md', import.meta.url)).text()
    expect(agents).toContain('### `pr_opened` without a URL')
  })
})

describe('/docs', () => {
  test.skipIf(!!BROWSER_SKIP)('renders the explorer offline, with every route and a working "Try it out"', async () => {
    const page = await browser.newPage()
    const external: string[] = []
    page.on('request', (req) => {
      if (!req.url().startsWith(srv.url)) external.push(req.url())
    })
    // The page's policy allows this origin's scripts only: nothing the explorer needs may be refused by it.
    const refused: string[] = []
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) refused.push(m.text())
    })
    const res = await page.goto(srv.url + '/docs')
    const csp = res!.headers()['content-security-policy'] ?? ''
    expect(csp).toContain("script-src 'self'")
    expect(csp.match(/script-src[^;]*/)![0]).not.toContain('unsafe')
    expect(csp).toContain("frame-ancestors 'none'")
    expect(res!.headers()['x-frame-options']).toBe('DENY')
    expect(res!.headers()['x-content-type-options']).toBe('nosniff')
    // Generous: the explorer parses the whole document (now with the dashboard's routes too) on 2 shared cores.
    await page.waitForSelector('.opblock', { timeout: 45_000 })
    const paths = await page.$$eval('.opblock-summary-path', (els) => els.map((e) => e.textContent?.replace(/\u200b/g, '').trim()))
    for (const p of ['/v1/feedback', '/v1/feedback/{id}', '/v1/apps', '/v1/tokens/mint', '/v1/feedback/upload-url', '/v1/feedback/{id}/similar']) expect(paths).toContain(p)
    // Try it out: call GET /healthz from the explorer and read the live response.
    await page.click('#operations-operations-getHealthz .opblock-summary')
    await page.click('#operations-operations-getHealthz .try-out__btn')
    await page.click('#operations-operations-getHealthz .execute')
    const status = await page.waitForSelector('#operations-operations-getHealthz .live-responses-table tbody .response-col_status', { timeout: 10_000 })
    expect((await status.textContent())?.trim()).toBe('200')
    expect(external).toEqual([])
    expect(refused).toEqual([])
    // For a human, when asked for: nothing reads it (the default went into the data dir deleted after the file).
    if (process.env.DOCS_SCREENSHOT) await page.screenshot({ path: process.env.DOCS_SCREENSHOT })
    await page.close()
    // Its own time limit: the explorer parses the whole document on 2 shared cores, under a plain `bun test` too.
  }, 60_000)
})

describe('responses match their documented schemas', () => {
  // The hot read routes skip Elysia's response validation (it cost ~10% of a list request);
  // this checks real responses against the same schemas instead.
  test('list, read, submit, patch and mint responses conform', async () => {
    const { Value } = await import('@sinclair/typebox/value')
    const { FeedbackPage, FullFeedbackItem, SubmitResponse, PatchResponse } = await import('../src/modules/feedback/model')
    const { MintResponse } = await import('../src/modules/tokens/index')
    const t = await seedTenant(srv.admin)
    const token = await call(srv.url, 'POST', `/v1/tokens/mint?appId=${t.appId}`, { auth: t.key, body: { sub: 'u1', ctx: { email: 'u@example.com' } } })
    expect(Value.Check(MintResponse, token.body)).toBe(true)
    const sub = await call(srv.url, 'POST', '/v1/feedback', {
      auth: t.pub,
      headers: { 'x-service-user-token': token.body.token },
      body: { text: 'Schema check: everything set', severity: 'high', url: 'https://a.example/x', viewport: { w: 1, h: 2, dpr: 1 }, consoleLogs: [{ level: 'error', message: 'boom', ts: 1 }], componentTarget: { name: 'X', bbox: { x: 0, y: 0, w: 1, h: 1 } }, metadata: { plan: 'pro' } },
    })
    expect(Value.Check(SubmitResponse, sub.body)).toBe(true)
    const plain = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'Schema check: minimal' } })
    for (const id of [sub.body.id, plain.body.id]) {
      const one = await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })
      expect([...Value.Errors(FullFeedbackItem, one.body)].map((e) => `${e.path}: ${e.message}`)).toEqual([])
    }
    const page = await call(srv.url, 'GET', '/v1/feedback?includeDuplicates=true', { auth: t.key })
    expect([...Value.Errors(FeedbackPage, page.body)].map((e) => `${e.path}: ${e.message}`)).toEqual([])
    const patched = await call(srv.url, 'PATCH', `/v1/feedback/${plain.body.id}`, { auth: t.key, body: { status: 'archived' } })
    expect(Value.Check(PatchResponse, patched.body)).toBe(true)
  })
})

describe('links in README.md and docs/*.md', () => {
  test('every relative link names a file that exists, and every #anchor a heading (or <a id>) of its page', () => {
    expect(brokenDocLinks()).toEqual([])
  })

  test('the check itself: a missing file, a missing anchor and a heading\'s GitHub slug are told apart', () => {
    const pages = new Map([
      ['docs/a.md', '# Title\n## Backup and restore (`fixloop backup`)\n## Twice\n## Twice\n<a id="kept"></a>\n```\n## Not a heading\n```\n'],
      ['README.md', '[ok](docs/a.md#backup-and-restore-fixloop-backup) [second](docs/a.md#twice-1) [id](docs/a.md#kept) [code](docs/a.md#not-a-heading) [gone](docs/b.md) [self](#nowhere)'],
    ])
    expect(brokenDocLinks(pages)).toEqual([
      'README.md:1: docs/a.md#not-a-heading: no such heading',
      'README.md:1: docs/b.md: no such file',
      'README.md:1: #nowhere: no such heading',
    ])
  })
})

describe('settings named in docs/*.md', () => {
  const docsDir = new URL('../docs/', import.meta.url).pathname
  const pages = () => readdirSync(docsDir).filter((f) => f.endsWith('.md')).map((f) => ({ file: f, text: readFileSync(docsDir + f, 'utf8') }))

  test('every FIXLOOP_* variable a page names is one the code reads (or a test switch the tests read)', () => {
    const root = new URL('../', import.meta.url).pathname
    const sources = ['src', 'test', 'scripts']
      .flatMap((dir) => (readdirSync(root + dir, { recursive: true }) as string[]).filter((f) => /\.(ts|js|sh)$/.test(f)).map((f) => readFileSync(`${root}${dir}/${f}`, 'utf8')))
      .join('\n')
    const unknown: string[] = []
    for (const { file, text } of pages()) {
      // `FIXLOOP_S3_*` names a group: its prefix must be read; any other name as a whole word.
      for (const [name] of text.matchAll(/FIXLOOP_[A-Z0-9_]+/g)) if (!new RegExp(name.endsWith('_') ? name : `\\b${name}\\b`).test(sources)) unknown.push(`${file}: ${name}`)
    }
    expect([...new Set(unknown)]).toEqual([])
  })

  test('a default a page states for a setting ("`FIXLOOP_X` (default N)") is the one src/core/settings.ts gives', () => {
    const wrong: string[] = []
    let checked = 0
    for (const { file, text } of pages()) {
      for (const m of text.matchAll(/`(FIXLOOP_[A-Z0-9_]+)`[^.;`|]{0,40}?\bdefault:?\s+(\d[\d,]*(?:\.\d+)?)/g)) {
        const setting = SETTINGS.find((s) => s.env.includes(m[1]))
        const stated = m[2].replace(/,$/, '').replace(/,/g, '')
        // Settings without a numeric default of their own (the S3 group's region) are not compared.
        if (!setting || !/^\d/.test(setting.default)) continue
        checked++
        if (stated !== setting.default) wrong.push(`${file}: ${m[1]} default ${stated}, settings.ts ${setting.default}`)
      }
    }
    expect(wrong).toEqual([])
    expect(checked).toBeGreaterThan(15)
  })
})
