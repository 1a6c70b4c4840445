/**
 * What one webhook dispatcher pass costs when nothing happened, on both dialects (and the Slack
 * notifier's, which walked its connections the same way, every 5 s, with a claim and a release each). The pass (5 a second)
 * read every Org with live endpoints, then each Org's endpoints, then asked per endpoint whether its Org
 * had events past the cursor: 1 + Orgs + endpoints statements, whatever had happened (an audit measured
 * 20,000 endpoints keeping a core busy). Now a pass asks once for the endpoints that are behind.
 * The repository calls are counted (each is one statement, or one transaction for a page of fan-out).
 */
import { expect, test } from 'bun:test'
import { describeEachDialect, type FreshStore } from './dialects'
import { seedOrgApp, sql } from './repos/store-fixtures'
import { SecretBox } from '../src/core/crypto'
import { Logger } from '../src/core/logger'
import { WebhookDispatcher } from '../src/modules/webhooks/dispatcher'
import type { WebhooksRepo } from '../src/modules/webhooks/repo'
import type { ChatopsRepo } from '../src/modules/chatops/repo'
import { SlackNotifier } from '../src/modules/chatops/notifier'
import { SlackApi } from '../src/modules/chatops/slack-api'

const ORGS = 12
const PER_ORG = 15

/** The repository with each call counted by method name. */
function counted<R extends WebhooksRepo | ChatopsRepo>(repo: R): { repo: R; calls: string[] } {
  const calls: string[] = []
  const wrapped = new Proxy(repo, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver)
      if (typeof v !== 'function') return v
      return (...args: unknown[]) => {
        calls.push(String(key))
        return v.apply(target, args)
      }
    },
  })
  return { repo: wrapped, calls }
}

/**
 * Endpoint k of each Org: k % 3 == 0 every type, 1 only `webhook.test`, 2 only `agent_run.started`;
 * k % 5 == 4 also only App a<org> (the others the whole Org).
 */
async function seed(s: FreshStore): Promise<void> {
  for (let o = 0; o < ORGS; o++) {
    await seedOrgApp(s, `o${o}`, `a${o}`)
    await seedOrgApp(s, `o${o}`, `b${o}`)
    for (let k = 0; k < PER_ORG; k++) {
      const types = ['[]', '["webhook.test"]', '["agent_run.started"]'][k % 3]
      await s.store.webhooks.insert(
        { id: `o${o}-w${String(k).padStart(2, '0')}`, orgId: `o${o}`, appId: k % 5 === 4 ? `a${o}` : null, url: 'https://example.com/h', eventTypes: types, secretSealed: 'x', createdAt: 1 },
        [],
      )
    }
    // Events before the endpoints' cursors (set at insert to the Org's last seq), then caught up below.
    await s.store.lifecycle.record({ orgId: `o${o}`, appId: null }, 'webhook.test', { webhookId: 'none' })
  }
}

describeEachDialect('webhook dispatcher pass', (fresh) => {
  test('an idle pass over many current endpoints makes a fixed number of statements; a new event goes to exactly the endpoints that match', async () => {
    const s = await fresh()
    await seed(s)
    const { repo, calls } = counted(s.store.webhooks)
    const deps = { store: { webhooks: repo }, box: new SecretBox(new Uint8Array(32)), clock: s.clock, config: { webhookAllowPrivate: true, webhookRetryScale: 1, webhookTimeoutMs: 1000 } }
    // Nothing is claimed (no attempt leaves the test): the pass's fan-out is what is counted.
    const dispatcher = new WebhookDispatcher(deps, new Logger('silent'), { mayAct: () => false })

    // The first pass catches every endpoint up past the event recorded after it was made.
    await dispatcher.tick()
    expect(await sql(s, 'SELECT COUNT(*) AS n FROM webhooks WHERE cursor_seq = 1')).toEqual([{ n: ORGS * PER_ORG }])
    const caughtUp = await sql<{ n: number }>(s, 'SELECT COUNT(*) AS n FROM webhook_deliveries')

    calls.length = 0
    await dispatcher.tick()
    await dispatcher.tick()
    // Before: 1 + ORGS + ORGS × PER_ORG calls a pass (a read per endpoint); now one each.
    expect(calls.length).toBeLessThanOrEqual(2)
    expect(await sql(s, 'SELECT COUNT(*) AS n FROM webhook_deliveries')).toEqual(caughtUp)

    // One agent run starting in Org o3, of App b3: it goes to o3's endpoints of every type or of that type,
    // those of the whole Org (not those of App a3), and to no other Org's.
    await s.store.lifecycle.record({ orgId: 'o3', appId: 'b3' }, 'agent_run.started', { runId: 'r1', feedbackId: 'f1', provider: 'test' })
    calls.length = 0
    await dispatcher.tick()
    const got = await sql<{ webhook_id: string }>(s, "SELECT webhook_id FROM webhook_deliveries WHERE event_type = 'agent_run.started' ORDER BY webhook_id")
    const expected = [...Array(PER_ORG).keys()].filter((k) => k % 3 !== 1 && k % 5 !== 4).map((k) => `o3-w${String(k).padStart(2, '0')}`)
    expect(got.map((r) => r.webhook_id)).toEqual(expected)
    // Only o3's endpoints were fanned out (each moves its cursor, matching or not); no other Org's.
    expect(calls.filter((c) => c === 'fanOutPage')).toHaveLength(PER_ORG)
    expect(await sql(s, "SELECT COUNT(*) AS n FROM webhooks WHERE cursor_seq = 2 AND org_id = 'o3'")).toEqual([{ n: PER_ORG }])

    // And the hub's wake for one Org reads that Org's endpoints that are behind in one statement too.
    calls.length = 0
    await dispatcher.fanOut('o3')
    expect(calls).toHaveLength(1)
    await dispatcher.stop()
  }, 60_000)
})

