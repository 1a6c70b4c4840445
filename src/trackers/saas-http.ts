/**
 * The HTTP call the Jira Cloud and Linear adapters share: one request through the bounded outbound client
 * (src/core/outbound-http.ts: bounded in time and size, no redirects, pinned to the checked addresses), every
 * failure a TrackerError whose message has the credentials scrubbed out. The vendors' status codes are
 * mapped to the seam's failures here once (401/403 unauthorized, 404 not_found, 429 rate_limited with the
 * Retry-After, 5xx and network errors unreachable, other 4xx rejected); Linear's GraphQL errors, which
 * arrive with 200 or 400, are mapped by src/trackers/linear.ts on top.
 */
import { retryAfterMs, scrub } from '../core/outbound'
import type { CheckedAddress } from '../core/address-guard'
import { ANSWER_MAX_BYTES, OutboundError, requestBounded, type OutboundAnswer } from '../core/outbound-http'
import { OUTBOUND_TIMEOUT_MS_DEFAULT, saasTrackerDeadlineMs } from '../core/outbound-deadline'
import { OutOfJobTime, type JobBudget } from '../core/job-budget'
import { TrackerError, type TrackerFailure } from './adapter'
import { clip } from '../core/clip'

/** A tracker's answer is read up to this many bytes (the shared outbound bound); a longer one is refused. */
export const RESPONSE_MAX_BYTES = ANSWER_MAX_BYTES
/** What of a vendor's error text goes into our message (after scrubbing). */
const DETAIL_MAX = 200

export interface Answer {
  status: number
  headers: Headers
  text: string
  /** The parsed JSON body, or undefined when the body is empty or not JSON. */
  json: unknown
}

export interface Call {
  /** For messages: "Jira", "Linear". */
  vendor: string
  /** For messages: what fixloop was doing ("creating the issue"). */
  doing: string
  url: string
  method: 'GET' | 'POST' | 'PUT'
  headers: Record<string, string>
  body?: unknown
  /** Every credential form that must never appear in a message (the token, a Basic header value). */
  secrets: string[]
  signal?: AbortSignal
  /** The addresses the tracker address guard checked: the call connects to exactly these. */
  addresses?: CheckedAddress[]
  /** FIXLOOP_OUTBOUND_TIMEOUT in ms (the target's; unset: 15 s): the call gets a third more, 20 s by default. */
  timeoutMs?: number
  /** The job's time (the target's): the call is not started when its deadline would end past it (OutOfJobTime). */
  budget?: JobBudget
}

export function failureOfStatus(status: number): TrackerFailure {
  if (status === 401 || status === 403) return 'unauthorized'
  if (status === 404) return 'not_found'
  if (status === 429) return 'rate_limited'
  if (status >= 500) return 'unreachable'
  return 'rejected'
}

/** One printable line of at most DETAIL_MAX characters, credentials scrubbed. */
export function detail(text: string, secrets: string[]): string {
  const line = scrub(text, secrets).replace(/[\x00-\x1f\x7f]+/g, ' ').trim()
  return line.length > DETAIL_MAX ? `${clip(line, DETAIL_MAX - 1)}…` : line
}

/**
 * Sends the call and returns the answer of any status the caller wants to read itself (2xx, and 400 for
 * GraphQL); every other outcome is thrown as a TrackerError. Redirects are not followed: an API that
 * redirects is misconfigured, and following would carry the credentials to another host.
 */
export async function send(c: Call, passStatuses: (status: number) => boolean = (s) => s >= 200 && s < 300): Promise<Answer> {
  const timeoutMs = saasTrackerDeadlineMs(c.timeoutMs ?? OUTBOUND_TIMEOUT_MS_DEFAULT)
  if (c.budget && !c.budget.fits(timeoutMs)) throw new OutOfJobTime(c.doing)
  let res: OutboundAnswer
  try {
    res = await requestBounded({
      url: c.url,
      method: c.method,
      headers: { accept: 'application/json', 'user-agent': 'fixloop', ...(c.body !== undefined ? { 'content-type': 'application/json' } : {}), ...c.headers },
      body: c.body !== undefined ? JSON.stringify(c.body) : undefined,
      timeoutMs,
      signal: c.signal,
      addresses: c.addresses,
    })
  } catch (e) {
    if (!(e instanceof OutboundError)) throw e
    if (e.failure === 'too_large') throw new TrackerError('rejected', `${c.vendor} API ${e.message} while ${c.doing}`, e.status)
    throw new TrackerError('unreachable', detail(`${c.vendor} API unreachable while ${c.doing}: ${e.message}`, c.secrets), e.status)
  }
  const text = res.text
  let json: unknown
  try {
    json = text ? JSON.parse(text) : undefined
  } catch {
    json = undefined
  }
  if (passStatuses(res.status)) return { status: res.status, headers: res.headers, text, json }
  const failure = res.status >= 300 && res.status < 400 ? 'rejected' : failureOfStatus(res.status)
  const wait = failure === 'rate_limited' ? (retryAfterMs(res.headers.get('retry-after')) ?? 60_000) : null
  throw new TrackerError(failure, detail(`${c.vendor} API answered ${res.status} while ${c.doing}: ${text}`, c.secrets), res.status, wait)
}

export { constantTimeEqual, deliveryIdOr as deliveryIdOf, hmacSha256Hex as hmacHex } from '../core/outbound'

// ---------------------------------------------------------------- reading hostile JSON

export type Obj = Record<string, unknown>
export const obj = (v: unknown): Obj | null => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : null)
/** A non-empty string of at most `max` characters, else null. */
export const str = (v: unknown, max = 256): string | null => (typeof v === 'string' && v.length > 0 && v.length <= max ? v : null)
