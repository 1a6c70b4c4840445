/**
 * Helpers for the events, stream and webhook tests: append events through the real outbox (as the
 * lifecycle does, inside a transaction), and read an SSE stream with a plain fetch.
 */
import type { Database } from 'bun:sqlite'
import { createOutbox } from '../src/db/sqlite/outbox'
import { systemClock, type Clock } from '../src/core/clock'
import { newId } from '../src/core/ids'
import { appendEventPg } from '../src/db/pg/outbox'
import type { Runtime } from '../src/runtime/open'

/** Appends `n` feedback.status_changed events for an Org, each in its own transaction; returns their seqs. `clock` stamps them (ids and created_at). */
export function appendEvents(
  sqlite: Database,
  orgId: string,
  appId: string | null,
  n: number,
  type: 'feedback.status_changed' | 'feedback.received' = 'feedback.status_changed',
  clock: Clock = systemClock,
): number[] {
  const outbox = createOutbox(sqlite, clock)
  const seqs: number[] = []
  for (let i = 0; i < n; i++) {
    const data =
      type === 'feedback.received' ? { feedbackId: newId(), status: 'received' as const } : { feedbackId: newId(), from: 'sanitized' as const, to: 'queued' as const }
    // IMMEDIATE, as the lifecycle's writes are: append reads the Org's last seq before it writes.
    seqs.push(sqlite.transaction(() => outbox.append({ orgId, appId, type, data } as never)).immediate())
  }
  return seqs
}

/**
 * `appendEvents` on whichever storage the server runs. SQLite appends them one transaction each, all in
 * one synchronous stretch (no reader runs in between); PostgreSQL appends them in one transaction, so
 * there too no reader sees only some of them.
 */
export async function appendEventsIn(
  ctx: Pick<Runtime, 'storage'>,
  orgId: string,
  appId: string | null,
  n: number,
  type: 'feedback.status_changed' | 'feedback.received' = 'feedback.status_changed',
  clock: Clock = systemClock,
): Promise<number[]> {
  const storage = ctx.storage
  if (storage.dialect === 'sqlite') return appendEvents(storage.sqlite, orgId, appId, n, type, clock)
  if (n === 0) return []
  // As appendEventPg (src/db/pg/outbox.ts) n times, in two statements: the Org's counter raised by n, then
  // every row at once (the slow-reader test appends 20,000).
  const datas = Array.from({ length: n }, () =>
    type === 'feedback.received' ? { feedbackId: newId(), status: 'received' } : { feedbackId: newId(), from: 'sanitized', to: 'queued' },
  )
  return storage.tx(async (client) => {
    const { rows } = await client.query<{ last_seq: number }>(
      `INSERT INTO event_counters (org_id, last_seq) VALUES ($1, $2)
       ON CONFLICT (org_id) DO UPDATE SET last_seq = event_counters.last_seq + $2 RETURNING last_seq`,
      [orgId, n],
    )
    const seqs = Array.from({ length: n }, (_, i) => rows[0].last_seq - n + 1 + i)
    await client.query(
      `INSERT INTO events (id, org_id, app_id, seq, type, data, created_at, feedback_id)
       SELECT id, $1, $2, seq, $3, data, $4, feedback_id FROM unnest($5::text[], $6::bigint[], $7::text[], $8::text[]) AS r(id, seq, data, feedback_id)`,
      [orgId, appId, type, clock.now(), datas.map(() => newId(clock)), seqs, datas.map((d) => JSON.stringify(d)), datas.map((d) => d.feedbackId)],
    )
    return seqs
  })
}

export interface SseMessage {
  id?: string
  event?: string
  data?: string
}

/** An open SSE connection: messages and comment lines as they arrive. */
export class SseClient {
  messages: SseMessage[] = []
  comments: string[] = []
  status = 0
  private buffer = ''
  private readonly abort = new AbortController()
  private done: Promise<void> = Promise.resolve()

  /** `key`: an sk_ key, or '' for none (a dashboard session's cookie in `headers`). */
  static async open(url: string, key: string, headers: Record<string, string> = {}): Promise<SseClient> {
    const c = new SseClient()
    const res = await fetch(url, { headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), accept: 'text/event-stream', ...headers }, signal: c.abort.signal })
    c.status = res.status
    if (res.status !== 200 || !res.body) return c
    const reader = res.body.getReader()
    const decoder = new TextDecoder()
    c.done = (async () => {
      try {
        for (;;) {
          const { value, done } = await reader.read()
          if (done) return
          c.feed(decoder.decode(value, { stream: true }))
        }
      } catch {
        // aborted or the server went away
      }
    })()
    return c
  }

  private feed(text: string): void {
    this.buffer += text
    let end: number
    while ((end = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, end)
      this.buffer = this.buffer.slice(end + 2)
      const msg: SseMessage = {}
      let isMsg = false
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) this.comments.push(line.slice(1).trim())
        else {
          const i = line.indexOf(':')
          const field = line.slice(0, i)
          const value = line.slice(i + 1).replace(/^ /, '')
          if (field === 'id' || field === 'event' || field === 'data') {
            msg[field] = value
            isMsg = true
          }
        }
      }
      if (isMsg && msg.data !== undefined) this.messages.push(msg)
    }
  }

  get seqs(): number[] {
    return this.messages.map((m) => Number(m.id))
  }

  get lastEventId(): string | undefined {
    return this.messages.at(-1)?.id
  }

  /** Whether the server ended the stream. */
  ended(): Promise<boolean> {
    return Promise.race([this.done.then(() => true), Bun.sleep(50).then(() => false)])
  }

  async close(): Promise<void> {
    this.abort.abort()
    await this.done
  }
}

/** Appends one event of any type with the given payload (as the lifecycle would), returns its seq. */
/**
 * `appendEvent` for each of `events` on whichever storage the server runs. On SQLite each is its own
 * transaction, all in one synchronous stretch; on PostgreSQL they share one transaction, so there too no
 * poll of the hub sees only some of them.
 */
export async function appendEventBatchIn(ctx: Pick<Runtime, 'storage'>, events: { orgId: string; appId: string | null; type: string; data: Record<string, unknown> }[]): Promise<number[]> {
  const storage = ctx.storage
  if (storage.dialect === 'sqlite') return events.map((e) => appendEvent(storage.sqlite, e.orgId, e.appId, e.type, e.data))
  return storage.tx(async (client) => {
    const seqs: number[] = []
    for (const e of events) seqs.push(await appendEventPg(client, systemClock, e as never))
    return seqs
  })
}

export function appendEvent(sqlite: Database, orgId: string, appId: string | null, type: string, data: Record<string, unknown>): number {
  const outbox = createOutbox(sqlite, systemClock)
  return sqlite.transaction(() => outbox.append({ orgId, appId, type, data } as never))()
}
