/**
 * One Server-Sent Events response. The stream keeps only a cursor (the last seq sent) and is in one of
 * two modes:
 * - live: its cursor is at the Org's head; it takes the batches the hub reads once for every stream of
 *   the Org (hub.ts), one shared chunk per batch, with no query of its own;
 * - behind: opened with an old cursor, or its client stopped reading while events came: it reads its
 *   backlog a page per step through the hub's catch-up queue (catch-up.ts), which bounds the work per
 *   event-loop turn, and turns live again when a page comes back short.
 * A slow reader fills the stream's small queue, then reading stops until it drains, so memory per
 * connection is bounded by the queue size plus one page. `id:` is the seq, so Last-Event-ID resumes
 * exactly, even across a restart (seq lives in the database, not in memory).
 */
import { joinMessages, type EventBatch, type StreamFilter } from './batch'
import type { EventHub } from './hub'
import type { EventsRepo } from './repo'

export type { StreamFilter } from './batch'

/** Bytes queued per connection before reading pauses for a slow client. */
const QUEUE_BYTES = 64 * 1024
/** Events per catch-up read. */
const PAGE = 200
const encoder = new TextEncoder()

/**
 * `authorized`: whether the credential the stream was opened with still stands, asked at every heartbeat;
 * the stream ends when it does not (a revoked key, a signed-out session). `onClose`: called once when the
 * stream ends, however it ends (client gone, error, shutdown, credential gone).
 */
export function openEventStream(
  repo: EventsRepo,
  hub: EventHub,
  orgId: string,
  filter: StreamFilter & { after: number },
  authorized?: () => Promise<boolean>,
  onClose?: () => void,
): Response {
  let cursor = filter.after
  let live = false
  let closed = false
  const cleanups: (() => void)[] = []
  const finish = () => {
    if (closed) return false
    closed = true
    for (const c of cleanups) c()
    onClose?.()
    return true
  }
  let catchUpStep: () => Promise<boolean> = async () => false

  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const room = () => (controller.desiredSize ?? 0) > 0
        const close = () => {
          if (!finish()) return
          try {
            controller.close()
          } catch {
            // Already closed by the client.
          }
        }
        const fallBehind = () => {
          live = false
          // With a full queue, pull() queues the catch-up once the client has drained it.
          if (room()) hub.catchUp.add(catchUpStep)
        }
        // One page of the backlog; true while there is more and room for it.
        catchUpStep = async () => {
          if (closed || live || !room()) return false
          try {
            // The first read waits for the Org's feed to know where it starts (hub.whenReady).
            await hub.whenReady(orgId)
            const page = await repo.page(orgId, { after: cursor, limit: PAGE, types: filter.types, appId: filter.appId })
            if (closed) return false
            // The cursor moves first: enqueue can call pull() synchronously.
            cursor = page.nextAfter
            if (page.rows.length < PAGE) live = true
            const bytes = joinMessages(page.rows, filter)
            if (bytes.byteLength > 0) controller.enqueue(bytes)
          } catch {
            close()
            return false
          }
          return !live && room()
        }
        cleanups.push(
          hub.subscribe(orgId, (batch: EventBatch) => {
            if (closed || !live || batch.last <= cursor) return 0
            // A gap (events between our cursor and this batch that we never saw), or no room: read on our own.
            if (batch.first > cursor + 1 || !room()) {
              fallBehind()
              return 0
            }
            const bytes = batch.bytesAfter(cursor, filter)
            cursor = batch.last
            if (bytes.byteLength > 0) controller.enqueue(bytes)
            return bytes.byteLength
          }),
        )
        let asking = false
        cleanups.push(
          hub.onHeartbeat(() => {
            // A client that is not reading gets no heartbeat either: its queue stays bounded.
            if (!closed && room()) controller.enqueue(encoder.encode(': keep-alive\n\n'))
            // Authenticated once when it opened: a key revoked since, or a session signed out, ends it here.
            if (!authorized || closed || asking) return
            asking = true
            authorized().then(
              (ok) => {
                asking = false
                if (!ok) close()
              },
              () => close(),
            )
          }),
        )
        cleanups.push(hub.onStop(close))
        controller.enqueue(encoder.encode(`retry: 2000\n: connected, after ${cursor}\n\n`))
        // Every stream starts behind: it reads up to the head (usually one short page) before it is live.
        hub.catchUp.add(catchUpStep)
      },
      pull() {
        // Called after every read while there is room: only a stream with events waiting is queued.
        if (!live && !closed) hub.catchUp.add(catchUpStep)
      },
      cancel() {
        finish()
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