describeEachDialect('webhook dispatcher claims', (fresh) => {
  test('a backlog drains with one claim per attempt (an attempt that ends claims the next; the pool\'s sharing between Orgs adds no claims)', async () => {
    const s = await fresh()
    await seedOrgApp(s, 'o1', 'a1')
    const receiver = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('ok') })
    try {
      const box = new SecretBox(new Uint8Array(32))
      await s.store.webhooks.insert({ id: 'o1-w', orgId: 'o1', appId: null, url: `http://127.0.0.1:${receiver.port}/h`, eventTypes: '[]', secretSealed: box.seal(Buffer.from('whsec_test')), createdAt: 1 }, [])
      const BACKLOG = 20
      for (let i = 0; i < BACKLOG; i++) await s.store.lifecycle.record({ orgId: 'o1', appId: 'a1' }, 'agent_run.started', { runId: `r${i}`, feedbackId: 'f1', provider: 'test' })
      const { repo, calls } = counted(s.store.webhooks)
      const deps = { store: { webhooks: repo }, box, clock: s.clock, config: { webhookAllowPrivate: true, webhookRetryScale: 1, webhookTimeoutMs: 5000 } }
      const dispatcher = new WebhookDispatcher(deps, new Logger('silent'))
      // One endpoint takes one attempt at a time: the backlog goes out one by one.
      await dispatcher.tick()
      expect(await sql(s, "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'succeeded'")).toEqual([{ n: BACKLOG }])
      // Each attempt's end claims once (finding the next delivery, or nothing at the end), plus the pass's
      // own claim. Claiming first for Orgs with nothing in flight, then for the rest, made it 3 a delivery.
      expect(calls.filter((c) => c === 'claim').length).toBeLessThanOrEqual(BACKLOG + 3)
      await dispatcher.stop()
    } finally {
      receiver.stop(true)
    }
  }, 60_000)
})

describeEachDialect('slack notifier pass', (fresh) => {
  test('an idle pass over many current connections is one read (no claim, no release); a new event is drained by its Org\'s connections only', async () => {
    const s = await fresh()
    for (let o = 0; o < ORGS; o++) {
      await seedOrgApp(s, `o${o}`, `a${o}`)
      for (let k = 0; k < 5; k++) {
        await s.store.chatops.insert(
          // A type no event below has: each event is passed over (the cursor moves) without a Slack call.
          { id: `o${o}-c${k}`, org_id: `o${o}`, app_id: null, channel: 'C1', bot_token_sealed: 'x', signing_secret_sealed: 'x', event_types: '["agent_run.failed"]', created_at: 1 },
          [],
        )
      }
    }
    const { repo, calls } = counted(s.store.chatops)
    const notifier = new SlackNotifier({ store: { chatops: repo }, box: new SecretBox(new Uint8Array(32)), clock: s.clock }, new SlackApi('http://127.0.0.1:9/api'), new Logger('silent'))
    await notifier.runAll()
    await notifier.idle()
    // Before: liveOrgs, liveForOrg per Org, and per connection a claim, a read of it and of its events, a release.
    expect(calls).toEqual(['behind'])

    await s.store.lifecycle.record({ orgId: 'o5', appId: null }, 'webhook.test', { webhookId: 'none' })
    calls.length = 0
    await notifier.runAll()
    await notifier.idle()
    expect(calls.filter((c) => c === 'claimDrain')).toHaveLength(5)
    expect(await sql(s, "SELECT org_id, COUNT(*) AS n FROM slack_connections WHERE cursor_seq = 1 GROUP BY org_id")).toEqual([{ org_id: 'o5', n: 5 }])
    calls.length = 0
    await notifier.runAll()
    expect(calls).toEqual(['behind'])
    await notifier.stop()
  }, 60_000)
})
