/**
 * A minimal Server-Sent Events reader over a fetch body (text/event-stream framing: `id:`, `event:`,
 * `data:` lines, blank line ends an event, `:` lines are comments/heartbeats).
 */

import { StreamError } from './errors.js'

/**
 * The most text one event may take, its lines and the line being read together: 1 MiB (1,048,576
 * characters). fixloop's events are ids and short fields, a few hundred bytes; without a bound, a server
 * or proxy that never sends a newline grew the reader's buffer, and the process, without end.
 */
export const MAX_EVENT_CHARS = 1024 * 1024

export interface SseMessage {
  id: string | undefined
  event: string | undefined
  data: string
}

/** Reads `body` as events; throws a StreamError once an event passes `maxEventChars` (MAX_EVENT_CHARS). */
export async function* readSse(body: ReadableStream<Uint8Array>, maxEventChars = MAX_EVENT_CHARS): AsyncGenerator<SseMessage> {
  const reader = body.pipeThrough(new TextDecoderStream() as unknown as ReadableWritablePair<string, Uint8Array>).getReader()
  let buffer = ''
  let msg: SseMessage = { id: undefined, event: undefined, data: '' }
  let hasData = false
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done && !buffer.endsWith('\r')) return
      // At the end, a CR held back below was a line end after all.
      buffer += done ? '\n' : value
      let nl: number
      while ((nl = buffer.search(/\r\n|\r|\n/)) >= 0) {
        // A CR that ends what arrived may be the first half of a CRLF split across two chunks: taken as a
        // line end of its own, the LF that follows would end the event early (an empty line).
        if (buffer[nl] === '\r' && nl === buffer.length - 1) break
        const line = buffer.slice(0, nl)
        buffer = buffer.slice(nl + (buffer[nl] === '\r' && buffer[nl + 1] === '\n' ? 2 : 1))
        if (line === '') {
          if (hasData) yield msg
          msg = { id: msg.id, event: undefined, data: '' }
          hasData = false
          continue
        }
        if (line.startsWith(':')) continue
        const colon = line.indexOf(':')
        const field = colon < 0 ? line : line.slice(0, colon)
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
        if (field === 'data') {
          msg.data = hasData ? `${msg.data}\n${value}` : value
          hasData = true
        } else if (field === 'id') msg.id = value
        else if (field === 'event') msg.event = value
      }
      if (done) return
      // What is left is the start of a line: with the event's data so far, what this event holds.
      if (buffer.length + msg.data.length > maxEventChars) {
        throw new StreamError({
          status: 0,
          code: 'stream_error',
          message: `the event stream sent more than ${maxEventChars} characters of one event without ending it (a server or proxy that does not frame events)`,
          details: { maxEventChars },
        })
      }
    }
  } finally {
    reader.cancel().catch(() => {})
  }
}
