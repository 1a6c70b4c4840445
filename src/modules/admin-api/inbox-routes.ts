/**
 * The triage inbox's own reads: the filtered folder list with unread marks, read marks, and a report's
 * status history from the event log. Moves, merges and report details go through the /v1 routes.
 */
import { Elysia, t } from 'elysia'
import type { Clock } from '../../core/clock'
import { errorSchemas } from '../../http/error-docs'
import { authenticateAdmin, type AdminAuthDeps } from '../../http/admin-auth'
import { accessGuard } from '../../http/access-guard'
import { IdParams } from '../feedback/model'
import type { Inbox } from './inbox-repo'
import { ADMIN_SESSION, IdsBody, InboxQuery, OrgParams } from './model'
import { ID_PATTERN } from '../../core/ids'
import { ApiError, invalidQuery } from '../../core/errors'
import { parseIsoTime } from '../../core/iso-time'

const AUTH = ['not_signed_in', 'csrf_failed', 'rate_limited'] as const
const doc = (summary: string, description?: string) => ({ summary, description, tags: ['admin'], security: ADMIN_SESSION })

/**
 * `notificationOf`: the report's "fixed" mail (modules/mail/service.ts `notification`), or null when its
 * reporter did not ask or it is not resolved yet: the report page reads it with the history, so a report
 * without one costs no request that answers 404.
 */
/** Whether an App (ever) or a report is the Org's: another Org's id is 404 here as on every route. */
export interface OrgOwns {
  app(orgId: string, appId: string): Promise<boolean>
  feedback(orgId: string, feedbackId: string): Promise<boolean>
}

export function inboxRoutes(
  deps: AdminAuthDeps,
  inbox: Inbox,
  orgExists: (orgId: string) => Promise<boolean>,
  clock: Clock,
  notificationOf: (orgId: string, feedbackId: string) => Promise<unknown>,
  owns: OrgOwns,
) {
  return new Elysia({ name: 'admin-inbox' })
    .use(accessGuard({ orgExists }))
    .derive(async ({ request }) => ({ caller: await authenticateAdmin(deps, request) }))
    .get(
      '/admin/api/orgs/:orgId/inbox',
      async ({ caller, params, query }) => {
        if (query.appId !== undefined && !(await owns.app(params.orgId, query.appId))) throw new ApiError('app_not_found')
        // The pattern checks the shape only: an impossible date (2026-02-30) would be rolled over, or NaN.
        for (const key of ['from', 'to'] as const) {
          const value = query[key]
          if (value !== undefined && parseIsoTime(value) === undefined) throw invalidQuery([{ path: `/${key}`, message: 'must be an ISO 8601 date or instant, e.g. 2026-01-31' }])
        }
        return inbox.list(params.orgId, caller.admin.id, {
          ...query,
          hasScreenshot: query.hasScreenshot === undefined ? undefined : query.hasScreenshot === 'true',
          hasConsole: query.hasConsole === undefined ? undefined : query.hasConsole === 'true',
        })
      },
      {
        access: 'org.read',
        params: OrgParams,
        query: InboxQuery,
        response: { 200: t.NoValidate(t.Object({ data: t.Array(t.Unknown()), nextCursor: t.Union([t.String(), t.Null()]), eventSeq: t.Number() })), ...errorSchemas(...AUTH, 'invalid_id', 'invalid_body', 'not_found', 'app_not_found') },
        detail: doc('Reports of a status folder, newest first, filtered, with unread marks', 'Leads only (duplicates are under their lead). Cursor paging by id.'),
      },
    )
    .get(
      '/admin/api/orgs/:orgId/inbox/counts',
      ({ caller, params }) => {
        return inbox.counts(params.orgId, caller.admin.id)
      },
      { access: 'org.read', params: OrgParams, response: { 200: t.NoValidate(t.Record(t.String(), t.Number())), ...errorSchemas(...AUTH, 'invalid_id', 'not_found') }, detail: doc('Unread reports per folder (stops counting at 1000)') },
    )
    .post(
      '/admin/api/orgs/:orgId/reads',
      async ({ caller, params, body }) => {
        if (body.read === false) {
          await inbox.markUnread(params.orgId, caller.admin.id, body.ids)
          return { changed: body.ids.length }
        }
        return { changed: await inbox.markRead(params.orgId, caller.admin.id, body.ids, clock.now()) }
      },
      {
        access: 'org.read',
        params: OrgParams,
        body: IdsBody,
        parse: 'json',
        response: { 200: t.Object({ changed: t.Number() }), ...errorSchemas(...AUTH, 'invalid_id', 'invalid_body', 'not_found') },
        detail: doc('Mark reports read (or unread with read: false) for you'),
      },
    )
    .get(
      '/admin/api/orgs/:orgId/feedback/:id/history',
      async ({ params }) => {
        if (!(await owns.feedback(params.orgId, params.id))) throw new ApiError('not_found')
        const data = await inbox.history(params.orgId, params.id)
        return { data, notification: await notificationOf(params.orgId, params.id) }
      },
      {
        access: 'org.read',
        params: t.Object({ orgId: t.String({ pattern: ID_PATTERN }), id: IdParams.properties.id }, { additionalProperties: false }),
        response: { 200: t.NoValidate(t.Object({ data: t.Array(t.Unknown()), notification: t.Unknown() })), ...errorSchemas(...AUTH, 'invalid_id', 'not_found') },
        detail: doc(
          "A report's events (status changes, merges, agent runs), oldest first",
          'notification: the reporter\'s "fixed" mail as GET /v1/feedback/:id/notification answers it, or null when there is none (no opt-in, not resolved yet).',
        ),
      },
    )
}
