/**
 * One REST call to a tracker, as every REST adapter makes it, through the bounded outbound client
 * (src/core/outbound-http.ts: one deadline for the whole exchange, the target's FIXLOOP_OUTBOUND_TIMEOUT,
 * 15 s by default; at most 2 MiB read; no redirects — a redirect could carry the token elsewhere —;
 * connected to the guard's checked addresses), the answer's JSON, and every failure a TrackerError whose
 * message names the tracker's answer and never the token: unreachable (network, timeout, 5xx), unauthorized
 * (401, a 403 that is no rate limit), rate_limited (429, or 403 with Retry-After or an exhausted
 * X-RateLimit-Remaining: GitHub's primary and secondary limits), not_found (404, 410: deleted), rejected
 * (another 4xx: a field the tracker refused).
 */
import { retryAfterMs, scrub } from '../core/outbound'
import { OutboundError, requestBounded, type OutboundAnswer } from '../core/outbound-http'
import { OutOfJobTime } from '../core/job-budget'
import { callDeadlineMs, TrackerError, type TrackerKind, type TrackerTarget } from './adapter'

/** What of an answer's text an error message quotes at most. */
const QUOTE_MAX = 300

export interface TrackerCall {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH'
  url: string
  headers: Record<string, string>
  body?: unknown
  /** What the call does, for messages: "creating the issue". */
  what: string
}

/** The tracker's own words for a failure: message / error / errors fields, else the text's start. */
function quoteOf(text: string): string {
  try {
    const b = JSON.parse(text) as Record<string, unknown>
    const m = b.message ?? b.error ?? b.errors ?? b.errorMessages
    if (m !== undefined) return (typeof m === 'string' ? m : JSON.stringify(m)).slice(0, QUOTE_MAX)
  } catch {
    // not JSON
  }
  return text.slice(0, QUOTE_MAX).replace(/\s+/g, ' ')
}

/** GitHub's X-RateLimit-Reset (epoch seconds) as a wait, bounded to an hour. */
function resetWaitMs(reset: string | null, now = Date.now()): number | null {
  if (!reset || !/^\d{1,12}$/.test(reset)) return null
  return Math.min(Math.max(Number(reset) * 1000 - now, 1000), 3600_000)
}

/**
 * Sends the call to `t`'s tracker (its token for scrubbing, its checked addresses for the connection);
 * returns the answer's JSON ({} for an empty 2xx) or throws a TrackerError. Not started when its deadline
 * would end past the job's time (`t.budget`): OutOfJobTime.
 */
export async function callTracker(t: Pick<TrackerTarget, 'kind' | 'token' | 'addresses' | 'timeoutMs' | 'budget'>, call: TrackerCall, signal?: AbortSignal): Promise<unknown> {
  const { kind, token } = t
  const timeoutMs = callDeadlineMs(t)
  if (t.budget && !t.budget.fits(timeoutMs)) throw new OutOfJobTime(call.what)
  let res: OutboundAnswer
  try {
    res = await requestBounded({
      url: call.url,
      method: call.method,
      headers: { 'user-agent': 'fixloop', ...(call.body === undefined ? {} : { 'content-type': 'application/json' }), ...call.headers },
      body: call.body === undefined ? undefined : JSON.stringify(call.body),
      timeoutMs,
      signal,
      addresses: t.addresses,
    })
  } catch (e) {
    if (!(e instanceof OutboundError)) throw e
    // Too large is the tracker's fault and retried like a refused field; no answer at all is unreachable.
    if (e.failure === 'too_large') throw new TrackerError('rejected', `${kind} ${e.message} when ${call.what}`, e.status)
    throw new TrackerError('unreachable', scrub(`${kind} unreachable when ${call.what}: ${e.message}`, [token]), e.status)
  }
  const text = res.text
  // A redirect is never followed (it could carry the token elsewhere): no answer from the API itself.
  if (res.status >= 300 && res.status < 400) throw new TrackerError('unreachable', `${kind} answered ${res.status} (a redirect, not followed: point apiUrl at the API itself) when ${call.what}`, res.status)
  if (res.status >= 200 && res.status < 300) {
    if (text.trim() === '') return {}
    try {
      return JSON.parse(text)
    } catch {
      throw new TrackerError('unreachable', `${kind} answered ${res.status} without JSON when ${call.what}`, res.status)
    }
  }
  const message = scrub(`${kind} answered ${res.status} when ${call.what}: ${quoteOf(text)}`, [token])
  const wait = retryAfterMs(res.headers.get('retry-after'))
  const exhausted = res.headers.get('x-ratelimit-remaining') === '0'
  if (res.status === 429 || (res.status === 403 && (wait !== null || exhausted))) {
    throw new TrackerError('rate_limited', message, res.status, wait ?? resetWaitMs(res.headers.get('x-ratelimit-reset')) ?? 60_000)
  }
  if (res.status === 401 || res.status === 403) throw new TrackerError('unauthorized', message, res.status)
  if (res.status === 404 || res.status === 410) throw new TrackerError('not_found', message, res.status)
  if (res.status >= 500) throw new TrackerError('unreachable', message, res.status, wait)
  throw new TrackerError('rejected', message, res.status)
}

type Obj = Record<string, unknown>
/** Reading hostile JSON: an object or null, a bounded non-empty string or null. */
export const obj = (v: unknown): Obj | null => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : null)
export const str = (v: unknown, max = 2048): string | null => (typeof v === 'string' && v.length > 0 && v.length <= max ? v : null)
/** A positive integer id (issue number, iid) as text, or null. */
export const intId = (v: unknown): string | null => (typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? String(v) : typeof v === 'string' && /^[1-9]\d{0,15}$/.test(v) ? v : null)

/** An answer without a field the adapter needs. */
export const malformed = (kind: TrackerKind, what: string) => new TrackerError('rejected', `${kind} answered without ${what}`)
