/**
 * OpenAPI documentation of each route's error responses, generated from the same code → status table
 * the error handler uses, so the document cannot drift from what the server sends.
 */
import { t } from 'elysia'
import { ERROR_STATUS, type ErrorCode } from '../core/errors'

export const ErrorEnvelope = t.Object(
  {
    error: t.Object(
      {
        code: t.String({ description: 'Stable machine-readable code; match on this, not on message' }),
        message: t.String(),
        details: t.Optional(t.Unknown()),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
)

/**
 * Response schemas for the given error codes, keyed by HTTP status, to spread into a route's
 * `response` map. Each status documents exactly the codes that route can send with it.
 */
export function errorSchemas(...codes: ErrorCode[]): Record<number, typeof ErrorEnvelope> {
  const byStatus = new Map<number, ErrorCode[]>()
  for (const code of [...codes, 'internal_error' as const]) {
    const status = ERROR_STATUS[code]
    byStatus.set(status, [...new Set([...(byStatus.get(status) ?? []), code])])
  }
  const out: Record<number, typeof ErrorEnvelope> = {}
  for (const [status, list] of byStatus) {
    out[status] = t.Object(
      {
        error: t.Object(
          {
            code: t.String({ enum: list, description: 'One of: ' + list.join(', ') }),
            message: t.String(),
            details: t.Optional(t.Unknown()),
          },
          { additionalProperties: false },
        ),
      },
      { additionalProperties: false, description: `Error envelope; error.code is one of: ${list.join(', ')}` },
    ) as typeof ErrorEnvelope
  }
  return out
}

/** Errors every `sk_` route can answer with. */
export const ORG_AUTH_ERRORS: ErrorCode[] = ['missing_authorization', 'invalid_authorization', 'rate_limited']
/** …and those a member's dashboard session is refused (403 forbidden): see PERMISSIONS in src/core/access.ts. */
export const ORG_OWNER_ERRORS: ErrorCode[] = [...ORG_AUTH_ERRORS, 'forbidden']
/** Errors every widget route can answer with. */
export const WIDGET_AUTH_ERRORS: ErrorCode[] = [
  'missing_authorization',
  'invalid_authorization',
  'unknown_app',
  'invalid_user_token',
  'origin_not_allowed',
  'public_disabled',
  'rate_limited',
]

export const BEARER_SK = [{ orgKey: [] }]
export const BEARER_PUB = [{ publicKey: [] }]
