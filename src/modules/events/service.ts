/**
 * The rules of the pull feed and the live stream: tenant scope (an appId of another Org is
 * app_not_found), the resume point (Last-Event-ID wins over `after`), the caps on open streams per
 * credential (FIXLOOP_SSE_STREAMS_PER_KEY) and per Org.
 */
import { ApiError, invalidQuery } from '../../core/errors'
import { isEventType, unknownEventTypesMessage } from '../../lifecycle/event-types'
import type { AppsRepo } from '../apps/repo'
import type { EventHub } from './hub'
import { EVENTS_LIMIT_DEFAULT } from './model'
import { presentEvent, type EventsRepo } from './repo'
import { openEventStream } from './stream'

/** Open streams per Org: far above any real use, low enough that one leaked key cannot exhaust the server. */
export const STREAMS_PER_ORG_MAX = 5000
/** Default open streams per credential (an `sk_` key or a dashboard session): FIXLOOP_SSE_STREAMS_PER_KEY. */
export const STREAMS_PER_KEY_DEFAULT = 100

function tooManyStreams(limit: number, scope: 'org' | 'key' | 'server'): ApiError {
  const message =
    scope === 'server'
      ? `At most ${limit} event streams are open on this server at once (what its open-files limit leaves); try again later.`
      : scope === 'org'
        ? `At most ${limit} event streams per Org are open at once.`
        : `At most ${limit} event streams per API key (or dashboard session) are open at once; close one, or raise FIXLOOP_SSE_STREAMS_PER_KEY.`
  return new ApiError('rate_limited', { openStreams: limit, scope }, message).withHeaders({ 'retry-after': '60' })
}

export interface EventQuery {
  after?: number
  limit?: number
  types?: string
  appId?: string
}

/**
 * The `types` filter's list. A name that is no event type is refused, as a webhook's and a Slack
 * channel's filters refuse it: a typo (`feedback.recieved`) would otherwise match nothing, and a feed or
 * stream that stays empty says nothing of why.
 */
function typesOf(text: string | undefined): string[] | undefined {
  if (!text) return undefined
  const list = [...new Set(text.split(','))]
  const unknown = list.filter((e) => !isEventType(e))
  if (unknown.length > 0) throw invalidQuery([{ path: '/types', message: unknownEventTypesMessage(unknown) }])
  return list
}

/** Last-Event-ID wins over `after`: a reconnecting browser repeats the original URL. */
function resumeFrom(header: string | null, after: number | undefined): number {
  if (header === null || header.trim() === '') return after ?? 0
  // Decimal digits only, as this server writes ids: Number() would also read "0x10", "1e3" and "0b1".
  const text = header.trim()
  const seq = /^[0-9]{1,16}$/.test(text) ? Number(text) : Number.NaN
  if (!Number.isSafeInteger(seq) || seq < 0) throw new ApiError('invalid_body', { issues: [{ path: 'header:Last-Event-ID', message: 'must be a seq (a non-negative integer)' }] })
  return seq
}

/**
 * `streamsMax`: open streams on this server at most, all Orgs together (src/core/fd-limit.ts): each holds a
 * file descriptor, and streams past the open-files limit left the server unable to accept any connection.
 */
export function createEventsService(repo: EventsRepo, hub: EventHub, apps: AppsRepo, streamsPerKey = STREAMS_PER_KEY_DEFAULT, streamsMax = Number.POSITIVE_INFINITY) {
  /** Open streams per credential id (`sk_` key id or `session:<id>`), never the credential itself. */
  const openByKey = new Map<string, number>()
  let openTotal = 0
  // An App ever of the Org, deleted ones included, as GET /v1/feedback?appId= reads it: a deleted App's
  // reports stay readable and movable, and their events carry its id; the filter answered 404 for them.
  const checkApp = async (orgId: string, appId: string | undefined) => {
    if (appId && !(await apps.everInOrg(orgId, appId))) throw new ApiError('app_not_found')
  }
  return {
    async list(orgId: string, q: EventQuery) {
      await checkApp(orgId, q.appId)
      const page = await repo.page(orgId, { after: q.after ?? 0, limit: q.limit ?? EVENTS_LIMIT_DEFAULT, types: typesOf(q.types), appId: q.appId })
      return { data: page.rows.map(presentEvent), nextAfter: page.nextAfter }
    },

    /**
     * `keyId`: the credential the stream counts against (OrgCaller.keyId); `authorized`: whether that
     * credential still stands, asked at every heartbeat (a revoked key's stream ends).
     */
    async stream(orgId: string, keyId: string, q: Omit<EventQuery, 'limit'>, lastEventId: string | null, authorized?: () => Promise<boolean>): Promise<Response> {
      await checkApp(orgId, q.appId)
      const after = resumeFrom(lastEventId, q.after)
      // Read before a stream slot is taken: a refused filter must not hold one.
      const types = typesOf(q.types)
      const mine = openByKey.get(keyId) ?? 0
      if (mine >= streamsPerKey) throw tooManyStreams(streamsPerKey, 'key')
      if (hub.countFor(orgId) >= STREAMS_PER_ORG_MAX) throw tooManyStreams(STREAMS_PER_ORG_MAX, 'org')
      if (openTotal >= streamsMax) throw tooManyStreams(streamsMax, 'server')
      openByKey.set(keyId, mine + 1)
      openTotal++
      return openEventStream(repo, hub, orgId, { after, types, appId: q.appId }, authorized, () => {
        openTotal--
        const n = (openByKey.get(keyId) ?? 1) - 1
        if (n > 0) openByKey.set(keyId, n)
        else openByKey.delete(keyId)
      })
    },

    /** Streams open on one credential (tests, diagnostics). */
    openFor: (keyId: string): number => openByKey.get(keyId) ?? 0,
  }
}
export type EventsService = ReturnType<typeof createEventsService>
