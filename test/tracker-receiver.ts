/** A local receiver for the tracker stubs' webhook deliveries: records each one's headers and raw body. */
export interface Received { headers: Headers; raw: Uint8Array }
export function startReceiver(): { url: string; received: Received[]; stop(): void } {
  const received: Received[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      received.push({ headers: req.headers, raw: new Uint8Array(await req.arrayBuffer()) })
      return new Response(null, { status: 204 })
    },
  })
  return { url: `http://127.0.0.1:${server.port}/hook`, received, stop: () => server.stop(true) }
}
/** A hostile body: nested `depth` levels deep. */
export function deep(depth: number): unknown {
  return JSON.parse(`${'{"issue":'.repeat(depth)}{}${'}'.repeat(depth)}`)
}
