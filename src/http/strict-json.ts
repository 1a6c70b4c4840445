/**
 * The one JSON body reader for every route. It runs before any validation, so no input can make the
 * server slow, fat or crash while parsing:
 * - a body with a Content-Length is read in one call once the length is known to be within the limit
 *   (HTTP framing caps it at that length); a chunked body is counted as it arrives (bytes received, not
 *   re-serialised), and reading stops at the limit with 413;
 * - nesting deeper than MAX_JSON_DEPTH is refused with 400 before JSON.parse ever sees the text (deep
 *   arrays blow the parser's stack, and Elysia's validator error used to pretty-print the whole body);
 * - so is a body of more than MAX_JSON_VALUES values (JSON.parse of 8 MB of tiny members held the event
 *   loop for half a second);
 * - anything that is not `application/json` is refused with 400, and so is a compressed body (Content-Encoding);
 * - a NUL (U+0000) in any string or key is refused with 400 (core/nul.ts: PostgreSQL cannot store it);
 * - so is a number no double holds (`1e309`: JSON.parse reads Infinity, stored back as null; core/finite-numbers.ts);
 * - an unpaired surrogate (`\ud800`) in any string or key becomes U+FFFD (core/well-formed.ts);
 * - with a ticket, the bytes held while the body arrives count against the body budget (body-budget.ts).
 */
import { ApiError } from '../core/errors'
import { lentTicket, UNCOUNTED_BODY_BYTES, type BodyTicket } from './body-budget'
import { jsonTextMayHoldNul, nulPath, NUL_MESSAGE } from '../core/nul'
import { jsonTextMayHoldSurrogate, wellFormed } from '../core/well-formed'
import { jsonTextMayHoldHugeNumber, nonFinitePath } from '../core/finite-numbers'

/** Deepest nesting of arrays/objects a body may have. Real payloads stay under ~6. */
export const MAX_JSON_DEPTH = 64

/**
 * Most values a body may hold, counted as the commas between them (outside strings). The largest real
 * payload, a report at every limit (500 console entries of 3 members, 4 KB of metadata and of component
 * meta written as `[0,0,…]`), has under 6,000. Found by an attack on the API: 8 MB of `{"k0":0,"k1":0,…}`
 * (600,000 members) cost JSON.parse half a second on the event loop, so one client with the public key
 * and its 60 submissions a minute stalled every other request (/healthz p50 1.1 s); a body of 20,000
 * values parses in about 15 ms.
 */
export const MAX_JSON_VALUES = 20_000

const COMMA = 0x2c
const OPEN_BRACE = 0x7b
const OPEN_BRACKET = 0x5b
const CLOSE_BRACE = 0x7d
const CLOSE_BRACKET = 0x5d
const QUOTE = 0x22
const BACKSLASH = 0x5c

function invalid(message: string, path = '/'): ApiError {
  return new ApiError('invalid_body', { issues: [{ path, message }] })
}

/**
 * Calls `visit` with every byte of a JSON text outside its strings, in order, until it answers true (then
 * true). Scans bytes: in UTF-8 no byte of a multi-byte character is an ASCII bracket, comma or quote, so
 * this never misreads text in strings.
 */
function someStructuralByte(bytes: Uint8Array, visit: (b: number) => boolean): boolean {
  let inString = false
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]
    if (inString) {
      if (b === BACKSLASH) i++
      else if (b === QUOTE) inString = false
    } else if (b === QUOTE) inString = true
    else if (visit(b)) return true
  }
  return false
}

/** Whether the nesting of a JSON text goes deeper than `max`, stopping as soon as it does. */
export function jsonDepthExceeds(bytes: Uint8Array, max = MAX_JSON_DEPTH): boolean {
  // Nesting deeper than `max` needs more than `max` opening brackets: counting them with the native
  // indexOf settles every usual body (~0.2 µs for a widget report, where the byte loop below takes ~1.5).
  if (openingBracketsAtMost(bytes, max)) return false
  let depth = 0
  return someStructuralByte(bytes, (b) => {
    if (b === OPEN_BRACE || b === OPEN_BRACKET) return ++depth > max
    if (b === CLOSE_BRACE || b === CLOSE_BRACKET) depth--
    return false
  })
}

/**
 * Whether a JSON text holds more than `max` commas between values, stopping as soon as it does. A text
 * with at most `max` commas in all (strings too: every usual body, and 8 MB of one string) is settled by
 * the native indexOf.
 */
export function jsonValuesExceed(bytes: Uint8Array, max = MAX_JSON_VALUES): boolean {
  let commas = 0
  for (let i = bytes.indexOf(COMMA); i !== -1; i = bytes.indexOf(COMMA, i + 1)) if (++commas > max) break
  if (commas <= max) return false
  let n = 0
  return someStructuralByte(bytes, (b) => b === COMMA && ++n > max)
}

/** Are there at most `max` `{` and `[` bytes in all (inside strings too)? */
function openingBracketsAtMost(bytes: Uint8Array, max: number): boolean {
  let n = 0
  for (let i = bytes.indexOf(OPEN_BRACE); i !== -1; i = bytes.indexOf(OPEN_BRACE, i + 1)) if (++n > max) return false
  for (let i = bytes.indexOf(OPEN_BRACKET); i !== -1; i = bytes.indexOf(OPEN_BRACKET, i + 1)) if (++n > max) return false
  return true
}

