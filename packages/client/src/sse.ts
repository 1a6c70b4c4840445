/**
 * A minimal Server-Sent Events reader over a fetch body (text/event-stream framing: `id:`, `event:`,
 * `data:` lines, blank line ends an event, `:` lines are comments/heartbeats).
 */

export interface SseMessage {
  id: string | undefined
  event: string | undefined
  data: string
}

export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const reader = body.pipeThrough(new TextDecoderStream() as unknown as ReadableWritablePair<string, Uint8Array>).getReader()
  let buffer = ''
  let msg: SseMessage = { id: undefined, event: undefined, data: '' }
  let hasData = false
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      buffer += value
      let nl: number
      while ((nl = buffer.search(/\r\n|\r|\n/)) >= 0) {
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
    }
  } finally {
    reader.cancel().catch(() => {})
  }
}
