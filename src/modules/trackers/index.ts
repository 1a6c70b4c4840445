/**
 * Issue-tracker routes (docs/trackers.md): an App's tracker connection (sk_ key or a dashboard session
 * of an owner: `trackers.manage`), pushing a lead by hand (`reports.triage`), and the tracker's webhook
 * (no key: signed with the App's tracker webhook secret).
 */
import { Elysia, t } from 'elysia'
import { ApiError } from '../../core/errors'
import { ID_PATTERN } from '../../core/ids'
import { oneOf } from '../../core/schema'
import { TRACKER_KINDS } from '../../trackers/adapter'
import { accessGuard } from '../../http/access-guard'
import { actedBy, confirmSessionCaller, orgAuth, type AuthDeps } from '../../http/auth'
import { BEARER_SK, errorSchemas, noContentResponses, ORG_AUTH_ERRORS, ORG_OWNER_ERRORS } from '../../http/error-docs'
import { jsonDepthExceeds, MAX_JSON_DEPTH, readBodyBounded } from '../../http/strict-json'
import { baseUrlOf } from '../uploads/index'
import { MAPPED_ACTIONS } from './mapping'
import { TrackerIssueSchema } from './model'
import { SEVERITY_CHOICES, STATE_MAP_MAX, type TrackersService } from './service'

/** Issue events are a few tens of KB; a delivery over this is refused (413) before it is verified. */
export const TRACKER_HOOK_BODY_MAX_BYTES = 1024 * 1024

const closed = { additionalProperties: false } as const
const Id = t.String({ pattern: ID_PATTERN })
const AppParams = t.Object({ id: Id }, closed)
const doc = (summary: string, description?: string) => ({ summary, description, tags: ['trackers'], security: BEARER_SK })
const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()])

const StateMap = t.Record(t.String({ minLength: 1, maxLength: 100 }), oneOf(MAPPED_ACTIONS), {
  maxProperties: STATE_MAP_MAX,
  description: `Tracker state names (case-insensitive) → resolved | reopen | ignore; at most ${STATE_MAP_MAX}. Checked before the state's category (done → resolved, open → reopen, canceled → ignore).`,
})
const Rules = t.Object(
  {
    minDuplicates: Nullable(t.Integer({ minimum: 1, maximum: 1_000_000, description: 'Push a lead once its cluster has this many duplicates; null: never by count.' })),
    onAwaitingManual: t.Array(oneOf(SEVERITY_CHOICES), { maxItems: 4, description: 'Push a lead entering awaiting_manual with one of these severities (unset: none given).' }),
  },
  closed,
)
const TrackerBody = t.Object(
  {
    kind: oneOf(TRACKER_KINDS),
    apiUrl: t.Optional(t.String({ minLength: 1, maxLength: 2048, description: 'Default https://api.github.com (github), https://api.linear.app (linear); required for gitlab (…/api/v4), gitea (…/api/v1), jira (https://SITE.atlassian.net).' })),
    project: t.String({ minLength: 1, maxLength: 300, description: 'owner/repo (github, gitea), group/project or numeric id (gitlab), project key (jira), team id (linear).' }),
    token: t.Optional(t.String({ minLength: 1, maxLength: 4096, description: 'Required on the first connect, and again when kind or apiUrl changes (400 invalid_argument otherwise); omitted otherwise keeps the stored one. Sealed at rest, never returned.' })),
    account: t.Optional(t.String({ minLength: 3, maxLength: 320, description: 'Jira Cloud: the e-mail of the API token.' })),
    webhookSecret: t.Optional(
      t.String({
        minLength: 16,
        maxLength: 256,
        pattern: '^[\\x21-\\x7e]+$',
        description: "The webhook signing secret the tracker made (Linear's webhook form makes its own): replaces the App's tracker webhook secret. Sealed at rest, never returned. Omitted: fixloop makes one on the first connect and keeps it.",
      }),
    ),
    stateMap: t.Optional(StateMap),
    rules: t.Optional(Rules),
  },
  closed,
)
const TrackerView = t.Object(
  {
    kind: oneOf(TRACKER_KINDS),
    apiUrl: t.String(),
    project: t.String(),
    account: Nullable(t.String()),
    actor: Nullable(t.String({ description: "Who the token acts as: the tracker's changes made by it are fixloop's own and ignored." })),
    webhookUrl: t.String({ description: 'Where to point the tracker\'s webhook (absolute).' }),
    stateMap: t.Record(t.String(), oneOf(MAPPED_ACTIONS)),
    rules: Rules,
    health: t.Object({
      state: oneOf(['ok', 'failing']),
      lastError: Nullable(t.String()),
      lastErrorAt: Nullable(t.String({ format: 'date-time' })),
      retryAt: Nullable(t.String({ format: 'date-time' })),
      pending: t.Integer({ description: 'Issues waiting to be created or updated (pending or failing).' }),
    }),
    createdAt: t.String({ format: 'date-time' }),
    updatedAt: t.String({ format: 'date-time' }),
  },
  closed,
)
const WebhookSecret = t.String({ description: 'Shown once: set it as the webhook secret (GitHub, Gitea) or secret token (GitLab) on the tracker.' })

