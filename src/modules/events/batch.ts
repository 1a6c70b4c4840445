/**
 * The bytes an event stream sends, built once and shared. A message is encoded once per event (every
 * stream that sends it reuses the bytes), and a batch of events the hub read for an Org's streams is
 * joined into one chunk once per filter: a caught-up stream then costs one enqueue per batch, not one
 * query and one write per event.
 */
import { eventBody, type EventRow } from './repo'

export interface StreamFilter {
  types?: readonly string[]
  appId?: string
}

const encoder = new TextEncoder()
const encoded = new WeakMap<EventRow, Uint8Array>()

/** One event as an SSE message (`id:` = seq). */
export function messageOf(row: EventRow): Uint8Array {
  let bytes = encoded.get(row)
  if (!bytes) encoded.set(row, (bytes = encoder.encode(`id: ${row.seq}\nevent: ${row.type}\ndata: ${eventBody(row)}\n\n`)))
  return bytes
}

export function wanted(filter: StreamFilter, row: EventRow): boolean {
  return (!filter.types || filter.types.includes(row.type)) && (!filter.appId || row.app_id === filter.appId)
}

/** The messages of `rows` that pass the filter, as one chunk (empty when none does). */
export function joinMessages(rows: readonly EventRow[], filter: StreamFilter): Uint8Array {
  const parts: Uint8Array[] = []
  let size = 0
  for (const row of rows) {
    if (!wanted(filter, row)) continue
    const m = messageOf(row)
    parts.push(m)
    size += m.byteLength
  }
  if (parts.length === 1) return parts[0]
  const out = new Uint8Array(size)
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.byteLength
  }
  return out
}

const filterKey = (f: StreamFilter) => JSON.stringify([f.types ?? null, f.appId ?? null])

/** Consecutive events of one Org (seq `first`..`last`, no gap), read once for every caught-up stream. */
export class EventBatch {
  readonly first: number
  readonly last: number
  private readonly joined = new Map<string, Uint8Array>()

  constructor(
    readonly orgId: string,
    readonly rows: readonly EventRow[],
  ) {
    this.first = rows[0].seq
    this.last = rows[rows.length - 1].seq
  }

  /** The chunk for a stream whose cursor is `after` (it has every event up to it). */
  bytesAfter(after: number, filter: StreamFilter): Uint8Array {
    // The usual case, shared: the stream's cursor is where this batch starts.
    if (after < this.first) {
      const key = filterKey(filter)
      let bytes = this.joined.get(key)
      if (!bytes) this.joined.set(key, (bytes = joinMessages(this.rows, filter)))
      return bytes
    }
    // The stream already read part of it on its own (it caught up in between): only the rest.
    return joinMessages(
      this.rows.filter((r) => r.seq > after),
      filter,
    )
  }
}
