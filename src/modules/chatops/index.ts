/**
 * Chat-ops API. sk routes manage Slack connections and the Slack users allowed for the Org; the slash
 * command route takes no key: Slack signs it with the connection's signing secret instead.
 */
import { Elysia, t } from 'elysia'
import { ID_PATTERN } from '../../core/ids'
import { actedBy, confirmSessionCaller, orgAuth, type AuthDeps } from '../../http/auth'
import { accessGuard } from '../../http/access-guard'
import { BEARER_SK, errorSchemas, ORG_OWNER_ERRORS } from '../../http/error-docs'
import { readBodyBounded } from '../../http/strict-json'
import type { ChatopsService } from './service'
import type { SlashCommands } from './commands'

const closed = { additionalProperties: false } as const
const Id = t.String({ pattern: ID_PATTERN })
const SlackId = t.String({ pattern: '^[A-Z0-9]{2,32}$' })
const doc = (summary: string, description?: string) => ({ summary, description, tags: ['chatops'], security: BEARER_SK })

const ConnectBody = t.Object(
  {
    botToken: t.String({ maxLength: 256, description: 'xoxb-… bot token (scope chat:write); stored encrypted, never shown again' }),
    signingSecret: t.String({ maxLength: 128, description: "The Slack app's signing secret; stored encrypted" }),
    channel: t.String({ maxLength: 81, description: 'Channel id (C0123ABCD) or #name; invite the bot to it' }),
    appId: t.Optional(Id),
    events: t.Optional(t.Array(t.String({ maxLength: 64 }), { maxItems: 50 })),
  },
  closed,
)
const Connection = t.Object(
  {
    id: Id,
    appId: t.Union([Id, t.Null()]),
    channel: t.String(),
    events: t.Array(t.String()),
    commandPath: t.String({ description: 'Set <public URL> + this path as the Request URL of the /fixloop slash command' }),
    lastError: t.Union([t.String(), t.Null()]),
    createdAt: t.String({ format: 'date-time' }),
  },
  closed,
)
const UserBody = t.Object({ teamId: SlackId, userId: SlackId }, closed)
const UserParams = t.Object({ teamId: SlackId, userId: SlackId }, closed)
const SlackUser = t.Object({ teamId: t.String(), userId: t.String(), createdAt: t.String({ format: 'date-time' }) }, closed)