export function trackerRoutes(auth: AuthDeps, trackers: TrackersService, publicUrl: string | undefined) {
  return new Elysia({ name: 'trackers' })
    .use(orgAuth(auth))
    .get('/v1/apps/:id/tracker', ({ org, params, request }) => trackers.get(org.orgId, params.id, baseUrlOf(request, publicUrl)), {
      access: 'trackers.manage',
      params: AppParams,
      response: { 200: t.NoValidate(t.Object({ tracker: Nullable(TrackerView) })), ...errorSchemas(...ORG_OWNER_ERRORS, 'invalid_id', 'app_not_found') },
      detail: doc("The App's issue tracker", 'The connection with its health (the last failure, when the next try is, how many issues wait); null when none is connected. The token and the webhook secret are never returned.'),
    })
    .put(
      '/v1/apps/:id/tracker',
      ({ org, params, body, request, server }) =>
        trackers.connect(org.orgId, params.id, body, baseUrlOf(request, publicUrl), actedBy(auth, org, request, server), () => confirmSessionCaller(auth, org, 'tracker_connect', request, server, params.id)),
      {
      access: 'trackers.manage',
      params: AppParams,
      body: TrackerBody,
      parse: 'json',
      response: {
        200: t.NoValidate(t.Object({ tracker: TrackerView, webhookSecret: t.Optional(WebhookSecret) })),
        ...errorSchemas(...ORG_OWNER_ERRORS, 'invalid_body', 'invalid_argument', 'invalid_credentials', 'invalid_id', 'app_not_found', 'payload_too_large'),
      },
      detail: doc(
        'Connect an issue tracker',
        "Creates or replaces the App's tracker connection. The token is checked with the tracker (400 invalid_argument quoting the tracker's answer, never the token) and sealed. `webhookSecret` is returned only when it is created (the first connect). The API URL must resolve to public addresses unless the server runs with FIXLOOP_TRACKER_ALLOW_PRIVATE=1. docs/trackers.md. An `sk_` key is asked nothing more. A dashboard session that connects a tracker, or changes kind, apiUrl, project, account or token, or sets webhookSecret (not stateMap or rules alone), must first confirm it is the admin: an unused confirmation for `tracker_connect` at most 5 minutes old, by password (POST /admin/api/me/reauth/password) or at the identity provider (POST /admin/api/me/reauth), used up by this call; otherwise 401 invalid_credentials with `details.reauthRequired`.",
      ),
    },
    )
    .delete(
      '/v1/apps/:id/tracker',
      async ({ org, params, request, server, set }) => {
        await trackers.disconnect(org.orgId, params.id, actedBy(auth, org, request, server))
        set.status = 204
      },
      {
        access: 'trackers.manage',
        params: AppParams,
        // The 204 and the errors documented together (error-docs.ts noContentResponses): with a `response`
        // map the document listed the errors and no success at all.
        detail: {
          ...doc("Disconnect the App's issue tracker", '204 (no body): syncing stops; the links of existing issues stay readable on their reports.'),
          responses: noContentResponses('Disconnected (no body)', errorSchemas(...ORG_OWNER_ERRORS, 'invalid_body', 'invalid_id', 'app_not_found', 'tracker_not_connected')),
        },
      },
    )
    .post(
      '/v1/apps/:id/tracker/rotate-webhook-secret',
      ({ org, params, request, server }) =>
        trackers.rotateWebhookSecret(org.orgId, params.id, actedBy(auth, org, request, server), org.session ? () => confirmSessionCaller(auth, org, 'tracker_connect', request, server, params.id) : undefined),
      {
        access: 'trackers.manage',
        params: AppParams,
        response: { 200: t.NoValidate(t.Object({ webhookSecret: WebhookSecret })), ...errorSchemas(...ORG_OWNER_ERRORS, 'invalid_body', 'invalid_credentials', 'invalid_id', 'app_not_found', 'tracker_not_connected') },
        detail: doc(
          'Rotate the tracker webhook secret',
          "The old secret stops working at once: set the new one on the tracker. An `sk_` key is asked nothing more. Whoever holds the secret can move reports through the tracker's webhook, after the session too, so a dashboard session must first confirm it is the admin, as for connecting: an unused confirmation for `tracker_connect` at most 5 minutes old (POST /admin/api/me/reauth/password, or POST /admin/api/me/reauth), used up by this call; otherwise 401 invalid_credentials with `details.reauthRequired`.",
        ),
      },
    )
    .post(
      '/v1/feedback/:id/tracker-issue',
      async ({ org, params, set }) => {
        const out = await trackers.push(org.orgId, params.id)
        set.status = out.created ? 202 : 200
        return { trackerIssue: out.trackerIssue }
      },
      {
        access: 'reports.triage',
        params: AppParams,
        response: {
          200: t.NoValidate(t.Object({ trackerIssue: TrackerIssueSchema })),
          202: t.NoValidate(t.Object({ trackerIssue: TrackerIssueSchema })),
          ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_body', 'invalid_id', 'not_found', 'invalid_target', 'invalid_transition', 'tracker_not_connected'),
        },
        detail: {
          ...doc(
            'Push a lead to the issue tracker',
            "202: the issue is created in the background (syncState pending). 200: the lead has an issue already (idempotent). 409 invalid_target with leadFeedbackId for a duplicate (push its lead), 409 tracker_not_connected when the report's App has no tracker, 409 invalid_transition when the lead's issue was deleted on the tracker.",
          ),
          tags: ['feedback', 'trackers'],
        },
      },
    )
}

