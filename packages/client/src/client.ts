/**
 * `new Fixloop({ apiKey, baseUrl })`: one object per server, its resources mirroring the REST API.
 */
import { Core, pause, type ClientOptions, type RequestOptions } from './core.js'
import { FixloopError, NotFoundError, StreamError, TimeoutError, errorFromResponse, retryAfterMs } from './errors.js'
import { PagedList } from './paging.js'
import { readSse } from './sse.js'
import type * as T from './types.js'

const enc = encodeURIComponent

export class Fixloop {
  readonly apps: Apps
  readonly feedback: Feedback
  readonly tokens: Tokens
  readonly agentRuns: AgentRuns
  readonly events: Events
  readonly webhooks: Webhooks
  /** The request engine, for routes this version does not wrap yet. */
  readonly core: Core

  constructor(options: ClientOptions) {
    this.core = new Core(options)
    this.apps = new Apps(this.core)
    this.events = new Events(this.core)
    this.feedback = new Feedback(this.core, this.events)
    this.tokens = new Tokens(this.core)
    this.agentRuns = new AgentRuns(this.core)
    this.webhooks = new Webhooks(this.core)
  }
}

class Apps {
  constructor(private readonly core: Core) {}
  /** Every App of the Org: `await` for `{ data }`, or `for await` over the Apps. */
  list(opts?: RequestOptions): PagedList<T.App, { data: T.App[] }> {
    return new PagedList(
      () => this.core.request<{ data: T.App[] }>({ method: 'GET', path: '/v1/apps' }, opts),
      (page) => ({ data: page.data, next: null }),
    )
  }

  /** The App's merge bars now and what its people's triage decisions taught. */
  triage(appId: string, opts?: RequestOptions): Promise<T.AppTriageState> {
    return this.core.request({ method: 'GET', path: `/v1/apps/${enc(appId)}/triage` }, opts)
  }
}

export interface WaitForOptions {
  /** A status, a list of statuses, or a test on the item. */
  until: T.FeedbackStatus | T.FeedbackStatus[] | ((item: T.FeedbackItem) => boolean)
  /** Default 10 minutes. */
  timeoutMs?: number
  signal?: AbortSignal
}

class Feedback {
  constructor(
    private readonly core: Core,
    private readonly events: Events,
  ) {}

  /** Newest first; `for await` follows nextCursor over every page, `await` gives the first page. */
  list(params: T.FeedbackListParams = {}, opts?: RequestOptions): PagedList<T.FeedbackListItem, T.FeedbackPage> {
    return new PagedList(
      (cursor) => this.core.request<T.FeedbackPage>({ method: 'GET', path: '/v1/feedback', query: { ...params, cursor: (cursor as string) ?? params.cursor } }, opts),
      (page) => ({ data: page.data, next: page.nextCursor }),
    )
  }

  retrieve(id: string, opts?: RequestOptions): Promise<T.FeedbackItem> {
    return this.core.request({ method: 'GET', path: `/v1/feedback/${enc(id)}` }, opts)
  }

  /** `{ status: 'queued' }` sends it to the agent queue; `{ status: 'archived' }` dismisses it. */
  update(id: string, params: T.FeedbackUpdateParams, opts?: RequestOptions): Promise<T.FeedbackUpdateResult> {
    return this.core.request({ method: 'PATCH', path: `/v1/feedback/${enc(id)}`, body: params }, opts)
  }

  similar(id: string, params: T.SimilarParams = {}, opts?: RequestOptions): Promise<{ data: T.SimilarReport[] }> {
    return this.core.request({ method: 'GET', path: `/v1/feedback/${enc(id)}/similar`, query: { ...params } }, opts)
  }

  merge(id: string, leadId: string, opts?: RequestOptions): Promise<T.FeedbackItem> {
    return this.core.request({ method: 'POST', path: `/v1/feedback/${enc(id)}/merge`, body: { leadId } }, opts)
  }

  unmerge(id: string, opts?: RequestOptions): Promise<T.FeedbackItem> {
    return this.core.request({ method: 'POST', path: `/v1/feedback/${enc(id)}/unmerge` }, opts)
  }

  /** Rejects the report's suggested lead (`suggestedDuplicateOf`); confirm one with `merge(id, suggestedDuplicateOf.id)`. */
  rejectSuggestion(id: string, opts?: RequestOptions): Promise<T.FeedbackItem> {
    return this.core.request({ method: 'POST', path: `/v1/feedback/${enc(id)}/reject-suggestion` }, opts)
  }

  /**
   * Submits a report with the App public key (client option `publicKey`), as your backend on behalf of
   * a user. The Idempotency-Key (yours or a generated one) is re-sent on every retry, so a retried
   * submission is stored once.
   */
  submit(body: T.FeedbackSubmitParams, opts: RequestOptions & { userToken?: string } = {}): Promise<T.FeedbackSubmitResult> {
    const headers = opts.userToken ? { ...opts.headers, 'x-service-user-token': opts.userToken } : opts.headers
    return this.core.request({ method: 'POST', path: '/v1/feedback', body, auth: 'pub', idempotent: true }, { ...opts, headers })
  }

