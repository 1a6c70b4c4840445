/**
 * The Linear adapter (src/trackers/linear.ts) against the strict Linear stub (test/linear-stub.ts): every
 * method, GraphQL errors mapped to the seam's failures (authentication, RATELIMITED with the reset header,
 * entity not found, HTTP down), the webhook signature (valid, forged, unsigned) and its replay window
 * (webhookTimestamp within a minute of the adapter's clock), hostile webhook bodies. The API key never
 * appears in an error message.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../src/core/clock'
import { TrackerError, type TrackerTarget } from '../src/trackers/adapter'
import { createLinearAdapter, linearAdapter, linearState, REPLAY_WINDOW_MS } from '../src/trackers/linear'
import { saasAdapters } from '../src/trackers/saas'
import { startLinearStub, type LinearStub } from './linear-stub'
import { deep, startReceiver } from './tracker-receiver'

let stub: LinearStub
let receiver: ReturnType<typeof startReceiver>
let target: TrackerTarget
const clock = new ManualClock()
const linear = createLinearAdapter(clock)
const SECRET = 'lin_wh_signing_secret_9b1c'

beforeAll(async () => {
  stub = await startLinearStub()
  receiver = startReceiver()
  stub.setWebhook(receiver.url, SECRET)
  target = { kind: 'linear', apiUrl: stub.url, project: stub.teamId, token: stub.apiKey }
})
afterAll(async () => {
  await stub.stop()
  receiver.stop()
})

async function failure(p: Promise<unknown>): Promise<TrackerError> {
  try {
    await p
  } catch (e) {
    expect(e).toBeInstanceOf(TrackerError)
    expect((e as TrackerError).message).not.toContain(stub.apiKey)
    return e as TrackerError
  }
  throw new Error('expected a TrackerError')
}

let issueId = ''

describe('Linear adapter: the calls', () => {
  test('whoAmI sends the API key as is and names the viewer', async () => {
    expect(await linear.whoAmI(target)).toEqual({ actor: stub.viewerId, displayName: 'fixloop bot' })
    expect(stub.requests.at(-1)!.headers.authorization).toBe(stub.apiKey)
  })

  test('createIssue looks labels up by name (workspace and team labels; missing and other teams\u2019 skipped)', async () => {
    const issue = await linear.createIssue(target, { title: 'Checkout fails\nagain', body: '## Reports\n\n- 4 users', labels: ['bug', 'severity:high', 'severity:low', 'no-such-label'] })
    issueId = issue.id
    expect(issue.key).toBe('ENG-1')
    expect(issue.url).toBe('https://linear.app/acme/issue/ENG-1/fixloop')
    expect(issue.state).toEqual({ name: 'Todo', category: 'open' })
    const stored = stub.issues.get(issue.id)!
    expect(stored.title).toBe('Checkout fails again')
    expect(stored.description).toBe('## Reports\n\n- 4 users')
    expect(stored.labelIds).toEqual([stub.labels[0]!.id, stub.labels[1]!.id])
  })

  test('no labels: no labelIds sent', async () => {
    const issue = await linear.createIssue(target, { title: 't', body: 'b', labels: [] })
    expect(stub.issues.get(issue.id)!.labelIds).toEqual([])
    expect(JSON.parse(stub.requests.at(-1)!.body).variables.input.labelIds).toBeUndefined()
  })

  test('updateIssue and addComment', async () => {
    await linear.updateIssue(target, issueId, { title: 'Checkout fails (6)', body: 'six now' })
    expect(stub.issues.get(issueId)!.title).toBe('Checkout fails (6)')
    await linear.addComment(target, issueId, 'The cluster grew to 6 reports.')
    expect(stub.issues.get(issueId)!.comments).toEqual(['The cluster grew to 6 reports.'])
  })

  test('readIssue maps state types: started → open, completed → done, canceled → canceled', async () => {
    for (const [name, category] of [['In Progress', 'open'], ['Done', 'done'], ['Canceled', 'canceled'], ['Backlog', 'open']] as const) {
      await stub.setState(issueId, name)
      expect((await linear.readIssue(target, issueId)).state).toEqual({ name, category })
    }
    expect((await linear.readIssue(target, 'ENG-1')).id).toBe(issueId)
  })

  test('an OAuth token goes as Bearer', async () => {
    await failure(linear.whoAmI({ ...target, token: 'lin_oauth_x1' }))
    expect(stub.requests.at(-1)!.headers.authorization).toBe('Bearer lin_oauth_x1')
  })
})

describe('Linear adapter: failures', () => {
  const rows: { name: string; prepare?: () => void; run: () => Promise<unknown>; failure: string; status: number | null; retryAfter?: [number, number] }[] = [
    { name: 'a wrong key (HTTP 400, AUTHENTICATION_ERROR) is unauthorized', run: () => linear.whoAmI({ ...target, token: 'lin_api_wrongwrongwrong' }), failure: 'unauthorized', status: 400 },
    { name: 'an unknown issue (Entity not found) is not_found', run: () => linear.readIssue(target, 'ENG-999'), failure: 'not_found', status: 200 },
    { name: 'a malformed issue id is not_found without a request', run: () => linear.readIssue(target, '{ viewer { id } }'), failure: 'not_found', status: null },
    { name: 'a comment on a deleted issue is not_found', run: () => linear.addComment(target, '00000000-0000-4000-8000-000000000000', 'x'), failure: 'not_found', status: 200 },
    { name: 'an unknown team is not_found', run: () => linear.createIssue({ ...target, project: 'team-x' }, { title: 't', body: 'b', labels: [] }), failure: 'not_found', status: 200 },
    { name: 'RATELIMITED waits for the reset header', prepare: () => stub.failNext('ratelimited', 30_000), run: () => linear.readIssue(target, 'ENG-1'), failure: 'rate_limited', status: 400, retryAfter: [20_000, 31_000] },
    { name: 'a 502 is unreachable', prepare: () => stub.failNext(502), run: () => linear.whoAmI(target), failure: 'unreachable', status: 502 },
    { name: 'a server that is down is unreachable', run: () => linear.whoAmI({ ...target, apiUrl: 'http://127.0.0.1:1' }), failure: 'unreachable', status: null },
  ]
  for (const row of rows) {
    test(row.name, async () => {
      row.prepare?.()
      clock.set(Date.now())
      const err = await failure(row.run())
      expect(err.failure).toBe(row.failure as TrackerError['failure'])
      expect(err.status).toBe(row.status)
      if (row.retryAfter) {
        expect(err.retryAfterMs!).toBeGreaterThan(row.retryAfter[0])
        expect(err.retryAfterMs!).toBeLessThanOrEqual(row.retryAfter[1])
      }
    })
  }
})

describe('Linear adapter: webhooks', () => {
  const last = () => receiver.received.at(-1)!
  const body = () => JSON.parse(Buffer.from(last().raw).toString())
  const parsed = () => linear.parseWebhook(last().headers, body(), last().raw)

  test('a state change, signed and fresh, reads as news with the actor and delivery id', async () => {
    clock.set(Date.now())
    const sent = await stub.setState(issueId, 'Done')
    expect(linear.verifyWebhook(last().headers, last().raw, SECRET)).toBe(true)
    expect(parsed()).toEqual({ issueId, state: { name: 'Done', category: 'done' }, actor: 'e5d4c3b2-2222-4ccc-8ddd-0123456789ab', deliveryId: sent!.id, projects: [stub.teamId] })
  })

  test('a replayed delivery older than a minute (or from the future) fails verification', async () => {
    clock.set(Date.now())
    await stub.setState(issueId, 'Done', { timestamp: clock.now() - REPLAY_WINDOW_MS - 1000 })
    expect(linear.verifyWebhook(last().headers, last().raw, SECRET)).toBe(false)
    await stub.setState(issueId, 'Done', { timestamp: clock.now() + REPLAY_WINDOW_MS + 1000 })
    expect(linear.verifyWebhook(last().headers, last().raw, SECRET)).toBe(false)
    // The same delivery, fresh when sent, is stale a minute later.
    await stub.setState(issueId, 'Done')
    expect(linear.verifyWebhook(last().headers, last().raw, SECRET)).toBe(true)
    clock.advance(REPLAY_WINDOW_MS + 1000)
    expect(linear.verifyWebhook(last().headers, last().raw, SECRET)).toBe(false)
  })

  test('forged, unsigned, other secret, changed body: all fail', async () => {
    clock.set(Date.now())
    await stub.setState(issueId, 'Done', { secret: 'forged' })
    expect(linear.verifyWebhook(last().headers, last().raw, SECRET)).toBe(false)
    await stub.setState(issueId, 'Done', { sign: false })
    expect(linear.verifyWebhook(last().headers, last().raw, SECRET)).toBe(false)
    await stub.setState(issueId, 'Done')
    expect(linear.verifyWebhook(last().headers, last().raw, 'other')).toBe(false)
    expect(linear.verifyWebhook(last().headers, new TextEncoder().encode(Buffer.from(last().raw).toString().replace('Done', 'Todo')), SECRET)).toBe(false)
  })

  test('removal reads as deleted; an update that did not move the state is no news', async () => {
    const issue = await linear.createIssue(target, { title: 'gone', body: 'x', labels: [] })
    await stub.remove(issue.id)
    expect(parsed()).toMatchObject({ issueId: issue.id, deleted: true })
    const update = { ...body(), action: 'update', updatedFrom: { title: 'old', updatedAt: 'x' } }
    expect(linear.parseWebhook(new Headers(), update, new Uint8Array([1]))).toBeNull()
    expect(linear.parseWebhook(new Headers(), { ...update, type: 'Comment' }, new Uint8Array([1]))).toBeNull()
    expect(linear.parseWebhook(new Headers(), { ...update, action: 'create' }, new Uint8Array([1]))).toBeNull()
  })

  const hostile: [string, unknown][] = [
    ['null', null],
    ['an array', []],
    ['deep nesting', deep(5000)],
    ['wrong types', { type: 'Issue', action: 'update', data: { id: 7, state: 'Done' }, actor: 'me' }],
    ['a huge id', { type: 'Issue', action: 'remove', data: { id: 'a'.repeat(1_000_000) } }],
    ['a state of junk', { type: 'Issue', action: 'update', data: { id: 'ENG-1', state: { name: { x: 1 }, type: [] } } }],
    ['a throwing getter', { type: 'Issue', get action() { throw new Error('boom') } }],
  ]
  for (const [name, b] of hostile) {
    test(`a hostile body (${name}) never throws`, () => {
      expect(() => linear.parseWebhook(new Headers(), b, new Uint8Array([1]))).not.toThrow()
      expect(() => linear.verifyWebhook(new Headers({ 'linear-signature': 'zz' }), new TextEncoder().encode(String(b)), SECRET)).not.toThrow()
    })
  }
  test('a signed body that is not JSON fails verification without throwing', async () => {
    const { createHmac } = await import('node:crypto')
    const raw = new TextEncoder().encode('not json')
    const headers = new Headers({ 'linear-signature': createHmac('sha256', SECRET).update(raw).digest('hex') })
    expect(linear.verifyWebhook(headers, raw, SECRET)).toBe(false)
  })
})

describe('Linear helpers', () => {
  test('states', () => {
    expect(linearState('Triage', 'triage').category).toBe('open')
    expect(linearState('Todo', 'unstarted').category).toBe('open')
    expect(linearState('Shipped', 'completed').category).toBe('done')
    expect(linearState('Won\u2019t fix', 'canceled').category).toBe('canceled')
  })
  test('registered under its kind', () => expect(saasAdapters.linear).toBe(linearAdapter))
})
