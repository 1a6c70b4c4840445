/** Feedback routes: the widget submission (pub_ key) and the Org's read/move routes (sk_ key). */
import { Elysia, t } from 'elysia'
import { ApiError } from '../../core/errors'
import { readIntQuery } from '../../http/query'
import { LIMITS } from '../../core/limits'
import { actedBy, authenticateWidget, orgAuth, type AuthDeps } from '../../http/auth'
import { accessGuard } from '../../http/access-guard'
import { BEARER_PUB, BEARER_SK, errorSchemas, ORG_AUTH_ERRORS, WIDGET_AUTH_ERRORS } from '../../http/error-docs'
import type { FeedbackService } from './service'
import { POW_HEADER } from '../../abuse/pow-service'
import type { Intake } from './intake'
import { baseUrlOf } from '../uploads/index'
import { FeedbackPage, FullFeedbackItem, IdParams, ListQuery, PatchBody, PatchResponse, SubmitBody, SubmitResponse } from './model'

const IDEMPOTENCY_KEY_RE = /^[\x21-\x7e]{1,255}$/

/** The optional request headers of POST /v1/feedback, as OpenAPI header parameters. */
const SUBMIT_HEADERS = [
  {
    name: 'idempotency-key',
    in: 'header' as const,
    required: false,
    schema: { description: 'Retry-safe submission: same key + same body within 24 h returns the first response', type: 'string' as const },
  },
  {
    name: 'x-service-user-token',
    in: 'header' as const,
    required: false,
    schema: { description: 'HS256 user token (private mode)', type: 'string' as const },
  },
  {
    name: POW_HEADER,
    in: 'header' as const,
    required: false,
    schema: {
      description: 'Public mode, when the App asks for proof of work: base64 of the solved challenge\'s JSON {algorithm, challenge, number, salt, signature} (GET /v1/widget/challenge); one request per solution. Ignored in private mode and when the App\'s proofOfWork is off.',
      type: 'string' as const,
    },
  },
]

export function widgetFeedbackRoutes(auth: AuthDeps, intake: Intake) {
  return new Elysia({ name: 'feedback-widget' })
    .use(accessGuard())
    .derive(async ({ request, server }) => ({ caller: await authenticateWidget(auth, request, server, 'submit') }))
    .post(
      '/v1/feedback',
      async ({ caller, body, request, set }) => {
        const key = request.headers.get('idempotency-key') ?? undefined
        if (key !== undefined && !IDEMPOTENCY_KEY_RE.test(key)) {
          throw new ApiError('invalid_body', { issues: [{ path: 'header:Idempotency-Key', message: 'must be 1-255 visible ASCII characters (! to ~, no spaces)' }] })
        }
        // Proof of work, the spam signals, a heavy report's charge, then the stored report (intake.ts).
        const result = await intake.submit(caller, { body, userAgent: request.headers.get('user-agent'), idempotencyKey: key, proofOfWork: request.headers.get(POW_HEADER) })
        set.status = result.status
        if (result.replayed) set.headers['idempotent-replayed'] = 'true'
        return result.body
      },
      {
        body: SubmitBody,
        // Our global parse hook (foundation.ts) reads it: an over-8 MB chunked body is 413, not a schema error.
        parse: 'json',
        // The two headers are read by name and documented in detail.parameters: a `headers` schema would
        // make Elysia copy every request header into an object per request. The 201 is built by
        // FeedbackService from a fixed shape, so it is documented but not re-validated on the way out.
        response: { 201: t.NoValidate(SubmitResponse), ...errorSchemas(...WIDGET_AUTH_ERRORS, 'proof_of_work_required', 'proof_of_work_invalid', 'invalid_body', 'payload_too_large', 'idempotency_key_reused') },
        detail: {
          summary: 'Submit a feedback report',
          tags: ['widget'],
          security: BEARER_PUB,
          parameters: SUBMIT_HEADERS,
        },
        access: 'widget',
      },
    )
}

export function orgFeedbackRoutes(auth: AuthDeps, feedback: FeedbackService, publicUrl: string | undefined) {
  return new Elysia({ name: 'feedback-org' })
    .use(orgAuth(auth))
    .get(
      '/v1/feedback',
      ({ org, query, request }) =>
        feedback.list(org.orgId, { ...query, limit: readIntQuery(request, 'limit', { min: LIMITS.listLimitMin, max: LIMITS.listLimitMax }, LIMITS.listLimitDefault) }),
      {
        access: 'org.read',
        query: ListQuery,
        response: { 200: t.NoValidate(FeedbackPage), ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_body', 'app_not_found') },
        detail: {
          summary: 'List feedback, newest first (cursor paging)',
          description: `Duplicates are hidden unless includeDuplicates=true; spam unless spam=include (both) or spam=only (the spam folder). nextCursor is null on the last page. Limit ${LIMITS.listLimitMin}-${LIMITS.listLimitMax}, default ${LIMITS.listLimitDefault}.`,
          tags: ['feedback'],
          security: BEARER_SK,
        },
      },
    )
    .get('/v1/feedback/:id', ({ org, params, request }) => feedback.get(org.orgId, params.id, baseUrlOf(request, publicUrl)), {
      access: 'org.read',
      params: IdParams,
      response: { 200: t.NoValidate(FullFeedbackItem), ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_id', 'not_found') },
      detail: {
        summary: 'Read one feedback item in full',
        tags: ['feedback'],
        security: BEARER_SK,
      },
    })
    .patch('/v1/feedback/:id', ({ org, params, body }) => feedback.patch(org.orgId, params.id, body), {
      access: 'reports.triage',
      params: IdParams,
      body: PatchBody,
      parse: 'json',
      response: { 200: PatchResponse, ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_body', 'invalid_id', 'no_op', 'not_found', 'invalid_transition', 'concurrent_update', 'invalid_target') },
      detail: {
        summary: 'Move an item: queued (enter the agent queue) or archived (dismiss); or { spam: false } (not spam: restore) / { spam: true } (mark spam)',
        tags: ['feedback'],
        security: BEARER_SK,
      },
    })
    .post(
      '/v1/feedback/:id/resolve',
      async ({ org, params, request, server }) => {
        await feedback.resolve(org.orgId, params.id, actedBy(auth, org, request, server))
        return feedback.get(org.orgId, params.id, baseUrlOf(request, publicUrl))
      },
      {
        access: 'reports.triage',
        params: IdParams,
        response: { 200: t.NoValidate(FullFeedbackItem), ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_body', 'invalid_id', 'not_found', 'invalid_target', 'invalid_transition', 'concurrent_update') },
        detail: {
          summary: 'Mark a lead as fixed by hand (an addition to the spec): it moves to resolved as if its pull request were merged',
          description:
            'For fixes made outside the agent (no repository, a branch pushed in branch mode, a request merged where fixloop does not hear of it). Allowed from sanitized, awaiting_manual, queued, failed and pr_opened (409 invalid_transition otherwise); a duplicate is 409 invalid_target with leadFeedbackId (mark its lead). Its duplicates follow it, feedback.resolved is emitted for each report resolved, the reporters who asked are mailed, and the change is audited (feedback.marked_fixed). No body. Answers the updated item.',
          tags: ['feedback'],
          security: BEARER_SK,
        },
      },
    )
}