  /** A URL to PUT a screenshot or attachment to, then reference its `key` in `submit`. */
  createUploadUrl(body: T.UploadUrlParams, opts: RequestOptions & { userToken?: string } = {}): Promise<T.UploadUrl> {
    const headers = opts.userToken ? { ...opts.headers, 'x-service-user-token': opts.userToken } : opts.headers
    return this.core.request({ method: 'POST', path: '/v1/feedback/upload-url', body, auth: 'pub', idempotent: true }, { ...opts, headers })
  }

  /**
   * Resolves with the item once it reaches `until`. Listens to the event stream when the server has one
   * and falls back to polling with backoff (0.5 s doubling to 5 s) otherwise (also when the stream
   * breaks its framing: a StreamError).
   */
  async waitFor(id: string, { until, timeoutMs = 600_000, signal }: WaitForOptions): Promise<T.FeedbackItem> {
    const done = typeof until === 'function' ? until : (item: T.FeedbackItem) => ([] as string[]).concat(until).includes(item.status)
    const controller = new AbortController()
    const stop = () => controller.abort(signal?.reason)
    signal?.addEventListener('abort', stop, { once: true })
    const timer = setTimeout(() => controller.abort(new TimeoutError({ status: 0, code: 'timeout', message: `feedback ${id} did not reach the awaited state within ${timeoutMs} ms` })), timeoutMs)
    try {
      let item = await this.retrieve(id, { signal: controller.signal })
      if (done(item)) return item
      // The stream wakes us on each status change; a slow re-read every 5 s covers a change that landed
      // between the first read and the stream's start.
      const events = this.events.stream({ appId: item.appId, types: ['feedback.status_changed'] }, { signal: controller.signal })[Symbol.asyncIterator]()
      try {
        let next = events.next()
        for (;;) {
          const got = await Promise.race([next, pause(5000, controller.signal).then(() => null)])
          if (got?.done) break
          if (got) {
            next = events.next()
            if ((got.value.data as { feedbackId?: unknown }).feedbackId !== id) continue
          }
          item = await this.retrieve(id, { signal: controller.signal })
          if (done(item)) return item
        }
      } catch (e) {
        // No stream (an older server) or one that breaks its framing (a proxy): polling still gets there.
        if (!(e instanceof NotFoundError) && !(e instanceof StreamError)) throw e
      } finally {
        events.return?.(undefined).catch(() => {})
      }
      for (let delay = 500; ; delay = Math.min(delay * 2, 5000)) {
        await pause(delay, controller.signal)
        item = await this.retrieve(id, { signal: controller.signal })
        if (done(item)) return item
      }
    } catch (e) {
      throw controller.signal.aborted ? controller.signal.reason : e
    } finally {
      clearTimeout(timer)
      signal?.removeEventListener('abort', stop)
    }
  }
}

class Tokens {
  constructor(private readonly core: Core) {}
  /** Mints a private-mode user token signed with the App's secret (server side). */
  mint({ appId, ...body }: T.MintParams, opts?: RequestOptions): Promise<T.MintResult> {
    return this.core.request({ method: 'POST', path: '/v1/tokens/mint', query: { appId }, body, idempotent: true }, opts)
  }
}

class AgentRuns {
  constructor(private readonly core: Core) {}
  retrieve(id: string, opts?: RequestOptions): Promise<T.AgentRun> {
    return this.core.request({ method: 'GET', path: `/v1/agent-runs/${enc(id)}` }, opts)
  }
  /** A report's runs, newest first. */
  listForFeedback(feedbackId: string, opts?: RequestOptions): Promise<{ data: T.AgentRun[] }> {
    return this.core.request({ method: 'GET', path: `/v1/feedback/${enc(feedbackId)}/agent-runs` }, opts)
  }
}

class Events {
  constructor(private readonly core: Core) {}

  /** The pull feed: `await` for `{ data, nextAfter }`; `for await` reads every event up to now. */
  list(params: T.EventListParams = {}, opts?: RequestOptions): PagedList<T.FixloopEvent, T.EventPage> {
    return new PagedList(
      (after) => this.core.request<T.EventPage>({ method: 'GET', path: '/v1/events', query: { ...params, after: (after as number) ?? params.after } }, opts),
      (page) => ({ data: page.data, next: page.data.length > 0 ? page.nextAfter : null }),
    )
  }

