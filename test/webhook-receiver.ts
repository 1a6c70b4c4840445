/**
 * A real HTTP receiver on loopback for webhook tests. It verifies every request with an implementation
 * that is not fixloop's (the `standardwebhooks` package, and a hand-computed HMAC), and behaves per
 * path: /ok answers 200, /flaky/N fails the first N attempts of each message, /gone answers 410,
 * /slow never answers in time, /redirect sends a 302 to /ok, /busy answers 429 with Retry-After,
 * /jitter/… answers 200 after 0-29 ms (by message id, so a later message can finish first), and
 * /jitter-flaky/… is /jitter/… that fails each message's first attempt when its seq is odd.
 * `mostOpen` holds, per path, how many of its requests were ever open at once.
 */
import { createHmac } from 'node:crypto'
import { Webhook } from 'standardwebhooks'

export interface Received {
  path: string
  id: string
  timestamp: string
  signature: string
  body: string
  at: number
  /** Whether the standardwebhooks package accepted it with the secret in force for this path. */
  verified: boolean
}

/** HMAC-SHA256 over id.timestamp.body keyed with the base64 part of whsec_, by hand. */
export function handSignature(secret: string, id: string, timestamp: string, body: string): string {
  return 'v1,' + createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64')).update(`${id}.${timestamp}.${body}`).digest('base64')
}

export class Receiver {
  readonly received: Received[] = []
  /** Secret per path prefix (set after creating the endpoint). */
  readonly secrets = new Map<string, string>()
  private readonly attemptsById = new Map<string, number>()
  private readonly open = new Map<string, number>()
  readonly mostOpen = new Map<string, number>()
  private server: ReturnType<typeof Bun.serve>

  constructor() {
    this.server = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      idleTimeout: 30,
      fetch: async (req) => {
        const url = new URL(req.url)
        const body = await req.text()
        const h = (n: string) => req.headers.get(n) ?? ''
        const key = url.pathname.split('/').slice(0, 3).join('/')
        const secret = this.secrets.get(url.pathname) ?? this.secrets.get(key)
        let verified = false
        if (secret) {
          try {
            new Webhook(secret).verify(body, { 'webhook-id': h('webhook-id'), 'webhook-timestamp': h('webhook-timestamp'), 'webhook-signature': h('webhook-signature') })
            verified = true
          } catch {
            verified = false
          }
        }
        this.received.push({ path: url.pathname, id: h('webhook-id'), timestamp: h('webhook-timestamp'), signature: h('webhook-signature'), body, at: Date.now(), verified })
        const n = (this.attemptsById.get(url.pathname + h('webhook-id')) ?? 0) + 1
        this.attemptsById.set(url.pathname + h('webhook-id'), n)
        if (url.pathname.startsWith('/flaky/')) {
          const failures = Number(url.pathname.split('/')[2])
          return n <= failures ? new Response('not yet '.repeat(1000), { status: 503 }) : new Response('ok')
        }
        if (url.pathname === '/gone') return new Response('gone', { status: 410 })
        if (url.pathname === '/slow' || url.pathname.startsWith('/slow/')) {
          await Bun.sleep(3000)
          return new Response('late')
        }
        if (url.pathname === '/redirect') return new Response(null, { status: 302, headers: { location: `${this.url}/ok` } })
        if (url.pathname === '/busy') return n === 1 ? new Response('busy', { status: 429, headers: { 'retry-after': '600' } }) : new Response('ok')
        if (url.pathname === '/fail') return new Response('down', { status: 500 })
        if (url.pathname.startsWith('/jitter')) {
          const now = (this.open.get(url.pathname) ?? 0) + 1
          this.open.set(url.pathname, now)
          this.mostOpen.set(url.pathname, Math.max(now, this.mostOpen.get(url.pathname) ?? 0))
          try {
            await Bun.sleep(createHmac('sha256', 'jitter').update(h('webhook-id')).digest()[0] % 30)
          } finally {
            this.open.set(url.pathname, this.open.get(url.pathname)! - 1)
          }
          const odd = (JSON.parse(body) as { seq: number }).seq % 2 === 1
          if (url.pathname.startsWith('/jitter-flaky/') && odd && n === 1) return new Response('not yet', { status: 503 })
        }
        return new Response('ok')
      },
    })
  }

  get url(): string {
    return `http://127.0.0.1:${this.server.port}`
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path)
  }

  stop(): void {
    this.server.stop(true)
  }
}
