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

type ResponseDoc = { description: string; content: { 'application/json': { schema: { type: 'object'; [k: string]: unknown } } } }

/** `detail.responses` entries for the given error codes, grouped by HTTP status. */
export function errorResponses(...codes: ErrorCode[]): Record<string, ResponseDoc> {
  const byStatus = new Map<number, ErrorCode[]>()
  for (const code of [...codes, 'internal_error' as const]) {
    const status = ERROR_STATUS[code]
    byStatus.set(status, [...new Set([...(byStatus.get(status) ?? []), code])])
  }
  const out: Record<string, ResponseDoc> = {}
  for (const [status, list] of byStatus) {
    const inner = ErrorEnvelope.properties.error
    out[String(status)] = {
      description: `Error envelope; error.code is one of: ${list.join(', ')}`,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            required: ['error'],
            additionalProperties: false,
            properties: { error: { ...inner, properties: { ...inner.properties, code: { type: 'string', enum: list } } } },
          },
        },
      },
    }
  }
  return out
}

/** Errors every `sk_` route can answer with. */
export const ORG_AUTH_ERRORS: ErrorCode[] = ['missing_authorization', 'invalid_authorization', 'rate_limited']
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
