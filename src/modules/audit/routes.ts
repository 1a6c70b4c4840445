/**
 * GET /v1/audit (sk, or an Org owner's dashboard session): the Org's audit log oldest first (by createdAt,
 * then id), cursor-paged like the other list routes (`after` = the previous page's nextCursor), for a SIEM or a security
 * review. `fixloop audit export` reads the same pages (src/cli/audit.ts).
 */
import { Elysia, t } from 'elysia'
import { ID_PATTERN } from '../../core/ids'
import { LIMITS } from '../../core/limits'
import { orgAuth, type AuthDeps } from '../../http/auth'
import { BEARER_SK, errorSchemas, ORG_AUTH_ERRORS } from '../../http/error-docs'
import { readIntQuery } from '../../http/query'
import type { AuditLog } from './index'
import { parseSince } from './since'

const closed = { additionalProperties: false } as const

const AuditQuery = t.Object(
  {
    after: t.Optional(t.String({ pattern: ID_PATTERN, description: 'The nextCursor of the previous page (an entry id): only entries after it' })),
    since: t.Optional(t.String({ maxLength: 40, description: 'ISO 8601 instant: only entries created at or after it' })),
    // Read (and range-checked, naming /limit) by readIntQuery; the schema only documents it.
    limit: t.Optional(t.String({ maxLength: 16, description: `Integer ${LIMITS.listLimitMin}-${LIMITS.listLimitMax}, default ${LIMITS.listLimitDefault}` })),
  },
  closed,
)

const AuditEntryOut = t.Object({
  id: t.String(),
  orgId: t.Union([t.String(), t.Null()]),
  actor: t.String({ description: '"admin:<id>", "key:<id>", "cli" or "system"' }),
  action: t.String(),
  targetId: t.Union([t.String(), t.Null()]),
  data: t.Record(t.String(), t.Unknown()),
  ip: t.Union([t.String(), t.Null()]),
  createdAt: t.String(),
})
const AuditPage = t.Object({ data: t.Array(AuditEntryOut), nextCursor: t.Union([t.String(), t.Null()]) })

export function auditRoutes(auth: AuthDeps, audit: AuditLog) {
  return new Elysia({ name: 'audit-export' }).use(orgAuth(auth)).get(
    '/v1/audit',
    ({ org, query, request }) =>
      audit.export(org.orgId, {
        after: query.after,
        since: query.since === undefined ? undefined : parseSince(query.since, '/since'),
        limit: readIntQuery(request, 'limit', { min: LIMITS.listLimitMin, max: LIMITS.listLimitMax }, LIMITS.listLimitDefault),
      }),
    {
      access: 'audit.export',
      query: AuditQuery,
      response: { 200: t.NoValidate(AuditPage), ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_body') },
      detail: {
        summary: "The Org's audit log, oldest first (cursor paging)",
        description: `Who changed what (settings, keys, secrets, erasures, retention sweeps), oldest first. Pass nextCursor as \`after\` for the next page; it is null on the last page. Limit ${LIMITS.listLimitMin}-${LIMITS.listLimitMax}, default ${LIMITS.listLimitDefault}. Entries are kept FIXLOOP_AUDIT_RETENTION_DAYS days (default 0: forever).`,
        tags: ['audit'],
        security: BEARER_SK,
      },
    },
  )
}