export function chatopsRoutes(auth: AuthDeps, chatops: ChatopsService) {
  return new Elysia({ name: 'chatops' })
    .use(orgAuth(auth))
    .post(
      '/v1/chatops/slack',
      ({ org, body, set, request, server }) => {
        set.status = 201
        return chatops.connect(org.orgId, body, actedBy(auth, org, request, server), () => confirmSessionCaller(auth, org, 'slack_connect', request, server))
      },
      {
        access: 'chatops.manage',
        body: ConnectBody,
        parse: 'json',
        response: { 201: t.NoValidate(Connection), ...errorSchemas(...ORG_OWNER_ERRORS, 'invalid_body', 'invalid_argument', 'invalid_credentials', 'app_not_found', 'payload_too_large') },
        detail: doc(
          'Connect a Slack channel',
          'One parent message per lead report, updated in place as it moves; details and the PR link in its thread. An `sk_` key is asked nothing more. A dashboard session must first confirm it is the admin (the channel gets the Org\'s reports after the session ends): an unused confirmation for `slack_connect` at most 5 minutes old, by password (POST /admin/api/me/reauth/password) or at the identity provider (POST /admin/api/me/reauth), used up by this call; otherwise 401 invalid_credentials with `details.reauthRequired`.',
        ),
      },
    )
    .get('/v1/chatops/slack', async ({ org }) => ({ data: await chatops.list(org.orgId) }), {
      access: 'chatops.manage',
      response: { 200: t.NoValidate(t.Object({ data: t.Array(Connection) })), ...errorSchemas(...ORG_OWNER_ERRORS) },
      detail: doc('List Slack connections'),
    })
    .delete('/v1/chatops/slack/:id', ({ org, params, request, server }) => chatops.disconnect(org.orgId, params.id, actedBy(auth, org, request, server)), {
      access: 'chatops.manage',
      params: t.Object({ id: Id }, closed),
      response: { 200: t.NoValidate(t.Object({ id: Id, deleted: t.Literal(true) })), ...errorSchemas(...ORG_OWNER_ERRORS, 'invalid_body', 'invalid_id', 'not_found') },
      detail: doc('Disconnect a Slack channel'),
    })
    .get('/v1/chatops/slack/users', async ({ org }) => ({ data: await chatops.users(org.orgId) }), {
      access: 'chatops.manage',
      response: { 200: t.NoValidate(t.Object({ data: t.Array(SlackUser) })), ...errorSchemas(...ORG_OWNER_ERRORS) },
      detail: doc('Slack users allowed to queue and archive through /fixloop'),
    })
    .post(
      '/v1/chatops/slack/users',
      ({ org, body, request, server }) =>
        // The Slack user queues reports for the coding agent from Slack long after the session that allowed them.
        chatops.allowUser(org.orgId, body.teamId, body.userId, actedBy(auth, org, request, server), () => confirmSessionCaller(auth, org, 'slack_allow_user', request, server)),
      {
        access: 'chatops.manage',
        body: UserBody,
        parse: 'json',
        response: { 200: t.NoValidate(t.Object({ teamId: t.String(), userId: t.String(), allowed: t.Literal(true) })), ...errorSchemas(...ORG_OWNER_ERRORS, 'invalid_body', 'invalid_credentials') },
        detail: doc(
          'Allow a Slack user to act for the Org',
          "teamId and userId as Slack sends them with every slash command (T…, U…/W…). An `sk_` key is asked nothing more. A dashboard session must first confirm it is the admin (the Slack user can queue and archive the Org's reports through /fixloop after the session ends): an unused confirmation for `slack_allow_user` at most 5 minutes old, by password (POST /admin/api/me/reauth/password) or at the identity provider (POST /admin/api/me/reauth), used up by this call; otherwise 401 invalid_credentials with `details.reauthRequired`.",
        ),
      },
    )
    .delete('/v1/chatops/slack/users/:teamId/:userId', ({ org, params, request, server }) => chatops.denyUser(org.orgId, params.teamId, params.userId, actedBy(auth, org, request, server)), {
      access: 'chatops.manage',
      params: UserParams,
      response: { 200: t.NoValidate(t.Object({ teamId: t.String(), userId: t.String(), allowed: t.Literal(false) })), ...errorSchemas(...ORG_OWNER_ERRORS, 'invalid_body', 'invalid_id', 'not_found') },
      detail: doc('Withdraw a Slack user'),
    })
}

const SLASH_BODY_MAX_BYTES = 64 * 1024

/** POST /v1/chatops/slack/:id/commands: Slack's slash-command request, verified by its signature. */
export function slackCommandRoutes(commands: SlashCommands) {
  return new Elysia({ name: 'chatops-commands' }).use(accessGuard()).post(
    '/v1/chatops/slack/:id/commands',
    async ({ params, request }) => {
      // The raw bytes, as Slack signed them (the JSON reader leaves this route alone). Slack's payloads are small.
      const raw = new TextDecoder().decode(await readBodyBounded(request, SLASH_BODY_MAX_BYTES))
      return commands.handle(params.id, request.headers, raw)
    },
    {
      access: 'slack_signature',
      params: t.Object({ id: Id }, closed),
      response: {
        200: t.NoValidate(t.Object({ response_type: t.Literal('ephemeral'), text: t.String() })),
        ...errorSchemas('invalid_id', 'not_found', 'invalid_signature', 'payload_too_large'),
      },
      detail: {
        summary: 'Slack slash command /fixloop (called by Slack)',
        description:
          'Verified with the connection\'s Slack signing secret (X-Slack-Signature v0, X-Slack-Request-Timestamp within 5 minutes). Acknowledged at once; the answer goes to response_url. status: anyone; queue/archive: Slack users allowed for the Org.',
        tags: ['chatops'],
        requestBody: {
          required: true,
          content: {
            'application/x-www-form-urlencoded': {
              schema: {
                type: 'object',
                description: "Slack's slash-command payload (only these fields are read)",
                properties: {
                  command: { type: 'string' },
                  text: { type: 'string', description: 'status|queue|archive <report id>' },
                  team_id: { type: 'string' },
                  user_id: { type: 'string' },
                  response_url: { type: 'string' },
                },
              },
            },
          },
        },
      },
    },
  )
}
