/**
 * OpenAPI documentation of each route's error responses, generated from the same code → status table
 * the error handler uses, so the document cannot drift from what the server sends.
 */
import { t } from 'elysia'
import type { DocumentDecoration } from 'elysia'
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
 * `response` map. Each status documents exactly the codes that route can send with it: besides the given
 * ones, internal_error, and payload_too_large, because every request's announced body is held to 8 MB
 * before it is routed (foundation.ts onRequest), whatever the route (a route that lists no 413 still sent
 * one, and /openapi.json said it could not).
 */
export function errorSchemas(...codes: ErrorCode[]): Record<number, typeof ErrorEnvelope> {
  return schemasOf([...codes, 'payload_too_large'])
}

/**
 * For the signed URLs of the embedded store (/v1/uploads/…) only: foundation.ts exempts them from the
 * 8 MB check (an upload streams up to 15 MB of its own, a download reads no body), so they list 413 only
 * where they send it themselves.
 */
export function signedUrlErrorSchemas(...codes: ErrorCode[]): Record<number, typeof ErrorEnvelope> {
  return schemasOf(codes)
}

/**
 * OpenAPI response objects for a route that answers 204 with no body: the openapi plugin replaces
 * `detail.responses` with the `response` map and cannot write a response without content from it, so
 * such a route documents its success and `errors` (from errorSchemas) in `detail.responses`. Nothing is
 * lost: error envelopes are built by the error handler, never validated against these schemas.
 */
export function noContentResponses(description: string, errors: Record<number, typeof ErrorEnvelope>): Responses {
  const out: Responses = { 204: { description } }
  for (const [status, schema] of Object.entries(errors)) {
    out[status] = { description: schema.description ?? `Response for status ${status}`, content: { 'application/json': { schema: schema as MediaSchema } } }
  }
  return out
}

/** The OpenAPI types of a route's `detail`, as Elysia declares them (openapi-types is not ours to import). */
type Responses = NonNullable<DocumentDecoration['responses']>
type MediaSchema = NonNullable<NonNullable<Extract<Responses[string], { content?: unknown }>['content']>[string]['schema']>

function schemasOf(codes: ErrorCode[]): Record<number, typeof ErrorEnvelope> {
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
