/**
 * A stub of Slack's Web API (chat.postMessage, chat.update) and of slash-command response_urls, for
 * tests only: Slack cannot run here. It checks requests the way Slack does: the bot token as a Bearer
 * header (not_authed / invalid_auth), a JSON or form content type, a channel that exists and the bot is
 * in (channel_not_found), text (no_text), an existing ts for updates and thread replies
 * (message_not_found), and it answers HTTP 429 with Retry-After when one channel gets a second write
 * within a second (Slack's per-channel posting limit), recording the violation.
 */
export interface StubMessage {
  channel: string
  ts: string
  text: string
  threadTs?: string
  edits: string[]
}

export class SlackStub {
  readonly messages: StubMessage[] = []
  readonly calls: { method: string; at: number; ok: boolean; error?: string }[] = []
  readonly responses: { path: string; body: Record<string, unknown>; at: number }[] = []
  readonly violations: string[] = []
  private readonly lastWrite = new Map<string, number>()
  private readonly delays: number[] = []
  /** Web API requests received so far (counted on arrival, before any delay). */
  received = 0
  private seq = 0
  private server: ReturnType<typeof Bun.serve>

  constructor(
    readonly token: string,
    readonly channels: string[],
  ) {
    this.server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (req) => this.handle(req) })
  }

  get url(): string {
    return `http://127.0.0.1:${this.server.port}`
  }

  get apiUrl(): string {
    return `${this.url}/api`
  }

  parents(channel?: string): StubMessage[] {
    return this.messages.filter((m) => !m.threadTs && (!channel || m.channel === channel))
  }

  replies(ts: string): StubMessage[] {
    return this.messages.filter((m) => m.threadTs === ts)
  }

  private async handle(req: Request): Promise<Response> {
    const url = new URL(req.url)
    if (url.pathname.startsWith('/response/')) {
      if (!(req.headers.get('content-type') ?? '').startsWith('application/json')) return new Response('invalid_payload', { status: 400 })
      this.responses.push({ path: url.pathname, body: (await req.json()) as Record<string, unknown>, at: Date.now() })
      return new Response('ok')
    }
    const method = url.pathname.replace(/^\/api\//, '')
    if (req.method !== 'POST' || !['chat.postMessage', 'chat.update'].includes(method)) return Response.json({ ok: false, error: 'unknown_method' }, { status: 404 })
    this.received++
    const delay = this.delays.shift()
    if (delay) await Bun.sleep(delay)
    const fail = (error: string) => {
      this.calls.push({ method, at: Date.now(), ok: false, error })
      return Response.json({ ok: false, error })
    }
    const auth = req.headers.get('authorization')
    if (!auth) return fail('not_authed')
    if (auth !== `Bearer ${this.token}`) return fail('invalid_auth')
    const type = req.headers.get('content-type') ?? ''
    let body: Record<string, unknown>
    if (type.startsWith('application/json')) {
      try {
        body = (await req.json()) as Record<string, unknown>
      } catch {
        return fail('invalid_json')
      }
    } else if (type.startsWith('application/x-www-form-urlencoded')) body = Object.fromEntries(new URLSearchParams(await req.text()))
    else return fail('invalid_form_data')
    const channel = String(body.channel ?? '')
    if (!this.channels.includes(channel)) return fail('channel_not_found')
    if (typeof body.text !== 'string' || body.text === '') return fail('no_text')
    const now = Date.now()
    const last = this.lastWrite.get(channel)
    if (last !== undefined && now - last < 950) {
      this.violations.push(`${method} to ${channel} ${now - last} ms after the previous write`)
      this.calls.push({ method, at: now, ok: false, error: 'ratelimited' })
      return Response.json({ ok: false, error: 'ratelimited' }, { status: 429, headers: { 'retry-after': '1' } })
    }
    this.lastWrite.set(channel, now)
    if (method === 'chat.update') {
      const m = this.messages.find((x) => x.channel === channel && x.ts === body.ts)
      if (!m) return fail('message_not_found')
      m.text = body.text
      m.edits.push(body.text)
      this.calls.push({ method, at: now, ok: true })
      return Response.json({ ok: true, channel, ts: m.ts, text: m.text })
    }
    if (body.thread_ts !== undefined && !this.messages.some((x) => x.channel === channel && x.ts === body.thread_ts)) return fail('message_not_found')
    const ts = `${Math.floor(now / 1000)}.${String(++this.seq).padStart(6, '0')}`
    this.messages.push({ channel, ts, text: body.text, threadTs: body.thread_ts as string | undefined, edits: [] })
    this.calls.push({ method, at: now, ok: true })
    return Response.json({ ok: true, channel, ts, message: { text: body.text } })
  }

  /** The next Web API request is answered only after `ms` (a slow Slack: the call is in flight meanwhile); calls queue up. */
  delayNext(ms: number): void {
    this.delays.push(ms)
  }

  stop(): void {
    this.server.stop(true)
  }
}
