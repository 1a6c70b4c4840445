/**
 * A minimal client of Slack's Web API (chat.postMessage, chat.update) and of response_url answers.
 * JSON bodies with the bot token as a Bearer header, as Slack asks. Writes to one channel are paced to
 * at most one per second (Slack's chat.postMessage limit is about one message per second per channel);
 * a 429 is waited out for its Retry-After. The base URL is configurable (FIXLOOP_SLACK_API_URL) so tests
 * run against a stub of the Web API. Every call goes through the bounded outbound client
 * (src/core/outbound-http.ts: at most 2 MiB of answer, one deadline, redirects never followed).
 */
import { OutboundError, requestBounded, type OutboundAnswer } from '../../core/outbound-http'

export class SlackError extends Error {
  constructor(
    readonly code: string,
    /** Errors worth another try later (rate limits, network, 5xx) as opposed to bad config. */
    readonly transient: boolean,
  ) {
    super(`slack: ${code}`)
  }
}

/** Slack's pace for one channel: one write a second. */
export const CHANNEL_INTERVAL_MS = 1000
const TIMEOUT_MS = 10_000

/** The answer's JSON object, or null (not JSON, or not an object). */
function jsonObject(text: string): Record<string, unknown> | null {
  try {
    const v = JSON.parse(text) as unknown
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null
  } catch {
    return null
  }
}

export class SlackApi {
  /** Earliest moment (performance.now()) the next write to each channel may start. */
  private readonly nextSlot = new Map<string, number>()

  constructor(private readonly baseUrl: string) {}

  private async pace(channel: string): Promise<void> {
    const now = performance.now()
    const at = Math.max(now, this.nextSlot.get(channel) ?? 0)
    this.nextSlot.set(channel, at + CHANNEL_INTERVAL_MS)
    if (at > now) await Bun.sleep(at - now)
  }

  private async call(method: string, token: string, body: Record<string, unknown>, beforeSend?: () => Promise<void>): Promise<Record<string, unknown>> {
    const channel = String(body.channel)
    await this.pace(channel)
    // Checked after the wait for the channel's turn, just before the request: the caller may have lost the
    // right to send meanwhile (modules/chatops/notifier.ts), and then it throws and nothing is sent.
    await beforeSend?.()
    try {
      return await this.send(method, token, body)
    } finally {
      // The next write waits a second from this answer, not from this request's start: a request slowed on
      // its way must not arrive at Slack less than a second before the next one.
      this.nextSlot.set(channel, Math.max(this.nextSlot.get(channel) ?? 0, performance.now() + CHANNEL_INTERVAL_MS))
    }
  }

  private async send(method: string, token: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    let res: OutboundAnswer
    try {
      res = await requestBounded({
        url: `${this.baseUrl}/${method}`,
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json; charset=utf-8' },
        body: JSON.stringify(body),
        timeoutMs: TIMEOUT_MS,
      })
    } catch (e) {
      if (!(e instanceof OutboundError)) throw e
      throw new SlackError(e.failure === 'too_large' ? 'response_too_large' : `network: ${e.failure}`, true)
    }
    if (res.status === 429) {
      const wait = Math.min(60, Number(res.headers.get('retry-after')) || 1)
      this.nextSlot.set(String(body.channel), performance.now() + wait * 1000)
      throw new SlackError('ratelimited', true)
    }
    if (res.status >= 500) throw new SlackError(`http_${res.status}`, true)
    const json = jsonObject(res.text) ?? { ok: false, error: 'invalid_response' }
    if (json.ok !== true) throw new SlackError(String(json.error ?? 'unknown_error'), json.error === 'ratelimited' || json.error === 'internal_error')
    return json
  }

  /** Posts a message (a thread reply when threadTs is given); returns Slack's ts of it. */
  async post(token: string, channel: string, text: string, threadTs?: string, beforeSend?: () => Promise<void>): Promise<{ ts: string; channel: string }> {
    const r = await this.call('chat.postMessage', token, { channel, text, ...(threadTs ? { thread_ts: threadTs } : {}), unfurl_links: false }, beforeSend)
    return { ts: String(r.ts), channel: String(r.channel ?? channel) }
  }

  async update(token: string, channel: string, ts: string, text: string, beforeSend?: () => Promise<void>): Promise<void> {
    await this.call('chat.update', token, { channel, ts, text }, beforeSend)
  }

  /** Answers a slash command through its response_url (valid 30 minutes, up to 5 answers). */
  async respond(responseUrl: string, text: string): Promise<void> {
    // Slack's answer is not needed: read (bounded) and dropped; a failure is the caller's to log.
    await requestBounded({
      url: responseUrl,
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ response_type: 'ephemeral', text }),
      timeoutMs: TIMEOUT_MS,
    })
  }
}
