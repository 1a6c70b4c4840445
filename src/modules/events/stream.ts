/**
 * One Server-Sent Events response. The stream keeps only a cursor (the last seq sent) and reads the
 * outbox by seq whenever the shared hub says its Org has news and the client has room: a slow reader
 * fills the stream's small queue, then reading stops until it drains, so memory per connection is
 * bounded by the queue size plus one page. `id:` is the seq, so Last-Event-ID resumes exactly, even
 * across a restart (seq lives in the database, not in memory).
 */
import type { EventHub } from './hub'
import { eventBody, type EventRow, type EventsRepo } from './repo'

export interface StreamFilter {
  after: number
  types?: readonly string[]
  appId?: string
}

/** Bytes queued per connection before reading pauses for a slow client. */
const QUEUE_BYTES = 64 * 1024
const PAGE = 100
const encoder = new TextEncoder()

/** One encoding per event, shared by every stream that sends it. */
const encoded = new WeakMap<EventRow, Uint8Array>()
function messageOf(row: EventRow): Uint8Array {
  let bytes = encoded.get(row)
  if (!bytes) encoded.set(row, (bytes = encoder.encode(`id: ${row.seq}\nevent: ${row.type}\ndata: ${eventBody(row)}\n\n`)))
  return bytes
}

export function openEventStream(repo: EventsRepo, hub: EventHub, orgId: string, filter: StreamFilter): Response {
  let cursor = filter.after
  let pumping = false
  let again = false
  let closed = false
  /** Events may be waiting past the cursor: set when reading stopped for a full queue or news arrived. */
  let behind = true
  const cleanups: (() => void)[] = []
  let pumpNow: () => Promise<void> = async () => {}

  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const close = () => {
          if (closed) return
          closed = true
          for (const c of cleanups) c()
          try {
            controller.close()
          } catch {
            // Already closed by the client.
          }
        }
        const pump = async () => {
          if (pumping) return void (again = true)
          pumping = true
          try {
            do {
              again = false
              while (!closed) {
                // A full queue: stop reading; pull() resumes once the client has drained it.
                if ((controller.desiredSize ?? 0) <= 0) {
                  behind = true
                  break
                }
                const page = repo.page(orgId, { after: cursor, limit: PAGE, types: filter.types, appId: filter.appId })
                // The cursor moves first: enqueue can call pull() (and so pump) synchronously.
                cursor = page.nextAfter
                for (const row of page.rows) controller.enqueue(messageOf(row))
                if (page.rows.length < PAGE) {
                  behind = false
                  break
                }
                // A long backlog: let other requests run between pages.
                await new Promise((r) => setImmediate(r))
              }
            } while (again && !closed)
          } catch {
            close()
          } finally {
            pumping = false
          }
        }
        const wanted = (row: EventRow) => (!filter.types || filter.types.includes(row.type)) && (!filter.appId || row.app_id === filter.appId)
        cleanups.push(
          hub.subscribe(orgId, (_org, rows) => {
            // Caught up and with room: take the batch the hub read once for every stream, no query of our own.
            if (rows && rows.length > 0 && !pumping && !closed && rows[0].seq === cursor + 1 && (controller.desiredSize ?? 0) > 0) {
              // The cursor moves first: enqueue can call pull() (and so pump) synchronously.
              cursor = rows[rows.length - 1].seq
              for (const row of rows) if (wanted(row)) controller.enqueue(messageOf(row))
              return
            }
            behind = true
            void pump()
          }),
        )
        cleanups.push(
          hub.onHeartbeat(() => {
            // A client that is not reading gets no heartbeat either: its queue stays bounded.
            if (!closed && (controller.desiredSize ?? 0) > 0) controller.enqueue(encoder.encode(': keep-alive\n\n'))
          }),
        )
        cleanups.push(hub.onStop(close))
        controller.enqueue(encoder.encode(`retry: 2000\n: connected, after ${cursor}\n\n`))
        pumpNow = pump
        void pump()
      },
      pull() {
        // Called after every read while there is room: only a stream with events waiting reads the database.
        return behind ? pumpNow() : undefined
      },
      cancel() {
        closed = true
        for (const c of cleanups) c()
      },
    },
    { highWaterMark: QUEUE_BYTES, size: (chunk) => chunk?.byteLength ?? 0 },
  )
  return new Response(stream, {
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      // Reverse proxies (nginx) must not buffer the stream.
      'x-accel-buffering': 'no',
    },
  })
}
