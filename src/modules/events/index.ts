/**
 * GET /v1/events (pull feed) and GET /v1/events/stream (Server-Sent Events), sk, tenant-scoped.
 */
import { Elysia, t } from 'elysia'
import { orgAuth, stillAuthorized, type AuthDeps } from '../../http/auth'
import { BEARER_SK, errorSchemas, ORG_AUTH_ERRORS } from '../../http/error-docs'
import { readIntQuery } from '../../http/query'
import { EVENTS_LIMIT_DEFAULT, EVENTS_LIMIT_MAX, EventsPage, EventsQuery, SEQ_MAX, StreamQuery } from './model'
import type { EventsService } from './service'

/**
 * CONTRACT.md writes the URLs as `…/v1/events/stream?after=<seq>&types=&appId=` and
 * `…/v1/events?after=<seq>&limit=N&types=a,b&appId=`: a client filling them in with no filter sends
 * `types=` and `appId=` empty, which mean "every type", "every App" (they were refused with 400). Other
 * empty values keep their answer (an empty `after` or `limit` is no number: 400).
 */
function emptyFiltersLeftOut({ query }: { query: object }): void {
  const q = query as Record<string, unknown>
  for (const name of ['types', 'appId']) if (q[name] === '') delete q[name]
}

export function eventRoutes(auth: AuthDeps, events: EventsService) {
  return new Elysia({ name: 'events' })
    .use(orgAuth(auth))
    .get(
      '/v1/events',
      // The per-type schemas document the payloads; the rows are trusted as written by the outbox.
      ({ org, query, request }) =>
        events.list(org.orgId, {
          ...query,
          after: readIntQuery(request, 'after', { min: 0, max: SEQ_MAX }, 0),
          limit: readIntQuery(request, 'limit', { min: 1, max: EVENTS_LIMIT_MAX }, EVENTS_LIMIT_DEFAULT),
        }) as Promise<{ data: never[]; nextAfter: number }>,
      {
        access: 'org.read',
        transform: emptyFiltersLeftOut,
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
      ({ org, query, request }) =>
        events.stream(org.orgId, org.keyId, { ...query, after: readIntQuery(request, 'after', { min: 0, max: SEQ_MAX }, 0) }, request.headers.get('last-event-id'), () =>
          stillAuthorized(auth, request, org),
        ),
      {
        access: 'org.read',
        transform: emptyFiltersLeftOut,
        query: StreamQuery,
        response: {
          200: t.String({ description: 'text/event-stream: "id: <seq>", "event: <type>", "data: <event JSON>"; a comment line at least every 15 s' }),
          ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_body', 'app_not_found'),
        },
        detail: {
          summary: 'Live stream of events (Server-Sent Events)',
          description:
            'Sends every event after `after` (or after the Last-Event-ID header, which wins; with neither, from the oldest retained event), then new events as they happen. Each message has id = seq, so a reconnect with Last-Event-ID resumes exactly, across server restarts too. At most FIXLOOP_SSE_STREAMS_PER_KEY (default 100) open streams per API key or dashboard session, and 5,000 per Org, and on the server what its open-files limit leaves: 429 rate_limited with Retry-After beyond. The credential is checked again at every heartbeat: a stream ends within one heartbeat (FIXLOOP_SSE_HEARTBEAT_SECONDS, default 10 s) of its key being revoked or rotated, or its session signed out or expired.',
          tags: ['events'],
          security: BEARER_SK,
        },
      },
    )
}
