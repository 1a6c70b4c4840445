/**
 * The stored replay format: gzip (the browser's CompressionStream) of UTF-8 JSON
 * {"v":1,"events":[...rrweb eventWithTime...]}, with the widget's own context merged in at send time as
 * rrweb custom events (type 5): console errors and warnings ("fixloop.console"), failed or slow requests
 * ("fixloop.network") and the moment the user opened the dialog ("fixloop.report"). The capture code
 * keeps its own timestamps, so it never depends on the recorder.
 */
import type { TimedEvent } from './buffer'
import { stringify } from '../json'

// The fields of types.ts ConsoleEntry / NetworkEntry read here (this file is also tested outside a DOM build).
type ConsoleEntry = { level: string; message: string; ts: number }
type NetworkEntry = { method: string; url: string; status: number; ms: number; ts: number }

/** The server's upload limit (spec: attachments are at most 15 MB). */
export const MAX_UPLOAD_BYTES = 15 * 1024 * 1024
const CUSTOM = 5

const custom = (timestamp: number, tag: string, payload: unknown): TimedEvent => ({ type: CUSTOM, timestamp, data: { tag, payload } })

/** The widget's context as custom events, only those inside [start, end]. */
export function contextEvents(start: number, end: number, logs: ConsoleEntry[], network: NetworkEntry[], reportAt?: number): TimedEvent[] {
  const out: TimedEvent[] = []
  for (const l of logs) if ((l.level === 'error' || l.level === 'warn') && l.ts >= start && l.ts <= end) out.push(custom(l.ts, 'fixloop.console', { level: l.level, message: l.message }))
  for (const n of network) if (n.ts >= start && n.ts <= end) out.push(custom(n.ts, 'fixloop.network', { method: n.method, url: n.url, status: n.status, durationMs: n.ms }))
  if (reportAt !== undefined && reportAt >= start) out.push(custom(reportAt, 'fixloop.report', {}))
  return out.sort((a, b) => a.timestamp - b.timestamp)
}

/** Merges two timestamp-ordered lists; on a tie the recorder's event comes first. */
export function merge(recorded: TimedEvent[], extra: TimedEvent[]): TimedEvent[] {
  const out: TimedEvent[] = []
  let j = 0
  for (const e of recorded) {
    while (j < extra.length && extra[j].timestamp < e.timestamp) out.push(extra[j++])
    out.push(e)
  }
  while (j < extra.length) out.push(extra[j++])
  return out
}

export async function gzip(text: string): Promise<Blob> {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream('gzip'))
  const bytes = await new Response(stream).arrayBuffer()
  return new Blob([bytes], { type: 'application/gzip' })
}

/**
 * Packs the segments (oldest first) with the context; drops the oldest segments until the gzip fits
 * `limit`. Undefined when there is nothing or even the newest segment does not fit.
 */
export async function pack(segments: TimedEvent[][], context: (start: number) => TimedEvent[], limit = MAX_UPLOAD_BYTES): Promise<Blob | undefined> {
  for (let first = 0; first < segments.length; first++) {
    const recorded = segments.slice(first).flat()
    if (!recorded.length) continue
    const events = merge(recorded, context(recorded[0].timestamp))
    const blob = await gzip(stringify({ v: 1, events }))
    if (blob.size <= limit) return blob
  }
  return undefined
}
