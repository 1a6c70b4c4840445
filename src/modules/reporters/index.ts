/**
 * GET /v1/reporters/feedback and POST /v1/reporters/erase (sk, or an Org owner's dashboard session): a
 * reporter's data, by externalUserId or email (exactly one), for the Org or one App.
 */
import { Elysia, t } from 'elysia'
import { ApiError } from '../../core/errors'
import { ID_PATTERN } from '../../core/ids'
import { LIMITS } from '../../core/limits'
import { actedBy, orgAuth, type AuthDeps } from '../../http/auth'
import { BEARER_SK, errorSchemas, ORG_AUTH_ERRORS } from '../../http/error-docs'
import { readIntQuery } from '../../http/query'
import { invalidQuery } from '../../core/errors'
import { baseUrlOf } from '../uploads/index'
import type { Reporter } from './repo'
import type { ReportersService } from './service'

const closed = { additionalProperties: false } as const
const Id = t.String({ pattern: ID_PATTERN, description: '24-character lowercase hex id' })
// The values a report can carry must be reachable: a sub or identity.externalUserId holds up to 256
// characters, identity.email any text up to 320 and a token's ctx.email any string within ctx's 2 KB.
// These were 255 characters and a strict address pattern (no spaces), so "Jane Roe <jane@example.com>"
// or a 256-character id could be neither exported nor erased. A value without "@" is still refused: it
// is no address (and an identifier given in the wrong parameter).
const ExternalUserId = t.String({ minLength: 1, maxLength: LIMITS.reporterIdMax, description: "The end user's id: the user token's sub, or identity.externalUserId of a public report" })
const Email = t.String({ minLength: 3, maxLength: LIMITS.reporterEmailMax, pattern: '@', description: 'The email the reports carry, as submitted (compared without case)' })

const ExportQuery = t.Object(
  {
    externalUserId: t.Optional(ExternalUserId),
    email: t.Optional(Email),
    appId: t.Optional(Id),
    cursor: t.Optional(t.String({ pattern: ID_PATTERN, description: 'The nextCursor of the previous page' })),
    limit: t.Optional(t.String({ maxLength: 16, description: `Integer ${LIMITS.listLimitMin}-${LIMITS.listLimitMax}, default ${LIMITS.listLimitDefault}` })),
  },
  closed,
)
const EraseBody = t.Object({ externalUserId: t.Optional(ExternalUserId), email: t.Optional(Email), appId: t.Optional(Id) }, closed)

/**
 * Exactly one of the two identifiers; both or neither is invalid_body naming the field (a JSON pointer).
 * `invalid` builds the refusal: the export reads them from the query string (invalidQuery says so, as
 * for any other query parameter), the erasure from its body.
 */
function reporterOf(q: { externalUserId?: string; email?: string }, invalid: (issues: { path: string; message: string }[]) => ApiError): Reporter {
  if (q.externalUserId !== undefined && q.email !== undefined) throw invalid([{ path: '/email', message: 'give externalUserId or email, not both' }])
  if (q.externalUserId !== undefined) return { externalUserId: q.externalUserId }
  if (q.email !== undefined) return { email: q.email }
  throw invalid([{ path: '/externalUserId', message: 'externalUserId or email is required' }])
}

const invalidBody = (issues: { path: string; message: string }[]) => new ApiError('invalid_body', { issues })

export function reporterRoutes(auth: AuthDeps, reporters: ReportersService, publicUrl: string | undefined) {
  return new Elysia({ name: 'reporters' })
    .use(orgAuth(auth))
    .get(
      '/v1/reporters/feedback',
      ({ org, query, request }) =>
        reporters.export(
          org.orgId,
          {
            who: reporterOf(query, invalidQuery),
            appId: query.appId,
            cursor: query.cursor,
            limit: readIntQuery(request, 'limit', { min: LIMITS.listLimitMin, max: LIMITS.listLimitMax }, LIMITS.listLimitDefault),
          },
          baseUrlOf(request, publicUrl),
        ),
      {
        access: 'reporters.manage',
        query: ExportQuery,
        response: { 200: t.NoValidate(t.Object({ data: t.Array(t.Unknown()), nextCursor: t.Union([t.String(), t.Null()]) })), ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_body', 'app_not_found') },
        detail: {
          summary: "Export a reporter's reports (data-subject access)",
          description: `Every report of that reporter in the Org (or one App) as full items, their own data only (a lead's duplicates, theme and consolidated text, which hold other reporters' words and identities, are left out: [] and null), newest first, cursor-paged (limit ${LIMITS.listLimitMin}-${LIMITS.listLimitMax}, default ${LIMITS.listLimitDefault}). Exactly one of externalUserId and email.`,
          tags: ['reporters'],
          security: BEARER_SK,
        },
      },
    )
    .post(
      '/v1/reporters/erase',
      ({ org, body, request, server }) => reporters.erase(org.orgId, { who: reporterOf(body, invalidBody), appId: body.appId }, actedBy(auth, org, request, server)),
      {
        access: 'reporters.manage',
        body: EraseBody,
        parse: 'json',
        response: { 200: t.Object({ erased: t.Integer() }), ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_body', 'app_not_found') },
        detail: {
          summary: "Erase a reporter's reports (data-subject erasure)",
          description:
            'Deletes every report of that reporter in the Org (or one App) with its attachments, blobs and every record naming the reporter; events keep ids only. Idempotent: a second call erases 0. `erased` counts the reports this call removed (two calls at once share the work and each counts its own); a call answers once none of those reports is left. Audited with that count and a keyed hash of the identifier, never the identifier. What was already sent out (issue trackers, webhooks, Slack) is not reachable: see docs/security.md.',
          tags: ['reporters'],
          security: BEARER_SK,
        },
      },
    )
}