  /**
   * The live stream (Server-Sent Events). Reconnects by itself after a dropped connection, resuming
   * exactly after the last event seen (Last-Event-ID); ends when `signal` aborts. Throws a StreamError
   * when an event passes MAX_EVENT_CHARS (1 MiB) without its newline, instead of buffering without end.
   */
  async *stream(params: Omit<T.EventListParams, 'limit'> = {}, opts: RequestOptions = {}): AsyncGenerator<T.FixloopEvent> {
    let lastSeq = params.after
    for (let failures = 0, floorMs = 0; ; floorMs = 0) {
      const url = this.core.url('/v1/events/stream', { types: params.types, appId: params.appId, after: lastSeq })
      const headers: Record<string, string> = { ...this.core.headers({ method: 'GET', path: '' }, opts), accept: 'text/event-stream' }
      if (lastSeq !== undefined) headers['last-event-id'] = String(lastSeq)
      // One signal per connection, tied to the caller's and untied when the connection ends: `send` keeps
      // its listener for as long as the body is read, and on the caller's own signal that was one more
      // listener per reconnect, for as long as the stream ran (MaxListenersExceededWarning, a leak).
      const connection = new AbortController()
      const abort = () => connection.abort(opts.signal?.reason)
      if (opts.signal?.aborted) abort()
      else opts.signal?.addEventListener('abort', abort, { once: true })
      try {
        const res = await this.core.send(url, { headers }, { ...opts, signal: connection.signal }, async (r) => r, true)
        if (!res.ok || !res.body) throw errorFromResponse(res, await res.json().catch(() => undefined))
        failures = 0
        for await (const message of readSse(res.body)) {
          const event = JSON.parse(message.data) as T.FixloopEvent
          lastSeq = event.seq
          yield event
        }
      } catch (e) {
        if (opts.signal?.aborted) return
        // A stream that breaks its framing would break it again after a reconnect.
        if (e instanceof StreamError) throw e
        const status = (e as { status?: number }).status
        if (status !== undefined && status !== 0 && status < 500 && status !== 429) throw e
        if (++failures > 8) throw e
        // Retry-After is a floor here too (spec part 8): the server's cap on open streams asks for 60 s.
        if (e instanceof FixloopError) floorMs = retryAfterMs(e.headers) ?? 0
      } finally {
        opts.signal?.removeEventListener('abort', abort)
      }
      if (opts.signal?.aborted) return
      await pause(Math.max(Math.min(500 * 2 ** failures, 8000), floorMs), opts.signal).catch(() => {})
    }
  }
}

class Webhooks {
  constructor(private readonly core: Core) {}
  /** The answer carries the signing secret `whsec_…` once; store it. */
  create(params: T.WebhookCreateParams, opts?: RequestOptions): Promise<T.WebhookCreated> {
    return this.core.request({ method: 'POST', path: '/v1/webhooks', body: params }, opts)
  }
  list(opts?: RequestOptions): Promise<{ data: T.Webhook[] }> {
    return this.core.request({ method: 'GET', path: '/v1/webhooks' }, opts)
  }
  retrieve(id: string, opts?: RequestOptions): Promise<T.Webhook> {
    return this.core.request({ method: 'GET', path: `/v1/webhooks/${enc(id)}` }, opts)
  }
  delete(id: string, opts?: RequestOptions): Promise<unknown> {
    return this.core.request({ method: 'DELETE', path: `/v1/webhooks/${enc(id)}` }, opts)
  }
  /** A new secret; the old one keeps signing too for 24 hours, so receivers can switch without a gap. */
  rotateSecret(id: string, opts?: RequestOptions): Promise<T.WebhookSecretRotated> {
    return this.core.request({ method: 'POST', path: `/v1/webhooks/${enc(id)}/rotate-secret` }, opts)
  }
  enable(id: string, opts?: RequestOptions): Promise<T.Webhook> {
    return this.core.request({ method: 'POST', path: `/v1/webhooks/${enc(id)}/enable` }, opts)
  }
  /** Sends a `webhook.test` event to the endpoint. */
  test(id: string, opts?: RequestOptions): Promise<T.WebhookTestSent> {
    return this.core.request({ method: 'POST', path: `/v1/webhooks/${enc(id)}/test` }, opts)
  }
  /** The delivery log, newest first: `await` for a page, `for await` for every delivery. */
  deliveries(id: string, params: T.DeliveryListParams = {}, opts?: RequestOptions): PagedList<T.WebhookDelivery, T.DeliveryPage> {
    return new PagedList(
      (cursor) => this.core.request<T.DeliveryPage>({ method: 'GET', path: `/v1/webhooks/${enc(id)}/deliveries`, query: { ...params, cursor: (cursor as string) ?? params.cursor } }, opts),
      (page) => ({ data: page.data, next: page.nextCursor }),
    )
  }
  redeliver(deliveryId: string, opts?: RequestOptions): Promise<T.RedeliverResult> {
    return this.core.request({ method: 'POST', path: `/v1/webhooks/deliveries/${enc(deliveryId)}/redeliver` }, opts)
  }
  /** Redelivers every failed delivery of the endpoint created in [since, until] (ISO 8601). */
  redeliverFailed(id: string, params: T.RedeliverFailedParams, opts?: RequestOptions): Promise<T.RedeliverFailedResult> {
    return this.core.request({ method: 'POST', path: `/v1/webhooks/${enc(id)}/redeliver-failed`, body: params }, opts)
  }
}
