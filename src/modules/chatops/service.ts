/**
 * Slack chat-ops connections and the Slack users allowed to act for an Org, shared by the API and the
 * CLI. The bot token and the signing secret are sealed at rest and never shown again. Mapping: a Slack
 * user is identified by (workspace team_id, user_id), both as Slack sends them with every slash
 * command; only pairs allowed for the Org may queue or archive through `/fixloop`. Every change takes
 * who made it and is written to the audit log in the change's own transaction.
 */
import { ApiError } from '../../core/errors'
import type { Store } from '../../db/store'
import type { SecretBox } from '../../core/crypto'
import type { Clock } from '../../core/clock'
import type { Config } from '../../config'
import { isoUtc } from '../../core/clock'
import { newId } from '../../core/ids'
import { isEventType, unknownEventTypesMessage } from '../../lifecycle/event-types'
import { type SlackConnectionRow } from './repo'
import type { ActedBy, AuditEntry } from '../audit/entry'

/** What a connection posts about when no --events are given. */
export const DEFAULT_SLACK_EVENTS = [
  'feedback.status_changed',
  'feedback.duplicate_attached',
  'feedback.unmerged',
  'agent_run.started',
  'agent_run.succeeded',
  'agent_run.failed',
  'agent_run.guardrailed',
] as const

export const SLACK_ID_RE = /^[A-Z0-9]{2,32}$/
const CHANNEL_RE = /^([CGD][A-Z0-9]{2,32}|#[a-z0-9][a-z0-9._-]{0,79})$/

export interface SlackConnectInput {
  botToken: string
  signingSecret: string
  channel: string
  appId?: string
  events?: string[]
}

function present(c: SlackConnectionRow) {
  return {
    id: c.id,
    appId: c.app_id,
    channel: c.channel,
    events: JSON.parse(c.event_types) as string[],
    commandPath: `/v1/chatops/slack/${c.id}/commands`,
    lastError: c.last_error,
    createdAt: isoUtc(c.created_at),
  }
}

/** What this service is given: the repositories and values it uses (a Context has them all). */
export interface ChatopsDeps {
  store: Pick<Store, 'chatops'>
  box: SecretBox
  clock: Clock
  config: Pick<Config, 'slackConnectionsPerOrg'>
}

export function createChatopsService(ctx: ChatopsDeps) {
  const repo = ctx.store.chatops
  const bad = (path: string, message: string) => new ApiError('invalid_body', { issues: [{ path, message }] })
  /** The audit row of a change, written by the repo in the change's own transaction. */
  const entry = (by: ActedBy, orgId: string, action: string, targetId: string, data: Record<string, unknown> = {}): AuditEntry => ({ orgId, actor: by.actor, ip: by.ip, action, targetId, data })

  return {
    repo,

    /**
     * `confirm`: called once the connection is checked, before it is stored; the route asks a dashboard
     * session there for a fresh re-authentication (the channel gets every lead after the session, and the
     * signing secret given here lets its holder send /fixloop commands).
     */
    async connect(orgId: string, input: SlackConnectInput, by: ActedBy, confirm?: () => Promise<void>) {
      const token = input.botToken.trim()
      const secret = input.signingSecret.trim()
      if (!/^xox[bp]-[A-Za-z0-9-]{8,250}$/.test(token)) throw bad('/botToken', 'a Slack bot token starts with xoxb-')
      if (!/^[0-9a-f]{16,128}$/i.test(secret)) throw bad('/signingSecret', "the Slack app's signing secret (hex, from Basic Information)")
      if (!CHANNEL_RE.test(input.channel)) throw bad('/channel', 'a channel id (C0123ABCD) or #name')
      const list = [...new Set(input.events ?? DEFAULT_SLACK_EVENTS)]
      const unknown = list.filter((e) => !isEventType(e))
      if (unknown.length > 0) throw bad('/events', unknownEventTypesMessage(unknown))
      if (input.appId && !(await repo.appInOrg(orgId, input.appId))) {
        throw new ApiError('app_not_found')
      }
      // The notifier walks every live connection of every Org each pass and posts each event to every
      // matching one: an Org's thousands of connections (its sk_ key can make them) would cost every
      // pass and send Slack thousands of calls an event from this server's address. Refused here first, and
      // held again in the insert's transaction (connects racing at the cap).
      const max = ctx.config.slackConnectionsPerOrg
      const atCap = () => new ApiError('invalid_argument', { limit: 'FIXLOOP_SLACK_CONNECTIONS_PER_ORG', max }, `This Org already has ${max} Slack connections, the most it may have (FIXLOOP_SLACK_CONNECTIONS_PER_ORG): disconnect one first.`)
      if (max > 0 && (await repo.list(orgId)).length >= max) throw atCap()
      await confirm?.()
      const id = newId(ctx.clock)
      // The cursor starts at the Org's last seq: a new connection does not replay the Org's history into the channel.
      const inserted = await repo.insert(
        {
          id,
          org_id: orgId,
          app_id: input.appId ?? null,
          channel: input.channel,
          bot_token_sealed: ctx.box.seal(Buffer.from(token)),
          signing_secret_sealed: ctx.box.seal(Buffer.from(secret)),
          event_types: JSON.stringify(list),
          created_at: ctx.clock.now(),
        },
        [entry(by, orgId, 'slack.connected', id, { channel: input.channel, appId: input.appId ?? null, events: list })],
        max,
      )
      if (!inserted) throw atCap()
      return present((await repo.get(orgId, id))!)
    },

    list: async (orgId: string) => (await repo.list(orgId)).map(present),

    async disconnect(orgId: string, id: string, by: ActedBy) {
      if (!(await repo.softDelete(orgId, id, ctx.clock.now(), [entry(by, orgId, 'slack.disconnected', id)]))) throw new ApiError('not_found')
      return { id, deleted: true as const }
    },

    /**
     * `confirm`: called once the ids are checked, before the user is allowed; the route asks a dashboard
     * session there for a fresh re-authentication (the Slack user keeps queueing reports for the coding
     * agent after the session is revoked).
     */
    async allowUser(orgId: string, teamId: string, userId: string, by: ActedBy, confirm?: () => Promise<void>) {
      if (!SLACK_ID_RE.test(teamId)) throw bad('/teamId', 'a Slack team id (T0123ABCD)')
      if (!SLACK_ID_RE.test(userId)) throw bad('/userId', 'a Slack user id (U0123ABCD or W0123ABCD)')
      await confirm?.()
      // Allowing a user twice changes nothing and is not logged twice.
      await repo.allow(orgId, teamId, userId, ctx.clock.now(), [entry(by, orgId, 'slack.user_allowed', `${teamId}/${userId}`, { teamId, userId })])
      return { teamId, userId, allowed: true as const }
    },

    async denyUser(orgId: string, teamId: string, userId: string, by: ActedBy) {
      if (!(await repo.deny(orgId, teamId, userId, [entry(by, orgId, 'slack.user_denied', `${teamId}/${userId}`, { teamId, userId })]))) throw new ApiError('not_found')
      return { teamId, userId, allowed: false as const }
    },

    users: async (orgId: string) => (await repo.users(orgId)).map((u) => ({ teamId: u.slack_team_id, userId: u.slack_user_id, createdAt: isoUtc(u.created_at) })),
  }
}
export type ChatopsService = ReturnType<typeof createChatopsService>
