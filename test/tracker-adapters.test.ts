/**
 * The tracker adapters' pure parts and their HTTP failure mapping, as scenario tables: webhook signatures
 * (valid, forged, missing; constant-time compare), hostile deliveries (never a throw, bounded), the REST
 * failures each becoming the right TrackerError (Retry-After and GitHub's rate-limit headers honoured, the
 * token never in a message, redirects never followed), the state mapping, the issue draft and the growth
 * comment's throttle.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { TrackerError, type TrackerTarget } from '../src/trackers/adapter'
import { adapterFor } from '../src/trackers/registry'
import { callTracker } from '../src/trackers/http'
import { actionFor } from '../src/modules/trackers/mapping'
import { commentDue, COMMENT_EVERY_MS, draftOf, titleOf } from '../src/modules/trackers/draft'
import type { LeadForTracker } from '../src/modules/trackers/repo'

const enc = (s: string) => new TextEncoder().encode(s)
const hmac = (secret: string, body: string) => createHmac('sha256', secret).update(body).digest('hex')

describe('webhook signatures', () => {
  const body = '{"action":"closed"}'
  const raw = enc(body)
  const cases: [string, 'github' | 'gitlab' | 'gitea', Record<string, string>, boolean][] = [
    ['github valid', 'github', { 'x-hub-signature-256': `sha256=${hmac('s3cret', body)}` }, true],
    ['github upper-case hex', 'github', { 'x-hub-signature-256': `sha256=${hmac('s3cret', body).toUpperCase()}` }, true],
    ['github other secret', 'github', { 'x-hub-signature-256': `sha256=${hmac('other', body)}` }, false],
    ['github the bare hex (Gitea style)', 'github', { 'x-hub-signature-256': hmac('s3cret', body) }, false],
    ['github missing', 'github', {}, false],
    ['gitea valid', 'gitea', { 'x-gitea-signature': hmac('s3cret', body) }, true],
    ['forgejo valid', 'gitea', { 'x-forgejo-signature': hmac('s3cret', body) }, true],
    ['gitea over another body', 'gitea', { 'x-gitea-signature': hmac('s3cret', body + ' ') }, false],
    ['gitea missing', 'gitea', {}, false],
    ['gitlab token', 'gitlab', { 'x-gitlab-token': 's3cret' }, true],
    ['gitlab wrong token', 'gitlab', { 'x-gitlab-token': 's3cre' }, false],
    ['gitlab missing', 'gitlab', {}, false],
  ]
  for (const [name, kind, headers, ok] of cases) {
    test(name, () => expect(adapterFor(kind)!.verifyWebhook(new Headers(headers), raw, 's3cret')).toBe(ok))
  }
})

describe('hostile deliveries: null or bounded news, never a throw', () => {
  const junk: unknown[] = [
    null, 1, 'x', [], {}, { action: 'closed' }, { action: 'closed', issue: null }, { action: 'closed', issue: { number: -1 } },
    { action: 'closed', issue: { number: 1.5 } }, { action: 'closed', issue: { number: '1e3' } }, { action: 'closed', issue: { number: 2 ** 60 } },
    { action: 'closed', issue: { number: 3, pull_request: { url: 'x' } } }, { action: 'edited', issue: { number: 3 } },
    { action: 'closed', issue: { number: 3 }, sender: { login: 'x'.repeat(10_000) }, repository: { full_name: 'y'.repeat(10_000) } },
    { object_attributes: { action: 'close', iid: 'abc' } }, { object_attributes: { action: 'close', iid: 4 }, project: 'nope', user: [] },
    { object_attributes: [] }, JSON.parse('{"__proto__":{"polluted":1},"action":"closed","issue":{"number":5}}'),
  ]
  for (const kind of ['github', 'gitea', 'gitlab'] as const) {
    const headers = new Headers({ 'x-github-event': 'issues', 'x-gitea-event': 'issues', 'x-gitlab-event': 'Issue Hook', 'x-github-delivery': 'd'.repeat(500) })
    test(kind, () => {
      for (const body of junk) {
        const news = adapterFor(kind)!.parseWebhook(headers, body, enc(JSON.stringify(body) ?? ''))
        if (news) {
          expect(news.issueId).toMatch(/^[1-9]\d{0,15}$/)
          expect(news.actor === null || news.actor.length <= 200).toBe(true)
          for (const p of news.projects ?? []) expect(p.length).toBeLessThanOrEqual(300)
          // A delivery id over 128 characters is replaced by the body's hash.
          expect(news.deliveryId.length).toBeLessThanOrEqual(128 + 7)
        }
      }
      expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    })
  }

  test('GitHub: closed as completed is done, as not planned canceled; reopened is open; deleted; a pull request never', () => {
    const gh = adapterFor('github')!
    const h = new Headers({ 'x-github-event': 'issues', 'x-github-delivery': 'abc' })
    const read = (action: string, issue: object) => gh.parseWebhook(h, { action, issue, sender: { login: 'ada' }, repository: { full_name: 'acme/shop' } }, enc('x'))
    expect(read('closed', { number: 7, state: 'closed', state_reason: 'completed' })).toEqual({ issueId: '7', state: { name: 'closed', category: 'done' }, actor: 'ada', deliveryId: 'abc', projects: ['acme/shop'] })
    expect(read('closed', { number: 7, state: 'closed', state_reason: 'not_planned' })!.state).toEqual({ name: 'not_planned', category: 'canceled' })
    expect(read('reopened', { number: 7, state: 'open' })!.state).toEqual({ name: 'open', category: 'open' })
    expect(read('deleted', { number: 7, state: 'open' })!.deleted).toBe(true)
    expect(read('closed', { number: 7, state: 'closed', pull_request: {} })).toBeNull()
    expect(gh.parseWebhook(new Headers({ 'x-github-event': 'issue_comment' }), { action: 'created', issue: { number: 7 } }, enc('x'))).toBeNull()
  })

  test('GitLab: close and reopen of an issue (confidential too); the "update" delivery GitLab sends beside them is not news', () => {
    const gl = adapterFor('gitlab')!
    const body = (action: string) => ({ object_kind: 'issue', user: { username: 'ada' }, project: { id: 42, path_with_namespace: 'acme/shop' }, object_attributes: { iid: 3, state: action === 'close' ? 'closed' : 'opened', action } })
    const h = (event: string) => new Headers({ 'x-gitlab-event': event, 'x-gitlab-event-uuid': 'u-1' })
    expect(gl.parseWebhook(h('Issue Hook'), body('close'), enc('x'))).toEqual({ issueId: '3', state: { name: 'closed', category: 'done' }, actor: 'ada', deliveryId: 'u-1', projects: ['acme/shop', '42'] })
    expect(gl.parseWebhook(h('Confidential Issue Hook'), body('reopen'), enc('x'))!.state).toEqual({ name: 'opened', category: 'open' })
    expect(gl.parseWebhook(h('Issue Hook'), body('update'), enc('x'))).toBeNull()
    expect(gl.parseWebhook(h('Merge Request Hook'), body('close'), enc('x'))).toBeNull()
  })
})

describe('REST failures become TrackerErrors (never the token)', () => {
  const TOKEN = 'tok_SECRET_1234567890'
  let server: ReturnType<typeof Bun.serve>
  beforeAll(() => {
    server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch(req) {
        const [, status, variant] = new URL(req.url).pathname.split('/')
        const headers: Record<string, string> = {}
        if (variant === 'retry') headers['retry-after'] = '42'
        if (variant === 'date') headers['retry-after'] = new Date(Date.now() + 90_000).toUTCString()
        if (variant === 'reset') Object.assign(headers, { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(Math.floor(Date.now() / 1000) + 300) })
        if (status === '302') headers.location = 'http://127.0.0.1:9/steal'
        return new Response(JSON.stringify({ message: `echoing your token ${TOKEN}` }), { status: Number(status), headers })
      },
    })
  })
  afterAll(() => server.stop(true))
  const call = (path: string) => callTracker({ kind: 'github', token: TOKEN }, { method: 'GET', url: `http://127.0.0.1:${server.port}${path}`, headers: { authorization: `Bearer ${TOKEN}` }, what: 'testing' })
  const cases: [string, string, TrackerError['failure'], [number, number] | null][] = [
    ['401', '/401', 'unauthorized', null],
    ['403 without a limit', '/403', 'unauthorized', null],
    ['403 with Retry-After (secondary limit)', '/403/retry', 'rate_limited', [42_000, 42_000]],
    ['403 with X-RateLimit-Remaining 0 (primary limit)', '/403/reset', 'rate_limited', [290_000, 300_000]],
    ['429 with an HTTP-date Retry-After', '/429/date', 'rate_limited', [85_000, 90_000]],
    ['429 without a wait', '/429', 'rate_limited', [60_000, 60_000]],
    ['404', '/404', 'not_found', null],
    ['410 (deleted)', '/410', 'not_found', null],
    ['422', '/422', 'rejected', null],
    ['503', '/503', 'unreachable', null],
    ['a redirect is not followed', '/302', 'unreachable', null],
  ]
  for (const [name, path, failure, wait] of cases) {
    test(name, async () => {
      const e = (await call(path).catch((x: unknown) => x)) as TrackerError
      expect(e).toBeInstanceOf(TrackerError)
      expect(e.failure).toBe(failure)
      expect(e.message).not.toContain(TOKEN)
      if (wait) {
        expect(e.retryAfterMs).toBeGreaterThanOrEqual(wait[0])
        expect(e.retryAfterMs).toBeLessThanOrEqual(wait[1])
      }
    })
  }
  test('nothing listening: unreachable', async () => {
    const e = (await callTracker({ kind: 'gitea', token: TOKEN }, { method: 'GET', url: 'http://127.0.0.1:9/x', headers: {}, what: 'testing' }).catch((x: unknown) => x)) as TrackerError
    expect(e.failure).toBe('unreachable')
  })
  test('an adapter names the project of a wrong answer shape', async () => {
    const target: TrackerTarget = { kind: 'gitlab', apiUrl: `http://127.0.0.1:${server.port}/200`, project: 'a/b', token: TOKEN }
    const e = (await adapterFor("gitlab")!.readIssue(target, "1").catch((x: unknown) => x)) as TrackerError
    expect(e).toBeInstanceOf(TrackerError)
    expect(e.message).not.toContain(TOKEN)
  })
})

describe('state mapping', () => {
  const cases: [string, { name: string; category: 'open' | 'done' | 'canceled' }, Record<string, 'resolved' | 'reopen' | 'ignore'>, 'resolved' | 'reopen' | 'ignore'][] = [
    ['done → resolved', { name: 'closed', category: 'done' }, {}, 'resolved'],
    ['open → reopen', { name: 'open', category: 'open' }, {}, 'reopen'],
    ['canceled → ignore', { name: 'not_planned', category: 'canceled' }, {}, 'ignore'],
    ['the map first, case-insensitive', { name: 'Not_Planned', category: 'canceled' }, { not_planned: 'resolved' }, 'resolved'],
    ['a mapped open state', { name: 'In Review', category: 'open' }, { 'in review': 'ignore' }, 'ignore'],
    ['no prototype key', { name: 'constructor', category: 'open' }, {}, 'reopen'],
  ]
  for (const [name, state, map, action] of cases) test(name, () => expect(actionFor(state, map)).toBe(action))
})

describe('the issue draft', () => {
  const lead = (over: Partial<LeadForTracker> = {}): LeadForTracker => ({
    id: 'f1', org_id: 'o1', app_id: 'a1', status: 'awaiting_manual', severity: null, theme: null, text: 'raw?', consolidated_text: null, attachments: null, duplicate_of_id: null, duplicate_count: 0, redactions: '{}', ...over,
  })
  test('title: the theme, else the text\'s first line, on one line, bounded', () => {
    expect(titleOf(lead({ theme: 'Checkout total wrong', text: 'x' }))).toBe('Checkout total wrong')
    expect(titleOf(lead({ text: 'line\tone\u0000 two\nline three' }))).toBe('line one two')
    expect(titleOf(lead({ text: 'y'.repeat(500) })).length).toBe(200)
    expect(titleOf(lead({ text: '   ' }))).toBe('a user report')
  })
  test('title: neutralized like a pull request\'s: no closing keyword closes an issue, no team is pinged, no link or markup acts', () => {
    const title = titleOf(lead({ theme: '@team Fixes #1, closes acme/shop#2, resolves GH-3 see https://evil.test/x <b>`x`</b>' }))
    expect(title).toBe("@ team Fixes # 1, closes acme/shop# 2, resolves GH- 3 see [link] 'b''x''/b'")
    expect(title).not.toMatch(/#\d|@\w|GH-\d|https?:/)
    expect(draftOf(lead({ theme: '@acme/security Fixes #12' }), undefined).title).toBe('@ acme/security Fixes # 12')
  })
  test('attachments: screenshots counted as screenshots, recordings and other files named apart', () => {
    const attachments = JSON.stringify([
      { key: 'k1', kind: 'screenshot', contentType: 'image/png' },
      { key: 'k2', kind: 'attachment', contentType: 'text/plain' },
    ])
    const d = draftOf(lead({ attachments }), 'https://fx.example')
    expect(d.body).toContain('**Attachments:** 1 screenshot, 1 other file, on the report page: https://fx.example/admin/o/o1/r/f1')
    expect(d.body).not.toContain('2 screenshots')
    const many = JSON.stringify([...Array(3)].map((_, i) => ({ key: `s${i}`, kind: 'screenshot', contentType: 'image/png' })).concat([{ key: 'r', kind: 'recording', contentType: 'application/json' }]))
    expect(draftOf(lead({ attachments: many }), undefined).body).toContain('**Attachments:** 3 screenshots, 1 screen recording\n')
    expect(draftOf(lead({ attachments: '[]' }), undefined).body).not.toContain('Attachments')
    expect(draftOf(lead({ attachments: 'not json' }), undefined).body).not.toContain('Attachments')
  })
  test('body: the consolidated text fenced past its longest backtick run; labels from severity; links from the public URL', () => {
    const d = draftOf(lead({ consolidated_text: 'a ``` b ```` c @octocat', severity: 'low', duplicate_count: 2, attachments: '[{"key":"k1","kind":"screenshot"},{"key":"k2","kind":"screenshot"}]' }), 'https://fx.example')
    expect(d.body.startsWith('`````text\na ``` b ```` c @octocat\n`````')).toBe(true)
    expect(d.body).toContain('**Reports:** 3 (the lead and 2 duplicates)')
    expect(d.body).toContain('**Attachments:** 2 screenshots, on the report page: https://fx.example/admin/o/o1/r/f1')
    expect(d.labels).toEqual(['fixloop', 'severity:low'])
    expect(draftOf(lead(), undefined).body).toContain('fixloop report `f1`')
    expect(draftOf(lead({ text: 'z'.repeat(30_000) }), undefined).body.length).toBeLessThan(21_000)
  })
  test('growth comments: the first at once, then one an hour unless the cluster doubled', () => {
    const now = 10 * COMMENT_EVERY_MS
    expect(commentDue(2, 3, null, now)).toBe(true)
    expect(commentDue(2, 3, now - 60_000, now)).toBe(false)
    expect(commentDue(2, 4, now - 60_000, now)).toBe(true)
    expect(commentDue(2, 3, now - COMMENT_EVERY_MS, now)).toBe(true)
    expect(commentDue(3, 2, null, now)).toBe(false)
  })
})
