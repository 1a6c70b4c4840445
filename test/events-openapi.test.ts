/**
 * /openapi.json documents every events, webhooks and chat-ops route with its error responses, one
 * schema per event type, and real responses conform to the documented schemas.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Value } from '@sinclair/typebox/value'
import { call, eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { appendEvent, appendEvents } from './events-helpers'
import { Receiver } from './webhook-receiver'
import { EVENT_TYPES } from '../src/lifecycle/event-types'
import { EventsPage } from '../src/modules/events/model'
import { CreatedWebhook, DeliveryPage, WebhookList } from '../src/modules/webhooks/model'
import { newId } from '../src/core/ids'
import { sqliteOf } from './sqlite-of'

let srv: TestServer
let t: Tenant
let rx: Receiver
beforeAll(async () => {
  srv = await startTestServer({ FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1' })
  t = await seedTenant(srv.admin)
  rx = new Receiver()
})
afterAll(async () => {
  await srv.close()
  rx.stop()
})

const ROUTES: [string, string, string[]][] = [
  ['get', '/v1/events', ['200', '400', '401', '404', '413', '429', '500']],
  ['get', '/v1/events/stream', ['200', '400', '401', '404', '413', '429', '500']],
  ['post', '/v1/webhooks', ['201', '400', '401', '403', '404', '413', '429', '500']],
  ['get', '/v1/webhooks', ['200', '401', '403', '413', '429', '500']],
  ['get', '/v1/webhooks/{id}', ['200', '400', '401', '403', '404', '413', '429', '500']],
  ['delete', '/v1/webhooks/{id}', ['200', '400', '401', '403', '404', '413', '429', '500']],
  ['post', '/v1/webhooks/{id}/rotate-secret', ['200', '400', '401', '403', '404', '413', '429', '500']],
  ['post', '/v1/webhooks/{id}/enable', ['200', '400', '401', '403', '404', '413', '429', '500']],
  ['post', '/v1/webhooks/{id}/test', ['202', '400', '401', '403', '404', '409', '413', '429', '500']],
  ['get', '/v1/webhooks/{id}/deliveries', ['200', '400', '401', '403', '404', '413', '429', '500']],
  ['post', '/v1/webhooks/{id}/redeliver-failed', ['200', '400', '401', '403', '404', '409', '413', '429', '500']],
  ['post', '/v1/webhooks/deliveries/{id}/redeliver', ['200', '400', '401', '403', '404', '409', '413', '429', '500']],
  ['post', '/v1/chatops/slack', ['201', '400', '401', '403', '404', '413', '429', '500']],
  ['get', '/v1/chatops/slack', ['200', '401', '403', '413', '429', '500']],
  ['delete', '/v1/chatops/slack/{id}', ['200', '400', '401', '403', '404', '413', '429', '500']],
  ['get', '/v1/chatops/slack/users', ['200', '401', '403', '413', '429', '500']],
  ['post', '/v1/chatops/slack/users', ['200', '400', '401', '403', '413', '429', '500']],
  ['delete', '/v1/chatops/slack/users/{teamId}/{userId}', ['200', '400', '401', '403', '404', '413', '429', '500']],
  ['post', '/v1/chatops/slack/{id}/commands', ['200', '400', '403', '404', '413', '500']],
]

describe('/openapi.json (events)', () => {
  test('every new route with its error responses', async () => {
    const doc = (await call(srv.url, 'GET', '/openapi.json')).body
    for (const [method, path, statuses] of ROUTES) {
      const op = doc.paths[path]?.[method]
      expect(op, `${method} ${path}`).toBeDefined()
      expect(Object.keys(op.responses).sort(), `${method} ${path}`).toEqual([...statuses].sort())
    }
    const create = doc.paths['/v1/webhooks'].post.requestBody.content['application/json'].schema
    expect(create.additionalProperties).toBe(false)
  })

  test('one schema per event type in the feed response', async () => {
    const doc = (await call(srv.url, 'GET', '/openapi.json')).body
    const text = JSON.stringify(doc.paths['/v1/events'].get.responses['200'])
    for (const type of EVENT_TYPES) expect(text).toContain(`"const":"${type}"`)
  })

  test('responses conform to their schemas', async () => {
    appendEvents(sqliteOf(srv.ctx), t.orgId, t.appId, 2)
    appendEvent(sqliteOf(srv.ctx), t.orgId, t.appId, 'agent_run.succeeded', { runId: newId(), feedbackId: newId(), prUrl: null, branch: 'b', costUsd: 0 })
    appendEvent(sqliteOf(srv.ctx), t.orgId, null, 'webhook.disabled', { webhookId: newId(), reason: 'gone' })
    const feed = await call(srv.url, 'GET', '/v1/events', { auth: t.key })
    expect(feed.body.data.length).toBe(4)
    expect([...Value.Errors(EventsPage, feed.body)].map((e) => `${e.path}: ${e.message}`)).toEqual([])
    const created = await call(srv.url, 'POST', '/v1/webhooks', { auth: t.key, body: { url: rx.url + '/ok/schema' } })
    expect([...Value.Errors(CreatedWebhook, created.body)].map((e) => `${e.path}: ${e.message}`)).toEqual([])
    expect(Value.Check(WebhookList, (await call(srv.url, 'GET', '/v1/webhooks', { auth: t.key })).body)).toBe(true)
    await call(srv.url, 'POST', `/v1/webhooks/${created.body.id}/test`, { auth: t.key })
    const log = await eventually(async () => {
      const r = await call(srv.url, 'GET', `/v1/webhooks/${created.body.id}/deliveries`, { auth: t.key })
      return r.body.data[0]?.status === 'succeeded' ? r.body : undefined
    })
    expect([...Value.Errors(DeliveryPage, log)].map((e) => `${e.path}: ${e.message}`)).toEqual([])
  })
})
