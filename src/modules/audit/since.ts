/**
 * The audit export's `since` (GET /v1/audit, `fixloop audit export --since`): apart from the routes, so the
 * CLI command does not load Elysia and the HTTP layer with them.
 */
import { parseIsoTime } from '../../core/iso-time'
import { invalidQuery } from '../../core/errors'

/**
 * An ISO 8601 instant with a date, as epoch ms; anything else is the spec's invalid_body naming `path`,
 * said to be about the query string (`since` is one): the body's default message sent callers of
 * GET /v1/audit looking for a body they never sent.
 */
export function parseSince(value: string, path: string): number {
  const ms = parseIsoTime(value)
  if (ms === undefined) throw invalidQuery([{ path, message: 'must be an ISO 8601 date or instant, e.g. 2026-01-31T00:00:00Z' }])
  return ms
}
