/**
 * A session replay's bytes, read as hostile input (docs/security.md "Session replay"): at most 15 MB as
 * stored, gzip or plain JSON, at most 100 MB once decompressed (a gzip bomb stops there: the inflater
 * refuses to produce more, nothing larger is ever held), at most MAX_DEPTH levels of nesting (checked on
 * the text before parsing, so no parser or walker recursion is ever deep), and rrweb's shape
 * (`{"v":1,"events":[...]}` or a bare array of events, each an object with a numeric type and timestamp).
 * Anything else is `unreadable`, never an exception.
 */
import { gunzipSync, gzipSync } from 'node:zlib'
import { scrubReplayEvents, type ReplayMasking } from '../../sanitize/replay'
import type { RedactionCounts } from '../../sanitize/sanitize'

/** The stored (compressed) size a replay may have: the upload limit. */
export const REPLAY_MAX_STORED_BYTES = 15 * 1024 * 1024
/** The size a replay may have decompressed. */
export const REPLAY_MAX_JSON_BYTES = 100 * 1024 * 1024
/** JSON nesting a replay may have: a DOM hundreds of elements deep still fits (two levels per element). */
export const REPLAY_MAX_DEPTH = 1000

export type ReplayDecode = { kind: 'events'; events: unknown[] } | { kind: 'unreadable'; reason: string }

const GZIP_MAGIC = [0x1f, 0x8b]

/** The deepest nesting of `json`, counting brackets outside strings; stops as soon as `limit` is passed. */
export function nestingExceeds(json: string, limit: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i)
    if (inString) {
      if (c === 92) i++ // backslash: skip the escaped character
      else if (c === 34) inString = false
      continue
    }
    if (c === 34) inString = true
    else if (c === 123 || c === 91) {
      if (++depth > limit) return true
    } else if (c === 125 || c === 93) depth--
  }
  return false
}

/** Decodes stored replay bytes (gzip recognised by its magic, whatever the declared type). */
export function decodeReplay(bytes: Uint8Array): ReplayDecode {
  if (bytes.byteLength > REPLAY_MAX_STORED_BYTES) return { kind: 'unreadable', reason: 'larger than 15 MB' }
  let raw: Uint8Array = bytes
  if (bytes[0] === GZIP_MAGIC[0] && bytes[1] === GZIP_MAGIC[1]) {
    try {
      raw = gunzipSync(bytes, { maxOutputLength: REPLAY_MAX_JSON_BYTES })
    } catch (e) {
      const code = (e as { code?: string }).code
      return { kind: 'unreadable', reason: code === 'ERR_BUFFER_TOO_LARGE' ? 'more than 100 MB decompressed' : 'not valid gzip' }
    }
  }
  let json: string
  try {
    json = new TextDecoder('utf-8', { fatal: true }).decode(raw)
  } catch {
    return { kind: 'unreadable', reason: 'not UTF-8' }
  }
  if (nestingExceeds(json, REPLAY_MAX_DEPTH)) return { kind: 'unreadable', reason: `nested deeper than ${REPLAY_MAX_DEPTH} levels` }
  let parsed: unknown
  try {
    parsed = JSON.parse(json)
  } catch {
    return { kind: 'unreadable', reason: 'not JSON' }
  }
  const events = Array.isArray(parsed) ? parsed : parsed !== null && typeof parsed === 'object' && (parsed as { v?: unknown }).v === 1 ? (parsed as { events?: unknown }).events : undefined
  if (!Array.isArray(events)) return { kind: 'unreadable', reason: 'not {"v":1,"events":[...]} nor an array of events' }
  for (const e of events) {
    if (e === null || typeof e !== 'object' || Array.isArray(e) || typeof (e as { type?: unknown }).type !== 'number' || typeof (e as { timestamp?: unknown }).timestamp !== 'number') {
      return { kind: 'unreadable', reason: 'an event is not an rrweb event ({type, data, timestamp})' }
    }
  }
  return { kind: 'events', events }
}

export type ReplayScrubResult = { kind: 'scrubbed'; gzip: Uint8Array; events: number; redactions: RedactionCounts } | { kind: 'unreadable'; reason: string }

/** Decodes, scrubs and re-encodes a replay as the gzip of `{"v":1,"events":[...]}`. */
export function scrubReplayBytes(bytes: Uint8Array, masking: ReplayMasking): ReplayScrubResult {
  const decoded = decodeReplay(bytes)
  if (decoded.kind === 'unreadable') return decoded
  try {
    const { events, redactions } = scrubReplayEvents(decoded.events, masking)
    return { kind: 'scrubbed', gzip: gzipSync(JSON.stringify({ v: 1, events })), events: events.length, redactions }
  } catch {
    // A scrubber bug must not leave the raw recording readable: it is dropped instead.
    return { kind: 'unreadable', reason: 'could not be scrubbed' }
  }
}
