/**
 * End to end, driven by real submissions: the lifecycle writes the events, and the pull feed, the
 * stream, a webhook receiver and Slack all see the same sequence. Then kill -9 of the compiled binary
 * during a burst of submissions: every event is delivered at least once and the feed stays exact.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { call, eventually, runBinary, seedTenant, spawnServer, startTestServer, tempDir, type Tenant, type TestServer } from './harness'
import { ensureBinary } from './helpers-lifecycle'
import { SseClient } from './events-helpers'
import { Receiver } from './webhook-receiver'
import { SlackStub } from './slack-stub'
import { TEST_DIALECT, clusterEnv } from './cluster-env'

type Ev = { id: string; seq: number; type: string; data: Record<string, string> }

async function feedOf(base: string, key: string): Promise<Ev[]> {
  const all: Ev[] = []
  let after = 0
  for (let i = 0; i < 1000; i++) {
    const r = await call(base, 'GET', `/v1/events?after=${after}&limit=500`, { auth: key })
    all.push(...r.body.data)
    if (r.body.data.length === 0) return all
    after = r.body.nextAfter
  }
  return all
}

describe('real submissions', () => {
  let server: TestServer
  let t: Tenant
  let rx: Receiver
  let slack: SlackStub
  const TOKEN = 'xoxb-1234567890-e2e-token'
  beforeAll(async () => {
    rx = new Receiver()
    slack = new SlackStub(TOKEN, ['C0E2E'])
    server = await startTestServer({ FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1', FIXLOOP_SLACK_API_URL: slack.apiUrl, FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
    t = await seedTenant(server.admin)
  })
  afterAll(async () => {
    await server.close()
    rx.stop()
    slack.stop()
  })

  test('feed, stream, webhook and Slack agree on the lifecycle events of submissions, a duplicate and an archive', async () => {
    const hook = await call(server.url, 'POST', '/v1/webhooks', { auth: t.key, body: { url: rx.url + '/ok/e2e' } })
    rx.secrets.set('/ok/e2e', hook.body.secret)
    await call(server.url, 'POST', '/v1/chatops/slack', { auth: t.key, body: { botToken: TOKEN, signingSecret: 'a1b2c3d4e5f60718293a4b5c6d7e8f90', channel: 'C0E2E' } })
    const stream = await SseClient.open(`${server.url}/v1/events/stream`, t.key)
    const text = 'The checkout button does nothing when I click it, tried twice on Firefox'
    const lead = (await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text, url: 'https://shop.example/p' } })).body.id
    await eventually(async () => (await call(server.url, 'GET', `/v1/feedback/${lead}`, { auth: t.key })).body.status === 'awaiting_manual', 10_000)
    const dup = (await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: text + '!', url: 'https://shop.example/p' } })).body.id
    await eventually(async () => (await feedOf(server.url, t.key)).some((e) => e.type === 'feedback.duplicate_attached'), 10_000)
    expect((await call(server.url, 'PATCH', `/v1/feedback/${lead}`, { auth: t.key, body: { status: 'archived' } })).status).toBe(200)

    const feed = await eventually(async () => {
      const f = await feedOf(server.url, t.key)
      return f.some((e) => e.type === 'feedback.status_changed' && e.data.to === 'archived') ? f : undefined
    })
    expect(feed.map((e) => e.seq)).toEqual(feed.map((_, i) => i + 1))
    const leadMoves = feed.filter((e) => e.data.feedbackId === lead && e.type === 'feedback.status_changed').map((e) => e.data.to)
    expect(leadMoves).toEqual(['sanitizing', 'sanitized', 'awaiting_manual', 'archived'])
    expect(feed.filter((e) => e.type === 'feedback.received').map((e) => e.data.feedbackId)).toEqual([lead, dup])
    expect(feed.find((e) => e.type === 'feedback.duplicate_attached')?.data).toMatchObject({ feedbackId: dup, leadFeedbackId: lead })
    // No report text anywhere in an event.
    expect(JSON.stringify(feed)).not.toContain('checkout button')

    await eventually(() => stream.messages.length >= feed.length, 10_000)
    expect(stream.seqs.slice(0, feed.length)).toEqual(feed.map((e) => e.seq))
    await stream.close()

    await eventually(() => new Set(rx.at('/ok/e2e').map((r) => r.id)).size >= feed.length, 10_000)
    const delivered = rx.at('/ok/e2e')
    expect(delivered.every((r) => r.verified)).toBe(true)
    expect(new Set(delivered.map((r) => r.id))).toEqual(new Set(feed.map((e) => e.id)))

    await eventually(() => slack.parents('C0E2E').some((m) => m.text.includes('archived')), 15_000)
    const parents = slack.parents('C0E2E')
    expect(parents.length).toBe(1)
    expect(parents[0].text).toContain(lead)
    expect(parents[0].text).toContain('1 duplicate')
    expect(slack.replies(parents[0].ts).some((m) => m.text.includes(dup))).toBe(true)
    expect(JSON.stringify(slack.messages)).not.toContain('checkout button')
  }, 60_000)
})

describe('kill -9 during a burst of submissions (compiled binary)', () => {
  test('every event of the feed is delivered at least once; the feed is exact', async () => {
    ensureBinary()
    const dir = tempDir()
    // The CLI and both servers share one database: the data dir's file, or in PostgreSQL mode one fresh database.
    const dbEnv = TEST_DIALECT === 'pg' ? await clusterEnv() : {}
    const env = { ...dbEnv, FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1', FIXLOOP_WEBHOOK_RETRY_SCALE: '0.001', FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' }
    const rx = new Receiver()
    try {
      const cli = async (...args: string[]) => JSON.parse((await runBinary([...args, '--data-dir', dir, '--json'], env)).stdout)
      const org = (await cli('org', 'create', '--name', 'Burst')).id
      const key = (await cli('key', 'create', '--org', org)).key
      const app = await cli('app', 'create', '--org', org, '--name', 'Web')
      const hook = await cli('webhook', 'create', '--org', org, '--url', rx.url + '/ok/burst')
      rx.secrets.set('/ok/burst', hook.secret)
      const first = await spawnServer(dir, env)
      const accepted: string[] = []
      const burst = (async () => {
        for (let i = 0; i < 60; i++) {
          const batch = await Promise.all(
            Array.from({ length: 5 }, (_, j) =>
              fetch(`${first.url}/v1/feedback`, {
                method: 'POST',
                headers: { authorization: `Bearer ${app.publicKey}`, 'content-type': 'application/json' },
                body: JSON.stringify({ text: `Burst report ${i}-${j}: the page ${i * 7 + j} shows error ${i * 13 + j * 3}` }),
              }).then(
                async (r) => (r.status === 201 ? ((await r.json()) as { id: string }).id : undefined),
                () => undefined,
              ),
            ),
          )
          accepted.push(...(batch.filter(Boolean) as string[]))
          if (first.proc.exitCode !== null || first.proc.killed) return
        }
      })()
      await eventually(() => rx.at('/ok/burst').length >= 40, 20_000)
      first.proc.kill('SIGKILL')
      await first.proc.exited
      await burst
      expect(accepted.length).toBeGreaterThan(0)
      const second = await spawnServer(dir, env)
      try {
        // Every accepted report finishes processing after the restart.
        await eventually(async () => {
          const feed = await feedOf(second.url, key)
          const done = new Set(feed.filter((e) => e.type === 'feedback.status_changed' && ['awaiting_manual', 'sanitized'].includes(e.data.to)).map((e) => e.data.feedbackId))
          return accepted.every((id) => done.has(id))
        }, 60_000)
        const feed = await feedOf(second.url, key)
        expect(feed.map((e) => e.seq)).toEqual(feed.map((_, i) => i + 1))
        for (const id of accepted) expect(feed.some((e) => e.type === 'feedback.received' && e.data.feedbackId === id)).toBe(true)
        await eventually(() => {
          const got = new Set(rx.at('/ok/burst').map((r) => r.id))
          return feed.every((e) => got.has(e.id))
        }, 60_000)
        expect(rx.at('/ok/burst').every((r) => r.verified)).toBe(true)
      } finally {
        await second.stop()
      }
    } finally {
      rx.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  }, 150_000)
})
