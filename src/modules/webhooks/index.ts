/** The webhooks API (sk, tenant-scoped): declarations and one service call each. */
import { Elysia, t } from 'elysia'
import { actedBy, confirmSessionCaller, orgAuth, type AuthDeps } from '../../http/auth'
import { BEARER_SK, errorSchemas, ORG_OWNER_ERRORS } from '../../http/error-docs'
import { readIntQuery } from '../../http/query'
import {
  CreatedWebhook,
  CreateWebhookBody,
  Deleted,
  DeliveriesQuery,
  DeliveryPage,
  Redelivered,
  RedeliveredFailed,
  RedeliverFailedBody,
  RotatedSecret,
  TestSent,
  Webhook,
  WebhookList,
  WebhookParams,
} from './model'
import type { WebhooksService } from './service'

const doc = (summary: string, description?: string) => ({ summary, description, tags: ['webhooks'], security: BEARER_SK })
const READ_ERRORS = [...ORG_OWNER_ERRORS, 'invalid_id', 'not_found'] as const

export function webhookRoutes(auth: AuthDeps, webhooks: WebhooksService) {
  return new Elysia({ name: 'webhooks' })
    .use(orgAuth(auth))
    .post(
      '/v1/webhooks',
      async ({ org, body, set, request, server }) => {
        // Every future event, report content included, goes to this URL, long after the session that set it.
        const created = await webhooks.create(org.orgId, body, actedBy(auth, org, request, server), () => confirmSessionCaller(auth, org, 'webhook_create', request, server))
        set.status = 201
        return created
      },
      {
        access: 'webhooks.manage',
        body: CreateWebhookBody,
        parse: 'json',
        response: { 201: t.NoValidate(CreatedWebhook), ...errorSchemas(...ORG_OWNER_ERRORS, 'invalid_body', 'invalid_argument', 'invalid_credentials', 'url_not_allowed', 'app_not_found', 'payload_too_large') },
        detail: doc(
          'Create a webhook endpoint',
          'Standard Webhooks 1.0 deliveries of the events committed from now on. The URL must resolve to public addresses (unless FIXLOOP_WEBHOOK_ALLOW_PRIVATE=1). The whsec_ secret is returned once. An `sk_` key is asked nothing more. A dashboard session must first confirm it is the admin (the endpoint receives every event after the session ends): an unused confirmation for `webhook_create` at most 5 minutes old, by password (POST /admin/api/me/reauth/password) or at the identity provider (POST /admin/api/me/reauth), used up by this call; otherwise 401 invalid_credentials with `details.reauthRequired`.',
        ),
      },
    )
    .get('/v1/webhooks', async ({ org }) => ({ data: await webhooks.list(org.orgId) }), {
      access: 'webhooks.manage',
      response: { 200: t.NoValidate(WebhookList), ...errorSchemas(...ORG_OWNER_ERRORS) },
      detail: doc('List webhook endpoints'),
    })
    .get('/v1/webhooks/:id', ({ org, params }) => webhooks.get(org.orgId, params.id), {
      access: 'webhooks.manage',
      params: WebhookParams,
      response: { 200: t.NoValidate(Webhook), ...errorSchemas(...READ_ERRORS) },
      detail: doc('Read one webhook endpoint'),
    })
    .delete('/v1/webhooks/:id', ({ org, params, request, server }) => webhooks.delete(org.orgId, params.id, actedBy(auth, org, request, server)), {
      access: 'webhooks.manage',
      params: WebhookParams,
      response: { 200: t.NoValidate(Deleted), ...errorSchemas(...READ_ERRORS, 'invalid_body') },
      detail: doc('Delete a webhook endpoint', 'Pending deliveries are dropped; the delivery log stays until retention removes it.'),
    })
    .post(
      '/v1/webhooks/:id/rotate-secret',
      ({ org, params, request, server }) =>
        webhooks.rotateSecret(org.orgId, params.id, actedBy(auth, org, request, server), () => confirmSessionCaller(auth, org, 'webhook_secret_rotate', request, server, params.id)),
      {
        access: 'webhooks.manage',
        params: WebhookParams,
        response: { 200: t.NoValidate(RotatedSecret), ...errorSchemas(...READ_ERRORS, 'invalid_body', 'invalid_credentials') },
        detail: doc(
          'Rotate the signing secret',
          'For 24 hours every delivery carries two signatures (new and previous secret), space-separated. An `sk_` key is asked nothing more. The new secret signs deliveries the receiver trusts, after the session too, so a dashboard session must first confirm it is the admin: an unused confirmation for `webhook_secret_rotate` at most 5 minutes old (POST /admin/api/me/reauth/password, or POST /admin/api/me/reauth), used up by this call; otherwise 401 invalid_credentials with `details.reauthRequired`.',
        ),
      },
    )
    .post('/v1/webhooks/:id/enable', ({ org, params, request, server }) => webhooks.enable(org.orgId, params.id, actedBy(auth, org, request, server)), {
      access: 'webhooks.manage',
      params: WebhookParams,
      response: { 200: t.NoValidate(Webhook), ...errorSchemas(...READ_ERRORS, 'invalid_body') },
      detail: doc('Re-enable a disabled endpoint', 'The endpoint first catches up on the events committed while it was disabled (oldest first), then gets new ones; use redeliver-failed for deliveries that failed before.'),
    })
    .post(
      '/v1/webhooks/:id/test',
      ({ org, params, set, request, server }) => {
        set.status = 202
        return webhooks.sendTest(org.orgId, params.id, actedBy(auth, org, request, server))
      },
      {
        access: 'webhooks.manage',
        params: WebhookParams,
        response: { 202: t.NoValidate(TestSent), ...errorSchemas(...READ_ERRORS, 'invalid_body', 'webhook_disabled') },
        detail: doc('Send a test event', 'Records a webhook.test event, delivered to this endpoint only.'),
      },
    )
    .get('/v1/webhooks/:id/deliveries', ({ org, params, query, request }) => webhooks.deliveries(org.orgId, params.id, { cursor: query.cursor, limit: readIntQuery(request, 'limit', { min: 1, max: 200 }, 50) }), {
      access: 'webhooks.manage',
      params: WebhookParams,
      query: DeliveriesQuery,
      response: { 200: t.NoValidate(DeliveryPage), ...errorSchemas(...READ_ERRORS, 'invalid_body') },
      detail: doc('Delivery log, newest first', 'Each delivery with every attempt: request headers and body, response status, first 4 KB of the answer, latency.'),
    })
    .post(
      '/v1/webhooks/:id/redeliver-failed',
      ({ org, params, body, request, server }) => webhooks.redeliverFailed(org.orgId, params.id, body.since, body.until, actedBy(auth, org, request, server)),
      {
        access: 'webhooks.manage',
        params: WebhookParams,
        body: RedeliverFailedBody,
        parse: 'json',
        response: { 200: t.NoValidate(RedeliveredFailed), ...errorSchemas(...READ_ERRORS, 'invalid_body', 'webhook_disabled', 'payload_too_large') },
        detail: doc('Redeliver every failed delivery created in a time range'),
      },
    )
    .post('/v1/webhooks/deliveries/:id/redeliver', ({ org, params, request, server }) => webhooks.redeliver(org.orgId, params.id, actedBy(auth, org, request, server)), {
      access: 'webhooks.manage',
      params: WebhookParams,
      response: { 200: t.NoValidate(Redelivered), ...errorSchemas(...READ_ERRORS, 'invalid_body', 'webhook_disabled', 'concurrent_update') },
      detail: doc('Redeliver one delivery', 'Same webhook-id, a fresh retry schedule.'),
    })
}
