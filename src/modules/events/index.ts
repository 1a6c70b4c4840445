/**
 * GET /v1/events (pull feed) and GET /v1/events/stream (Server-Sent Events), sk, tenant-scoped.
 */
import { Elysia, t } from 'elysia'
import { ApiError } from '../../core/errors'
import { orgAuth, type AuthDeps } from '../../http/auth'
import { BEARER_SK, errorSchemas, ORG_AUTH_ERRORS } from '../../http/error-docs'
import type { EventHub } from './hub'
import { EVENTS_LIMIT_DEFAULT, EventsPage, EventsQuery, StreamQuery } from './model'
import { presentEvent, type EventsRepo } from './repo'
import { openEventStream } from './stream'

/** Open streams per Org: far above any real use, low enough that one leaked key cannot exhaust the server. */
export const STREAMS_PER_ORG_MAX = 5000

const typesOf = (text: string | undefined) => (text ? [...new Set(text.split(','))] : undefined)

/** Last-Event-ID wins over `after`: a reconnecting browser repeats the original URL. */
function resumeFrom(header: string | null, after: number | undefined): number {
  if (header === null || header.trim() === '') return after ?? 0
  const seq = Number(header.trim())
  if (!Number.isSafeInteger(seq) || seq < 0) throw new ApiError('invalid_body', { issues: [{ path: 'Last-Event-ID', message: 'must be a seq (a non-negative integer)' }] })
  return seq
}

export function eventRoutes(auth: AuthDeps, repo: EventsRepo, hub: EventHub, checkAppInOrg: (orgId: string, appId: string) => void) {
  return new Elysia({ name: 'events' })
    .use(orgAuth(auth))
    .get(
      '/v1/events',
      ({ org, query }) => {
        if (query.appId) checkAppInOrg(org.orgId, query.appId)
        const page = repo.page(org.orgId, { after: query.after ?? 0, limit: query.limit ?? EVENTS_LIMIT_DEFAULT, types: typesOf(query.types), appId: query.appId })
        // The per-type schemas document the payloads; the rows are trusted as written by the outbox.
        return { data: page.rows.map(presentEvent) as never[], nextAfter: page.nextAfter }
      },
      {
        query: EventsQuery,
        response: { 200: t.NoValidate(EventsPage), ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_body', 'app_not_found') },
        detail: {
          summary: 'Pull feed of events, oldest first, by seq',
          description:
            'Returns events with seq > after (exact: no gaps, no duplicates, even while events are being written). Pass nextAfter as `after` to continue; an empty page means you are caught up. Events are kept FIXLOOP_EVENT_RETENTION_DAYS days (default 30).',
          tags: ['events'],
          security: BEARER_SK,
        },
      },
    )
    .get(
      '/v1/events/stream',
      ({ org, query, request }) => {
        if (query.appId) checkAppInOrg(org.orgId, query.appId)
        const after = resumeFrom(request.headers.get('last-event-id'), query.after)
        if (hub.countFor(org.orgId) >= STREAMS_PER_ORG_MAX) {
          throw new ApiError('rate_limited', { openStreams: STREAMS_PER_ORG_MAX }, `At most ${STREAMS_PER_ORG_MAX} event streams per Org are open at once.`).withHeaders({ 'retry-after': '60' })
        }
        return openEventStream(repo, hub, org.orgId, { after, types: typesOf(query.types), appId: query.appId })
      },
      {
        query: StreamQuery,
        response: {
          200: t.String({ description: 'text/event-stream: "id: <seq>", "event: <type>", "data: <event JSON>"; a comment line at least every 15 s' }),
          ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_body', 'app_not_found'),
        },
        detail: {
          summary: 'Live stream of events (Server-Sent Events)',
          description:
            'Sends every event after `after` (or after the Last-Event-ID header, which wins; with neither, from the oldest retained event), then new events as they happen. Each message has id = seq, so a reconnect with Last-Event-ID resumes exactly, across server restarts too. At most 5,000 open streams per Org (429 beyond).',
          tags: ['events'],
          security: BEARER_SK,
        },
      },
    )
}
