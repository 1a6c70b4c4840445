/**
 * Slack chat-ops connections and the Slack users allowed to act for an Org, shared by the API and the
 * CLI. The bot token and the signing secret are sealed at rest and never shown again. Mapping: a Slack
 * user is identified by (workspace team_id, user_id), both as Slack sends them with every slash
 * command; only pairs allowed for the Org may queue or archive through `/fixloop`. Every change takes
 * who made it and is written to the audit log in the change's own transaction.
 */
import type { Context } from '../../context'
import { ApiError } from '../../core/errors'
import { isoUtc } from '../../core/clock'
import { newId } from '../../core/ids'
import { isEventType } from '../../lifecycle/event-types'
import { createChatopsRepo, type SlackConnectionRow } from './repo'
import { createAuditLog, type ActedBy } from '../audit/index'

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

export function createChatopsService(ctx: Context) {
  const repo = createChatopsRepo(ctx.sqlite)
  const bad = (path: string, message: string) => new ApiError('invalid_body', { issues: [{ path, message }] })
  const audit = createAuditLog(ctx.sqlite, ctx.clock)
  const log = (by: ActedBy, orgId: string, action: string, targetId: string, data: Record<string, unknown> = {}) => audit.record({ orgId, actor: by.actor, ip: by.ip, action, targetId, data })

  return {
    repo,

    connect(orgId: string, input: SlackConnectInput, by: ActedBy) {
      const token = input.botToken.trim()
      const secret = input.signingSecret.trim()
      if (!/^xox[bp]-[A-Za-z0-9-]{8,250}$/.test(token)) throw bad('/botToken', 'a Slack bot token starts with xoxb-')
      if (!/^[0-9a-f]{16,128}$/i.test(secret)) throw bad('/signingSecret', "the Slack app's signing secret (hex, from Basic Information)")
      if (!CHANNEL_RE.test(input.channel)) throw bad('/channel', 'a channel id (C0123ABCD) or #name')
      const list = [...new Set(input.events ?? DEFAULT_SLACK_EVENTS)]
      const unknown = list.filter((e) => !isEventType(e))
      if (unknown.length > 0) throw bad('/events', `unknown event type(s): ${unknown.join(', ')}`)
      if (input.appId && !repo.appInOrg(orgId, input.appId)) {
        throw new ApiError('app_not_found')
      }
      const id = newId(ctx.clock)
      ctx.sqlite
        .transaction(() => {
          repo.insert({
            id,
            org_id: orgId,
            app_id: input.appId ?? null,
            channel: input.channel,
            bot_token_sealed: ctx.box.seal(Buffer.from(token)),
            signing_secret_sealed: ctx.box.seal(Buffer.from(secret)),
            event_types: JSON.stringify(list),
            // From now on: a new connection does not replay the Org's history into the channel.
            cursor_seq: repo.lastSeq(orgId),
            created_at: ctx.clock.now(),
          })
          log(by, orgId, 'slack.connected', id, { channel: input.channel, appId: input.appId ?? null, events: list })
        })
        .immediate()
      return present(repo.get(orgId, id)!)
    },

    list: (orgId: string) => repo.list(orgId).map(present),

    disconnect(orgId: string, id: string, by: ActedBy) {
      ctx.sqlite.transaction(() => {
        if (repo.softDelete(orgId, id, ctx.clock.now()) === 0) throw new ApiError('not_found')
        log(by, orgId, 'slack.disconnected', id)
      }).immediate()
      return { id, deleted: true as const }
    },

    allowUser(orgId: string, teamId: string, userId: string, by: ActedBy) {
      if (!SLACK_ID_RE.test(teamId)) throw bad('/teamId', 'a Slack team id (T0123ABCD)')
      if (!SLACK_ID_RE.test(userId)) throw bad('/userId', 'a Slack user id (U0123ABCD or W0123ABCD)')
      ctx.sqlite.transaction(() => {
        // Allowing a user twice changes nothing and is not logged twice.
        if (repo.allow(orgId, teamId, userId, ctx.clock.now()) > 0) log(by, orgId, 'slack.user_allowed', `${teamId}/${userId}`, { teamId, userId })
      }).immediate()
      return { teamId, userId, allowed: true as const }
    },

    denyUser(orgId: string, teamId: string, userId: string, by: ActedBy) {
      ctx.sqlite.transaction(() => {
        if (repo.deny(orgId, teamId, userId) === 0) throw new ApiError('not_found')
        log(by, orgId, 'slack.user_denied', `${teamId}/${userId}`, { teamId, userId })
      }).immediate()
      return { teamId, userId, allowed: false as const }
    },

    users: (orgId: string) => repo.users(orgId).map((u) => ({ teamId: u.slack_team_id, userId: u.slack_user_id, createdAt: isoUtc(u.created_at) })),
  }
}
export type ChatopsService = ReturnType<typeof createChatopsService>
