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
