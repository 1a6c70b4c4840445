// The Org's live event stream (GET /v1/events/stream, docs/events.md) for a page. fetch() rather than
// EventSource: a session names its Org in the X-Fixloop-Org header, and EventSource cannot send headers.
// Reconnects with Last-Event-ID after a drop (1 s, doubling to 30 s), so no event is missed or repeated.

/** Splits an SSE byte stream into { seq, type, data } messages; comment lines (keep-alives) are skipped. */
export function sseParser(onMessage) {
  let buffer = ''
  return (text) => {
    buffer += text.replace(/\r\n?/g, '\n')
    let end
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      let id = null
      let type = 'message'
      const data = []
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue
        const i = line.indexOf(':')
        const field = i < 0 ? line : line.slice(0, i)
        const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '')
        if (field === 'id') id = value
        else if (field === 'event') type = value
        else if (field === 'data') data.push(value)
      }
      if (!data.length) continue
      try {
        onMessage({ seq: Number(id), type, data: JSON.parse(data.join('\n')) })
      } catch {
        // Not an event we can read: skip it (the list of types grows; see docs/events.md).
      }
    }
  }
}

/**
 * Calls onEvents(batch) with the Org's events after `after`, as they happen, until the returned stop()
 * is called. onState('live' | 'reconnecting' | 'off') says how it goes; 'off' is final (the session may
 * not read events: signed out, or a role without access).
 */
export function watchEvents({ org, after, types, onEvents, onState = () => {} }) {
  const ctrl = new AbortController()
  let last = after
  let delay = 1000
  const stopped = () => ctrl.signal.aborted
  const run = async () => {
    while (!stopped()) {
      try {
        const params = new URLSearchParams({ after: String(last) })
        if (types && types.length) params.set('types', types.join(','))
        const res = await fetch(`/v1/events/stream?${params}`, {
          headers: { accept: 'text/event-stream', 'x-fixloop-org': org, 'last-event-id': String(last) },
          credentials: 'same-origin',
          signal: ctrl.signal,
        })
        if ([401, 403, 404].includes(res.status)) return onState('off')
        if (!res.ok || !res.body) throw new Error(`event stream answered ${res.status}`)
        delay = 1000
        onState('live')
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
        let batch = []
        const feed = sseParser((e) => {
          if (Number.isSafeInteger(e.seq) && e.seq > last) last = e.seq
          batch.push(e)
        })
        for (;;) {
          const { done, value } = await reader.read()
          if (done) break
          feed(value)
          if (batch.length) {
            const out = batch
            batch = []
            onEvents(out)
          }
        }
      } catch {
        if (stopped()) return
      }
      if (stopped()) return
      onState('reconnecting')
      await new Promise((r) => setTimeout(r, delay))
      delay = Math.min(delay * 2, 30_000)
    }
  }
  run()
  return () => ctrl.abort()
}
