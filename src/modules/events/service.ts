/**
 * The rules of the pull feed and the live stream: tenant scope (an appId of another Org is
 * app_not_found), the resume point (Last-Event-ID wins over `after`), the cap on open streams per Org.
 */
import { ApiError } from '../../core/errors'
import type { AppsRepo } from '../apps/repo'
import type { EventHub } from './hub'
import { EVENTS_LIMIT_DEFAULT } from './model'
import { presentEvent, type EventsRepo } from './repo'
import { openEventStream } from './stream'

/** Open streams per Org: far above any real use, low enough that one leaked key cannot exhaust the server. */
export const STREAMS_PER_ORG_MAX = 5000

export interface EventQuery {
  after?: number
  limit?: number
  types?: string
  appId?: string
}

const typesOf = (text: string | undefined) => (text ? [...new Set(text.split(','))] : undefined)

/** Last-Event-ID wins over `after`: a reconnecting browser repeats the original URL. */
function resumeFrom(header: string | null, after: number | undefined): number {
  if (header === null || header.trim() === '') return after ?? 0
  const seq = Number(header.trim())
  if (!Number.isSafeInteger(seq) || seq < 0) throw new ApiError('invalid_body', { issues: [{ path: 'Last-Event-ID', message: 'must be a seq (a non-negative integer)' }] })
  return seq
}

export function createEventsService(repo: EventsRepo, hub: EventHub, apps: AppsRepo) {
  const checkApp = (orgId: string, appId: string | undefined) => {
    if (appId && !apps.getForOrg(orgId, appId)) throw new ApiError('app_not_found')
  }
  return {
    list(orgId: string, q: EventQuery) {
      checkApp(orgId, q.appId)
      const page = repo.page(orgId, { after: q.after ?? 0, limit: q.limit ?? EVENTS_LIMIT_DEFAULT, types: typesOf(q.types), appId: q.appId })
      return { data: page.rows.map(presentEvent), nextAfter: page.nextAfter }
    },

    stream(orgId: string, q: Omit<EventQuery, 'limit'>, lastEventId: string | null): Response {
      checkApp(orgId, q.appId)
      const after = resumeFrom(lastEventId, q.after)
      if (hub.countFor(orgId) >= STREAMS_PER_ORG_MAX) {
        throw new ApiError('rate_limited', { openStreams: STREAMS_PER_ORG_MAX }, `At most ${STREAMS_PER_ORG_MAX} event streams per Org are open at once.`).withHeaders({ 'retry-after': '60' })
      }
      return openEventStream(repo, hub, orgId, { after, types: typesOf(q.types), appId: q.appId })
    },
  }
}
export type EventsService = ReturnType<typeof createEventsService>