/** A Content-Length header as a byte count; undefined when absent or not plain digits. */
function declaredLength(request: Request): number | undefined {
  const value = request.headers.get('content-length')
  if (value === null || !/^\d{1,16}$/.test(value)) return undefined
  return Number(value)
}

/**
 * Reads a request body; more than `limit` bytes is 413. A declared Content-Length is judged before a
 * byte is read, then the body is read whole: HTTP framing ends it at that length, and one native read
 * costs a fraction of a stream reader (measured: the stream's promise per chunk was ~10% of a
 * submission's CPU). A chunked body (no length) is counted as it arrives and reading stops at the limit.
 */
export async function readBodyBounded(request: Request, limit: number, ticket?: BodyTicket): Promise<Uint8Array> {
  if (ticket) return readWithin(request, limit, ticket)
  // A route reading its raw body: the bytes count while they arrive; the caller owns them once read.
  const lent = lentTicket(request)
  if (!lent) return readWithin(request, limit, undefined)
  try {
    return await readWithin(request, limit, lent)
  } finally {
    lent.release()
  }
}

async function readWithin(request: Request, limit: number, ticket: BodyTicket | undefined): Promise<Uint8Array> {
  const length = declaredLength(request)
  if (length !== undefined) {
    if (length > limit) throw new ApiError('payload_too_large', { limitBytes: limit })
    // Taken before a byte is read: a refusal answers at once and Bun drops the body unread.
    if (length > UNCOUNTED_BODY_BYTES) ticket?.take(length)
    const bytes = await request.bytes()
    // Framing guarantees this; the check keeps the limit true whatever the runtime does.
    if (bytes.byteLength > limit) throw new ApiError('payload_too_large', { limitBytes: limit })
    return bytes
  }
  return request.body ? readChunked(request.body, limit, ticket) : new Uint8Array(0)
}

async function readChunked(body: ReadableStream<Uint8Array>, limit: number, ticket?: BodyTicket): Promise<Uint8Array> {
  const chunks: Uint8Array[] = []
  let total = 0
  const reader = body.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > limit) {
      reader.cancel().catch(() => {})
      throw new ApiError('payload_too_large', { limitBytes: limit })
    }
    try {
      ticket?.take(value.byteLength)
    } catch (e) {
      reader.cancel().catch(() => {})
      throw e
    }
    chunks.push(value)
  }
  if (chunks.length === 1) return chunks[0]
  const out = new Uint8Array(total)
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.byteLength
  }
  return out
}

/** `application/json`, optionally with parameters (`; charset=utf-8`). */
export function isJsonContentType(value: string | null): boolean {
  if (!value) return false
  // What every client sends, answered without building strings.
  if (value === 'application/json' || value === 'application/json; charset=utf-8') return true
  const semi = value.indexOf(';')
  return (semi === -1 ? value : value.slice(0, semi)).trim().toLowerCase() === 'application/json'
}

/** One fatal decoder for every body: decode() without `stream` keeps no state between calls. */
const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * Reads and parses a JSON body with every guard above. An empty body is `undefined` (routes without a
 * body, e.g. unmerge); a route that needs one then fails its schema with invalid_body.
 */
export async function parseStrictJson(request: Request, limit: number, ticket?: BodyTicket): Promise<unknown> {
  try {
    return await parseStrictJsonBody(request, limit, ticket)
  } finally {
    // The raw bytes are garbage once parsed (or refused): their share of the budget goes back.
    ticket?.release()
  }
}

async function parseStrictJsonBody(request: Request, limit: number, ticket: BodyTicket | undefined): Promise<unknown> {
  const bytes = await readBodyBounded(request, limit, ticket)
  if (bytes.byteLength === 0) return undefined
  if (!isJsonContentType(request.headers.get('content-type'))) {
    throw invalid('Content-Type must be application/json')
  }
  // A compressed body is not decoded (a gzip bomb stays bytes): say so, rather than "malformed JSON".
  const encoding = request.headers.get('content-encoding')
  if (encoding !== null && encoding.trim().toLowerCase() !== 'identity') throw invalid(`Content-Encoding ${encoding.slice(0, 40)} is not accepted: send the body uncompressed`, 'header:Content-Encoding')
  if (jsonDepthExceeds(bytes)) throw invalid(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`)
  if (jsonValuesExceed(bytes)) throw invalid(`JSON holding more than ${MAX_JSON_VALUES} values`)
  let text: string
  let value: unknown
  try {
    text = utf8.decode(bytes)
    value = JSON.parse(text)
  } catch {
    throw invalid('malformed JSON (or not UTF-8)')
  }
  // NUL is refused in every string and key, on every store alike (core/nul.ts); the text check keeps the
  // usual body from being walked.
  const nul = jsonTextMayHoldNul(text) ? nulPath(value) : undefined
  if (nul) throw invalid(`${nul === '/' ? 'the body' : nul.slice(1)} ${NUL_MESSAGE}`, nul)
  const huge = jsonTextMayHoldHugeNumber(text) ? nonFinitePath(value) : undefined
  if (huge) throw invalid('a number too large for a double (at most about 1.8e308)', huge)
  // Unpaired surrogates become U+FFFD in every string and key (core/well-formed.ts).
  return jsonTextMayHoldSurrogate(text) ? wellFormed(value) : value
}
