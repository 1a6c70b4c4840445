/**
 * A TCP proxy in front of the test's s3rver that fails the way an S3 service does in production, switched
 * at will: `pass` forwards, `reset` cuts every connection (a crashed or restarting service), `hang` takes
 * connections and never answers (a stalled server, a network partition without a reset), `busy` answers
 * every request `503 SlowDown` (S3 throttling, MinIO starting up). Switching cuts the connections open
 * then, so a client's kept-alive sockets meet the new behaviour at once.
 */
import type { Socket } from 'bun'

export type S3Fault = 'pass' | 'reset' | 'hang' | 'busy'

const SLOW_DOWN_BODY = '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>'
const SLOW_DOWN = `HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: ${SLOW_DOWN_BODY.length}\r\nConnection: close\r\n\r\n${SLOW_DOWN_BODY}`

interface Side {
  up?: Socket<unknown>
  pending: Uint8Array[]
}

export function s3FaultProxy(targetPort: number): { port: number; set(mode: S3Fault): void; stop(): void } {
  let mode: S3Fault = 'pass'
  const open = new Set<Socket<Side>>()
  const server = Bun.listen<Side>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      async open(s) {
        s.data = { pending: [] }
        open.add(s)
        if (mode === 'reset') return void s.terminate()
        if (mode !== 'pass') return
        s.data.up = await Bun.connect({
          hostname: '127.0.0.1',
          port: targetPort,
          socket: {
            data: (_up, d) => void (mode === 'pass' && s.write(d)),
            close: () => void s.end(),
            error: () => void s.end(),
          },
        })
        for (const chunk of s.data.pending.splice(0)) s.data.up.write(chunk)
      },
      data(s, d) {
        if (mode === 'busy') return void s.end(SLOW_DOWN)
        if (mode !== 'pass') return
        if (s.data.up) s.data.up.write(d)
        else s.data.pending.push(new Uint8Array(d))
      },
      close(s) {
        open.delete(s)
        s.data.up?.end()
      },
      error(s) {
        open.delete(s)
        s.data.up?.end()
      },
    },
  })
  const cut = () => {
    for (const s of open) {
      s.data.up?.terminate()
      s.terminate()
    }
    open.clear()
  }
  return {
    port: server.port,
    set(next) {
      if (next !== mode) cut()
      mode = next
    },
    stop() {
      cut()
      server.stop(true)
    },
  }
}
