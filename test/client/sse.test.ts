/**
 * @fixloop/client's event-stream reader against hostile streams from a local HTTP server (no fixloop
 * needed): a stream that never sends a newline must fail with a clear error, not grow the buffer without end.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Fixloop, MAX_EVENT_CHARS, StreamError } from '../../packages/client/src/index'
import { readSse } from '../../packages/client/src/sse'

/** Bytes the server has handed to the last stream, how many streams it opened, whether the reader let go. */
let sent = 0
let opened = 0
let cancelled = false
let server: ReturnType<typeof Bun.serve>

beforeAll(() => {
  server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(req) {
      const path = new URL(req.url).pathname
      opened++
      const chunk = new TextEncoder().encode(path.endsWith('/one-line') ? 'x'.repeat(64 * 1024) : `data: ${'y'.repeat(1000)}\n`)
      let first = true
      // 64 MiB at most, then the stream ends (a reader without a bound buffers all of it, and reconnects).
      let left = 64 * 1024 * 1024
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (first && path.endsWith('/one-line')) controller.enqueue(new TextEncoder().encode('data: '))
          first = false
          if (left <= 0) return controller.close()
          controller.enqueue(chunk)
          sent += chunk.byteLength
          left -= chunk.byteLength
        },
        cancel() {
          cancelled = true
        },
      })
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
    },
  })
})
afterAll(() => server.stop(true))

/** The first outcome of reading `path` as the client's event stream, or 'still reading' after 10 s. */
async function readStream(path: string): Promise<unknown> {
  const controller = new AbortController()
  const client = new Fixloop({ apiKey: 'sk_test', baseUrl: `http://127.0.0.1:${server.port}${path}` })
  const reading = (async () => {
    for await (const _ of client.events.stream({}, { signal: controller.signal })) return 'an event'
    return 'ended'
  })().catch((e) => e)
  const outcome = await Promise.race([reading, Bun.sleep(10_000).then(() => 'still reading')])
  controller.abort()
  return outcome
}

describe('event stream bounds', () => {
  test.each([
    ['a line that never ends', '/one-line'],
    ['data lines of an event that never ends (no blank line)', '/many-lines'],
  ])('%s: fails with a StreamError past MAX_EVENT_CHARS, without reconnecting, and lets go of the stream', async (_, path) => {
    sent = 0
    opened = 0
    cancelled = false
    const outcome = await readStream(path)
    expect(outcome).toBeInstanceOf(StreamError)
    const e = outcome as StreamError
    expect(e.code).toBe('stream_error')
    expect(e.status).toBe(0)
    expect(e.message).toContain(`more than ${MAX_EVENT_CHARS} characters`)
    // Not retried (one connection), and the reader let go of the stream before its 64 MiB were sent.
    expect(opened).toBe(1)
    await Bun.sleep(100)
    expect(cancelled).toBe(true)
    expect(sent).toBeLessThan(64 * 1024 * 1024)
    expect(MAX_EVENT_CHARS).toBe(1024 * 1024)
  }, 20_000)
})

describe('event framing across chunks', () => {
  /** The events readSse yields from a body that arrives in exactly these chunks. */
  async function eventsOf(chunks: string[]) {
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (const chunk of chunks) c.enqueue(new TextEncoder().encode(chunk))
        c.close()
      },
    })
    const out: { id?: string; data: string }[] = []
    for await (const m of readSse(body)) out.push({ id: m.id, data: m.data })
    return out
  }

  test('a CRLF split between two chunks is one line end, not two (the event is not cut in half)', async () => {
    expect(await eventsOf(['id: 7\r\ndata: first\r', '\ndata: second\r\n\r\n'])).toEqual([{ id: '7', data: 'first\nsecond' }])
  })

  test('a lone CR is still a line end, at a chunk end too', async () => {
    expect(await eventsOf(['data: a\r', 'data: b\r\r'])).toEqual([{ id: undefined, data: 'a\nb' }])
    expect(await eventsOf(['data: a\r\r', 'data: b\n\n'])).toEqual([
      { id: undefined, data: 'a' },
      { id: undefined, data: 'b' },
    ])
  })
})

describe('a stream that reconnects for hours', () => {
  test("each reconnect lets go of the caller's signal: no abort listeners pile up (MaxListenersExceededWarning, a leak)", async () => {
    // A proxy that ends every stream after one event (idle timeouts do this for days on end).
    let seq = 0
    const oneEach = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: () => {
        seq++
        const event = { id: `e${seq}`, seq, type: 'feedback.received', createdAt: new Date().toISOString(), appId: null, data: {} }
        return new Response(`id: ${seq}\ndata: ${JSON.stringify(event)}\n\n`, { headers: { 'content-type': 'text/event-stream' } })
      },
    })
    try {
      const controller = new AbortController()
      const signal = controller.signal
      // Count the abort listeners held on the caller's signal.
      const held = new Set<unknown>()
      const add = signal.addEventListener.bind(signal)
      const remove = signal.removeEventListener.bind(signal)
      signal.addEventListener = ((type: string, listener: EventListener, options?: AddEventListenerOptions) => {
        if (type === 'abort') held.add(listener)
        add(type, listener, options)
      }) as typeof signal.addEventListener
      signal.removeEventListener = ((type: string, listener: EventListener, options?: EventListenerOptions) => {
        if (type === 'abort') held.delete(listener)
        remove(type, listener, options)
      }) as typeof signal.removeEventListener
      const client = new Fixloop({ apiKey: 'sk_test', baseUrl: `http://127.0.0.1:${oneEach.port}` })
      let events = 0
      let most = 0
      for await (const _ of client.events.stream({}, { signal })) {
        most = Math.max(most, held.size)
        if (++events === 12) break
      }
      expect(seq).toBeGreaterThanOrEqual(12)
      // One connection's worth at most (its fetch and the pause before the next), not one per reconnect.
      expect(most).toBeLessThanOrEqual(2)
      expect(held.size).toBe(0)
    } finally {
      oneEach.stop(true)
    }
  }, 30_000)
})
