/**
 * The `/fixloop` slash command. Slack's request is verified with the connection's signing secret
 * (v0 HMAC-SHA256 over "v0:<timestamp>:<raw body>", constant-time compare, timestamp within ±5 min),
 * acknowledged at once (Slack gives up after 3 s), and answered through response_url:
 *   /fixloop status <id>    anyone in the workspace the app is installed in
 *   /fixloop queue <id>     only Slack users allowed for the Org (chatops slack allow-user)
 *   /fixloop archive <id>   idem
 * Reports of another Org (or, for an App-scoped connection, of another App) are "not found".
 * A signed request is taken once: its signature is spent until its timestamp leaves the window, so a
 * captured request sent again within the 5 minutes (queue, queue again after the run) is refused.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Store } from '../../db/store'
import type { SecretBox } from '../../core/crypto'
import type { Clock } from '../../core/clock'
import type { Config } from '../../config'
import { ApiError } from '../../core/errors'
import { stripNul } from '../../core/nul'
import type { Logger } from '../../core/logger'
import { ID_PATTERN } from '../../core/ids'
import type { FeedbackService } from '../feedback/service'
import type { SlackApi } from './slack-api'
import { clip } from '../../core/clip'

const WINDOW_SECONDS = 300
const ID_RE = new RegExp(ID_PATTERN)

/** What this service is given: the repositories and values it uses (a Context has them all). */
export interface SlashCommandDeps {
  store: Pick<Store, 'chatops'>
  box: SecretBox
  clock: Clock
  config: Pick<Config, 'slackApiUrl'>
}

export function verifySlackSignature(signingSecret: string, timestamp: string | null, signature: string | null, rawBody: string, nowMs: number): boolean {
  if (!timestamp || !signature || !/^\d{1,12}$/.test(timestamp)) return false
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > WINDOW_SECONDS) return false
  const expected = Buffer.from('v0=' + createHmac('sha256', signingSecret).update(`v0:${timestamp}:${rawBody}`).digest('hex'))
  const given = Buffer.from(signature)
  return given.length === expected.length && timingSafeEqual(given, expected)
}

/** Spends a signed request's signature until `expiresAt` (epoch ms): false when it was spent already (a replay). */
export type SpendSignature = (signature: string, expiresAt: number) => Promise<boolean>

const HELP = 'Usage: `/fixloop status <report id>` · `/fixloop queue <report id>` · `/fixloop archive <report id>`'

export function createSlashCommands(ctx: SlashCommandDeps, feedback: FeedbackService, api: SlackApi, log: Logger, spend: SpendSignature) {
  const repo = ctx.store.chatops
  const slackOrigin = new URL(ctx.config.slackApiUrl).origin

  /** response_url must point at Slack (or at the configured API host, e.g. a test stub): never elsewhere. */
  function safeResponseUrl(text: string | null): string | undefined {
    if (!text) return undefined
    try {
      const u = new URL(text)
      if ((u.protocol === 'https:' && u.hostname === 'hooks.slack.com') || u.origin === slackOrigin) return u.href
    } catch {
      // not a URL
    }
    return undefined
  }

  async function reportIn(orgId: string, appId: string | null, id: string) {
    const row = await repo.report(orgId, id)
    if (!row || (appId !== null && row.app_id !== appId)) return undefined
    return row
  }

  async function answer(orgId: string, appId: string | null, teamId: string, userId: string, text: string): Promise<string> {
    const [verb = '', id = ''] = text.trim().split(/\s+/)
    if (!['status', 'queue', 'archive'].includes(verb) || !ID_RE.test(id)) return HELP
    const row = await reportIn(orgId, appId, id)
    if (!row) return `No report ${id} here.`
    if (verb === 'status') {
      const dups = await repo.duplicateCount(id)
      const pr = await repo.latestPrUrl(id)
      const lead = row.duplicate_of_id ? ` (duplicate of ${row.duplicate_of_id})` : ''
      return `Report ${id}: *${row.status}*${lead}${dups ? ` · ${dups} duplicates` : ''}${pr ? ` · PR ${pr}` : ''}`
    }
    if (!(await repo.isAllowed(orgId, teamId, userId))) {
      return `You are not allowed to change reports of this organisation. An operator can allow you with: fixloop chatops slack allow-user --org ${orgId} --team ${teamId} --user ${userId}`
    }
    try {
      const moved = await feedback.patch(orgId, id, { status: verb === 'queue' ? 'queued' : 'archived' })
      log.info('slack command', { orgId, teamId, userId, verb, feedbackId: id })
      return `Report ${id} is now *${moved.status}*.`
    } catch (e) {
      if (e instanceof ApiError) {
        const d = e.details as { from?: string; leadFeedbackId?: string } | undefined
        if (e.code === 'invalid_transition') return `Report ${id} cannot be ${verb === 'queue' ? 'queued' : 'archived'} from *${d?.from}*.`
        if (e.code === 'invalid_target') return `Report ${id} is a duplicate of ${d?.leadFeedbackId}: act on the lead.`
        return `Could not ${verb} ${id}: ${e.message}`
      }
      throw e
    }
  }

  return {
    /**
     * Handles one slash-command request; returns the immediate acknowledgement. Throws
     * invalid_signature (403) for anything Slack did not sign with this connection's secret.
     */
    async handle(connectionId: string, headers: Headers, rawBody: string): Promise<{ response_type: 'ephemeral'; text: string }> {
      const c = await repo.getAny(connectionId)
      if (!c) throw new ApiError('not_found')
      const secret = ctx.box.open(c.signing_secret_sealed).toString()
      if (!verifySlackSignature(secret, headers.get('x-slack-request-timestamp'), headers.get('x-slack-signature'), rawBody, ctx.clock.now())) {
        throw new ApiError('invalid_signature', undefined, 'The Slack request signature is missing, stale or wrong.')
      }
      // Verified, so the timestamp is a number within the window: the signature stays spent until it leaves it.
      const expiresAt = (Number(headers.get('x-slack-request-timestamp')) + WINDOW_SECONDS) * 1000
      if (!(await spend(`slack:${connectionId}:${headers.get('x-slack-signature')}`, expiresAt))) {
        throw new ApiError('invalid_signature', undefined, 'This Slack request was received already: a signed request is taken once.')
      }
      const form = new URLSearchParams(rawBody)
      // Slack's delivery, a third party's: NUL is stripped, not refused (core/nul.ts).
      const field = (name: string) => stripNul(form.get(name) ?? '')
      const teamId = field('team_id')
      const userId = field('user_id')
      const text = clip(field('text'), 200)
      const responseUrl = safeResponseUrl(form.get('response_url'))
      if (!responseUrl) return { response_type: 'ephemeral', text: await answer(c.org_id, c.app_id, teamId, userId, text) }
      // Acknowledge now, answer through response_url: the work must never hold Slack's 3-second window.
      setTimeout(async () => {
        let reply: string
        try {
          reply = await answer(c.org_id, c.app_id, teamId, userId, text)
        } catch (e) {
          log.error('slack command failed', { connectionId, error: e instanceof Error ? e.message : String(e) })
          reply = 'Something went wrong; the operator can find it in the server log.'
        }
        api.respond(responseUrl, reply).catch((e) => log.warn('slack response_url failed', { connectionId, error: String(e) }))
      }, 0)
      return { response_type: 'ephemeral', text: 'Working on it…' }
    },
  }
}
export type SlashCommands = ReturnType<typeof createSlashCommands>
