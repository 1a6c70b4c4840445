/**
 * The one JSON body reader for every route. It runs before any validation, so no input can make the
 * server slow, fat or crash while parsing:
 * - bytes are counted as they arrive (a chunked body is measured in bytes received, not re-serialised),
 *   and reading stops at the limit with 413;
 * - nesting deeper than MAX_JSON_DEPTH is refused with 400 before JSON.parse ever sees the text (deep
 *   arrays blow the parser's stack, and Elysia's validator error used to pretty-print the whole body);
 * - anything that is not `application/json` is refused with 400.
 */
import { ApiError } from '../core/errors'

/** Deepest nesting of arrays/objects a body may have. Real payloads stay under ~6. */
export const MAX_JSON_DEPTH = 64

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
 * The deepest nesting in a JSON text, stopping as soon as it passes `max`. Scans bytes: in UTF-8 no
 * byte of a multi-byte character is an ASCII bracket or quote, so this never misreads text in strings.
 */
export function jsonDepthExceeds(bytes: Uint8Array, max = MAX_JSON_DEPTH): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]
    if (inString) {
      if (b === BACKSLASH) i++
      else if (b === QUOTE) inString = false
    } else if (b === QUOTE) inString = true
    else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
      if (++depth > max) return true
    } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) depth--
  }
  return false
}

/** Reads a request body, counting bytes as they arrive; more than `limit` is 413 (reading stops). */
export async function readBodyBounded(request: Request, limit: number): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array(0)
  const chunks: Uint8Array[] = []
  let total = 0
  const reader = request.body.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > limit) {
      reader.cancel().catch(() => {})
      throw new ApiError('payload_too_large', { limitBytes: limit })
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
  return value.split(';')[0].trim().toLowerCase() === 'application/json'
}

/**
 * Reads and parses a JSON body with every guard above. An empty body is `undefined` (routes without a
 * body, e.g. unmerge); a route that needs one then fails its schema with invalid_body.
 */
export async function parseStrictJson(request: Request, limit: number): Promise<unknown> {
  const bytes = await readBodyBounded(request, limit)
  if (bytes.byteLength === 0) return undefined
  if (!isJsonContentType(request.headers.get('content-type'))) {
    throw invalid('Content-Type must be application/json')
  }
  if (jsonDepthExceeds(bytes)) throw invalid(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`)
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch {
    throw invalid('malformed JSON (or not UTF-8)')
  }
}