/** POST /v1/tracker-hooks/:appId: the tracker's webhook. No key: verified with the App's tracker webhook secret. */
export function trackerHookRoutes(trackers: TrackersService) {
  return new Elysia({ name: 'tracker-hooks' }).use(accessGuard()).post(
    '/v1/tracker-hooks/:appId',
    async ({ params, request }) => {
      const raw = await readBodyBounded(request, TRACKER_HOOK_BODY_MAX_BYTES)
      if (jsonDepthExceeds(raw)) throw new ApiError('invalid_body', { issues: [{ path: '/', message: `JSON nested deeper than ${MAX_JSON_DEPTH} levels` }] })
      return { received: true as const, ...(await trackers.receive(params.appId, request.headers, raw)) }
    },
    {
      access: 'tracker_signature',
      params: t.Object({ appId: t.String({ pattern: ID_PATTERN }) }, closed),
      response: {
        200: t.NoValidate(t.Object({ received: t.Literal(true), outcome: t.String({ description: 'moved | unchanged | replayed | deleted | echo | ignored' }) })),
        ...errorSchemas('invalid_id', 'invalid_authorization', 'invalid_body', 'payload_too_large'),
      },
      detail: {
        summary: 'Issue tracker webhook (called by GitHub, GitLab, Gitea/Forgejo, Jira, Linear)',
        description:
          "Verified with the App's tracker webhook secret (PUT /v1/apps/{id}/tracker returns it once): GitHub X-Hub-Signature-256, Gitea X-Gitea-Signature / Forgejo X-Forgejo-Signature, GitLab X-Gitlab-Token. An unknown App and a bad signature are both 401. A delivery id seen before, a change made with fixloop's own token, and news about an issue fixloop did not create change nothing. docs/trackers.md \"Pull\".",
        tags: ['trackers'],
        requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', description: "The tracker's webhook payload (GitHub/Gitea `issues`, GitLab Issue Hook)" } } } },
      },
    },
  )
}
