/**
 * The Jira Cloud adapter (src/trackers/jira.ts) against the strict Jira stub (test/jira-stub.ts): every
 * method, the failures (401, 404, 429 with Retry-After, down), the markdown → ADF conversion the stub
 * validates, the webhook signature (valid, forged, unsigned) and hostile webhook bodies. The token, and the
 * Basic header built from it, never appear in an error message.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { TrackerError, type TrackerTarget } from '../src/trackers/adapter'
import { markdownToAdf } from '../src/trackers/adf'
import { jiraAdapter as jira, jiraLabels, jiraState } from '../src/trackers/jira'
import { saasAdapters } from '../src/trackers/saas'
import { adfProblem, startJiraStub, type JiraStub } from './jira-stub'
import { deep, startReceiver } from './tracker-receiver'

let stub: JiraStub
let receiver: ReturnType<typeof startReceiver>
let target: TrackerTarget
const SECRET = 'jira-webhook-secret-5f2a'

beforeAll(async () => {
  stub = await startJiraStub()
  receiver = startReceiver()
  stub.setWebhook(receiver.url, SECRET)
  target = { kind: 'jira', apiUrl: stub.url, project: 'PROJ', token: stub.token, account: stub.email }
})
afterAll(async () => {
  await stub.stop()
  receiver.stop()
})

const basic = () => Buffer.from(`${stub.email}:${stub.token}`).toString('base64')
async function failure(p: Promise<unknown>): Promise<TrackerError> {
  try {
    await p
  } catch (e) {
    expect(e).toBeInstanceOf(TrackerError)
    const err = e as TrackerError
    // Neither the token nor the Basic credentials ever show.
    expect(err.message).not.toContain(stub.token)
    expect(err.message).not.toContain(basic())
    return err
  }
  throw new Error('expected a TrackerError')
}

const BODY = [
  '## What users report',
  'Checkout fails for 4 users.',
  'See [the dashboard](https://fixloop.example/admin/#/reports/fb_1) and https://fixloop.example/s/1',
  '',
  '- Severity: **high**',
  '- Cluster: 4 reports',
  '',
  '````text',
  'raw report text with ``` inside and [x](javascript:alert(1))',
  '````',
].join('\n')

describe('Jira adapter: the calls', () => {
  test('whoAmI names the token\u2019s account', async () => {
    expect(await jira.whoAmI(target)).toEqual({ actor: stub.accountId, displayName: 'fixloop bot' })
    expect(stub.requests.at(-1)!.headers.authorization).toBe(`Basic ${basic()}`)
  })

  test('createIssue sends a Bug with an ADF description and space-free labels, and reads its status', async () => {
    const issue = await jira.createIssue(target, { title: 'Checkout fails\nwith a 500', body: BODY, labels: ['fixloop', 'severity high'] })
    expect(issue).toEqual({ id: 'PROJ-1', key: 'PROJ-1', url: `${stub.url}/browse/PROJ-1`, state: { name: 'To Do', category: 'open' } })
    const stored = stub.issues.get('PROJ-1')!
    expect(stored.issueType).toBe('Bug')
    expect(stored.summary).toBe('Checkout fails with a 500')
    expect(stored.labels).toEqual(['fixloop', 'severity-high'])
    expect(adfProblem(stored.description)).toBeNull()
    const json = JSON.stringify(stored.description)
    expect(json).toContain('"type":"heading"')
    expect(json).toContain('"href":"https://fixloop.example/admin/#/reports/fb_1"')
    expect(json).toContain('"type":"codeBlock"')
    // The hostile link inside the code block stays text: no javascript: href anywhere.
    expect(json).not.toContain('"href":"javascript')
  })

  test('a project without a Bug type gets a Task', async () => {
    const issue = await jira.createIssue({ ...target, project: 'BIZ' }, { title: 'x', body: 'y', labels: [] })
    expect(stub.issues.get(issue.key)!.issueType).toBe('Task')
  })

  test('updateIssue replaces summary and description; addComment adds an ADF comment', async () => {
    await jira.updateIssue(target, 'PROJ-1', { title: 'Checkout fails (6 reports)', body: 'now *six*' })
    expect(stub.issues.get('PROJ-1')!.summary).toBe('Checkout fails (6 reports)')
    await jira.addComment(target, 'PROJ-1', 'The cluster grew to 6 reports.')
    expect(stub.issues.get('PROJ-1')!.comments).toHaveLength(1)
    expect(adfProblem(stub.issues.get('PROJ-1')!.comments[0])).toBeNull()
  })

  test('readIssue maps statuses by category, and done-category refusals to canceled', async () => {
    await stub.setStatus('PROJ-1', 'In Progress', 'indeterminate')
    expect((await jira.readIssue(target, 'PROJ-1')).state).toEqual({ name: 'In Progress', category: 'open' })
    await stub.setStatus('PROJ-1', 'Done', 'done')
    expect((await jira.readIssue(target, 'PROJ-1')).state).toEqual({ name: 'Done', category: 'done' })
    await stub.setStatus('PROJ-1', "Won't Do", 'done')
    expect((await jira.readIssue(target, 'PROJ-1')).state).toEqual({ name: "Won't Do", category: 'canceled' })
  })
})

describe('Jira adapter: failures', () => {
  const rows: { name: string; run: () => Promise<unknown>; prepare?: () => void; failure: string; status: number | null; retryAfterMs?: number }[] = [
    { name: 'a wrong token is unauthorized', run: () => jira.whoAmI({ ...target, token: 'ATATT3-wrong-token-value' }), failure: 'unauthorized', status: 401 },
    { name: 'no account e-mail is unauthorized before any request', run: () => jira.whoAmI({ ...target, account: undefined }), failure: 'unauthorized', status: null },
    { name: 'a missing issue is not_found', run: () => jira.readIssue(target, 'PROJ-999'), failure: 'not_found', status: 404 },
    { name: 'a malformed key is not_found without a request', run: () => jira.readIssue(target, '../../admin'), failure: 'not_found', status: null },
    { name: 'an update of a missing issue is not_found', run: () => jira.updateIssue(target, 'PROJ-999', { title: 't', body: 'b' }), failure: 'not_found', status: 404 },
    { name: 'an unknown project is rejected', run: () => jira.createIssue({ ...target, project: 'NOPE' }, { title: 't', body: 'b', labels: [] }), failure: 'rejected', status: 400 },
    { name: '429 is rate_limited with its Retry-After', prepare: () => stub.failNext(429, 7), run: () => jira.readIssue(target, 'PROJ-1'), failure: 'rate_limited', status: 429, retryAfterMs: 7000 },
    { name: 'a 503 is unreachable', prepare: () => stub.failNext(503), run: () => jira.addComment(target, 'PROJ-1', 'x'), failure: 'unreachable', status: 503 },
    { name: 'a server that is down is unreachable', run: () => jira.whoAmI({ ...target, apiUrl: 'http://127.0.0.1:1' }), failure: 'unreachable', status: null },
  ]
  for (const row of rows) {
    test(row.name, async () => {
      row.prepare?.()
      const err = await failure(row.run())
      expect(err.failure).toBe(row.failure as TrackerError['failure'])
      expect(err.status).toBe(row.status)
      if (row.retryAfterMs !== undefined) expect(err.retryAfterMs).toBe(row.retryAfterMs)
    })
  }

  test('a token the API echoes back is scrubbed from the message', async () => {
    const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (req) => new Response(`bad credentials: ${req.headers.get('authorization')}`, { status: 400 }) })
    try {
      const err = await failure(jira.whoAmI({ ...target, apiUrl: `http://127.0.0.1:${server.port}` }))
      expect(err.message).toContain('***')
    } finally {
      server.stop(true)
    }
  })
})

describe('Jira adapter: webhooks', () => {
  const last = () => receiver.received.at(-1)!
  const parsed = () => jira.parseWebhook(last().headers, JSON.parse(Buffer.from(last().raw).toString()), last().raw)

  test('a status change, correctly signed, reads as news with the actor and delivery id', async () => {
    const sent = await stub.setStatus('PROJ-1', 'Done', 'done', { id: 'b7f3c1e2-delivery' })
    expect(jira.verifyWebhook(last().headers, last().raw, SECRET)).toBe(true)
    expect(parsed()).toEqual({ issueId: 'PROJ-1', state: { name: 'Done', category: 'done' }, actor: '60c1f3a2b4d5e6f7a8b9c0d1', deliveryId: sent!.id, projects: ['PROJ'] })
  })

  test('fixloop\u2019s own change names its account as the actor', async () => {
    await stub.setStatus('PROJ-1', 'To Do', 'new', { actor: stub.accountId })
    expect(parsed()!.actor).toBe(stub.accountId)
    expect(parsed()!.state.category).toBe('open')
  })

  test('a forged signature, no signature, another secret or a changed body fail verification', async () => {
    await stub.setStatus('PROJ-1', 'Done', 'done', { secret: 'not-the-secret' })
    expect(jira.verifyWebhook(last().headers, last().raw, SECRET)).toBe(false)
    await stub.setStatus('PROJ-1', 'Done', 'done', { sign: false })
    expect(jira.verifyWebhook(last().headers, last().raw, SECRET)).toBe(false)
    await stub.setStatus('PROJ-1', 'Done', 'done')
    expect(jira.verifyWebhook(last().headers, last().raw, 'other-secret')).toBe(false)
    expect(jira.verifyWebhook(last().headers, new TextEncoder().encode(Buffer.from(last().raw).toString().replace('Done', 'Open')), SECRET)).toBe(false)
    expect(jira.verifyWebhook(last().headers, last().raw, '')).toBe(false)
  })

  test('a deletion reads as deleted; without the identifier header the delivery id is the body hash', async () => {
    const created = await jira.createIssue(target, { title: 'gone soon', body: 'x', labels: [] })
    await stub.remove(created.key)
    const news = parsed()!
    expect(news.deleted).toBe(true)
    expect(news.issueId).toBe(created.key)
    const headers = new Headers(last().headers)
    headers.delete('x-atlassian-webhook-identifier')
    expect(jira.parseWebhook(headers, JSON.parse(Buffer.from(last().raw).toString()), last().raw)!.deliveryId).toMatch(/^sha256:[0-9a-f]{64}$/)
  })

  test('an edit that does not change the status, and other events, are no news', () => {
    const h = new Headers()
    const raw = new Uint8Array()
    expect(jira.parseWebhook(h, { webhookEvent: 'jira:issue_updated', issue: { key: 'PROJ-1', fields: { status: { name: 'Done', statusCategory: { key: 'done' } } } }, changelog: { items: [{ field: 'summary', fieldId: 'summary' }] } }, raw)).toBeNull()
    expect(jira.parseWebhook(h, { webhookEvent: 'jira:issue_created', issue: { key: 'PROJ-1' } }, raw)).toBeNull()
    expect(jira.parseWebhook(h, { webhookEvent: 'comment_created' }, raw)).toBeNull()
  })

  const hostile: [string, unknown][] = [
    ['null', null],
    ['an array', [1, 2]],
    ['a string', 'jira:issue_updated'],
    ['deep nesting', deep(5000)],
    ['wrong types', { webhookEvent: 7, issue: 'PROJ-1', changelog: { items: 'status' } }],
    ['a key that is not a key', { webhookEvent: 'jira:issue_updated', issue: { key: '../x' }, changelog: { items: [{ field: 'status', toString: 'Done' }] } }],
    ['a huge key', { webhookEvent: 'jira:issue_deleted', issue: { key: `A-${'1'.repeat(100_000)}` } }],
    ['items of junk', { webhookEvent: 'jira:issue_updated', issue: { key: 'PROJ-1' }, changelog: { items: [null, 1, 'x', [], { field: 'status', toString: { a: 1 } }] } }],
    ['a status of the wrong type', { webhookEvent: 'jira:issue_updated', issue: { key: 'PROJ-1', fields: { status: 'Done' } }, changelog: { items: [{ fieldId: 'status', toString: 'Done' }] } }],
    ['a getter that throws', { get webhookEvent() { throw new Error('boom') } }],
  ]
  for (const [name, body] of hostile) {
    test(`a hostile body (${name}) never throws`, () => {
      expect(() => jira.parseWebhook(new Headers(), body, new Uint8Array([1]))).not.toThrow()
    })
  }
  test('a status change without the issue\u2019s fields falls back to the changelog\u2019s name', () => {
    const news = jira.parseWebhook(new Headers(), { webhookEvent: 'jira:issue_updated', issue: { key: 'PROJ-1', fields: { status: 'Done' } }, changelog: { items: [{ fieldId: 'status', toString: 'Done' }] } }, new Uint8Array([1]))
    expect(news!.state).toEqual({ name: 'Done', category: 'done' })
    // No fields.project: the key's prefix names the project.
    expect(news!.projects).toEqual(['PROJ'])
  })
})

describe('Jira helpers', () => {
  test('states', () => {
    expect(jiraState('Backlog', 'new').category).toBe('open')
    expect(jiraState('Declined', 'done').category).toBe('canceled')
    expect(jiraState('Shipped', 'done').category).toBe('done')
  })
  test('labels', () => expect(jiraLabels([' a b ', 'a-b', '', 'c'])).toEqual(['a-b', 'c']))
  test('markdown → ADF: every node valid for Jira, hostile input bounded', () => {
    for (const md of ['', '#', '- ', '```', '**', '[a](', 'x'.repeat(200_000), '> \n>', '1. a\n2) b', '\u0000\u0007text', '```\n\n```', '***', '# \n']) {
      const doc = markdownToAdf(md)
      expect(adfProblem(doc)).toBeNull()
      expect(JSON.stringify(doc).length).toBeLessThan(40_000)
    }
  })
  test('registered under its kind', () => expect(saasAdapters.jira).toBe(jira))
})
