/**
 * The request engine: auth header, JSON, timeouts, and retries that are safe.
 *
 * A retry happens only when repeating the request cannot do the work twice: reads; writes the server
 * makes idempotent (an Idempotency-Key created once per call and re-sent on every attempt); and answers
 * that prove the write was refused before it ran (429, 408, 409 concurrent_update and not_yet_sanitized). Never on
 * invalid_transition or invalid_target: the same request would fail the same way.
 */
import { ConnectionError, FixloopError, TimeoutError, errorFromResponse, retryAfterMs } from './errors.js'

/** The part of `fetch` the client uses: any spec-compliant implementation fits (undici, node-fetch, a mock). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>

export interface RetryInfo {
  /** 1 for the first retry. */
  attempt: number
  delayMs: number
  error: FixloopError
  method: string
  path: string
}

export interface ClientOptions {
  /** Org API key, `sk_…`. Server side only. */
  apiKey?: string
  /** Base URL of the fixloop server, e.g. `https://fixloop.example.com`. */
  baseUrl: string
  /** App public key, `pub_…`: needed only for `feedback.submit` and `feedback.createUploadUrl`. */
  publicKey?: string
  /** Retries after the first attempt; default 2. */
  maxRetries?: number
  /** Per attempt; default 60 000 ms. */
  timeoutMs?: number
  /** A fetch implementation; default the global one. */
  fetch?: FetchLike
  /** Called before each retry (logging, metrics). */
  onRetry?: (info: RetryInfo) => void
  /** Sent with every request. */
  defaultHeaders?: Record<string, string>
  /** An `sk_` key in a browser leaks to every visitor; refused unless you set this. */
  dangerouslyAllowBrowser?: boolean
}

export interface RequestOptions {
  /** Per call: overrides the client's maxRetries. */
  maxRetries?: number
  timeoutMs?: number
  signal?: AbortSignal
  headers?: Record<string, string>
  /** POSTs only: the key to send (default: one generated per call, re-used across its retries). */
  idempotencyKey?: string
}

export interface Request {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE'
  path: string
  query?: Record<string, string | number | boolean | string[] | undefined | null>
  body?: unknown
  /** Which credential: the Org key (default) or the App public key. */
  auth?: 'sk' | 'pub'
  /** The server honours an Idempotency-Key here, so 5xx and dropped connections may be retried. */
  idempotent?: boolean
}

/** Retry-After is a floor; one beyond this is not waited for (a misbehaving proxy cannot park a caller for hours). */
const MAX_RETRY_AFTER_MS = 60_000
const MAX_BACKOFF_MS = 8_000

const isBrowser = () =>
  typeof (globalThis as { window?: { document?: unknown } }).window?.document !== 'undefined' && typeof navigator !== 'undefined'

export class Core {
  readonly baseUrl: string
  readonly maxRetries: number
  readonly timeoutMs: number
  private readonly fetchImpl: FetchLike

  constructor(readonly options: ClientOptions) {
    if (!options?.baseUrl) throw new TypeError('fixloop: baseUrl is required')
    if (options.apiKey?.startsWith('sk_') && isBrowser() && !options.dangerouslyAllowBrowser) {
      throw new TypeError(
        'fixloop: an sk_ API key must not be used in a browser (anyone could read it). Call fixloop from your server, or set dangerouslyAllowBrowser: true if you understand the risk.',
      )
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, '')
    this.maxRetries = options.maxRetries ?? 2
    this.timeoutMs = options.timeoutMs ?? 60_000
    this.fetchImpl = options.fetch ?? ((input, init) => fetch(input, init))
  }

  url(path: string, query?: Request['query']): string {
    const params = new URLSearchParams()
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v === undefined || v === null) continue
      params.set(k, Array.isArray(v) ? v.join(',') : String(v))
    }
    const qs = params.toString()
    return this.baseUrl + path + (qs ? `?${qs}` : '')
  }

  headers(req: Request, opts: RequestOptions): Record<string, string> {
    const key = req.auth === 'pub' ? this.options.publicKey : this.options.apiKey
    if (!key) throw new TypeError(`fixloop: this call needs ${req.auth === 'pub' ? 'publicKey (pub_…)' : 'apiKey (sk_…)'} in the client options`)
    const h: Record<string, string> = { accept: 'application/json', ...lowerCased(this.options.defaultHeaders), authorization: `Bearer ${key}` }
    if (req.body !== undefined) h['content-type'] = 'application/json'
    return { ...h, ...lowerCased(opts.headers) }
  }

  /** Sends the request, retrying when it is safe; resolves with the parsed JSON body. */
  async request<T>(req: Request, opts: RequestOptions = {}): Promise<T> {
    const headers = this.headers(req, opts)
    if (req.method === 'POST') headers['idempotency-key'] ??= opts.idempotencyKey ?? crypto.randomUUID()
    const maxRetries = opts.maxRetries ?? this.maxRetries
    const url = this.url(req.path, req.query)
    const body = req.body === undefined ? undefined : JSON.stringify(req.body)
    // Whether an attempt so far may have done the work though its answer was lost (a 5xx or no answer).
    let mayHaveLanded = false
    for (let attempt = 0; ; attempt++) {
      let error: FixloopError
      try {
        const [res, text] = await this.send(url, { method: req.method, headers, body }, opts, async (r) => [r, await r.text()] as const)
        const parsed = parseJson(text)
        // A 2xx that is not JSON is not fixloop's API answering (a site's or a proxy's page: a baseUrl that
        // misses a path prefix); resolving with undefined failed later, far from the cause.
        if (res.ok && (parsed !== undefined || !text)) return parsed as T
        error = res.ok
          ? new FixloopError({
              status: res.status,
              code: 'invalid_response',
              message: `the server answered ${res.status} with ${res.headers.get('content-type') ?? 'no content type'}, not JSON: is baseUrl (${this.baseUrl}) the fixloop API?`,
              requestId: res.headers.get('x-request-id'),
              headers: res.headers,
            })
          : errorFromResponse(res, parsed)
        // A retried PATCH whose first attempt landed finds the item already where it asked it to go.
        if (attempt > 0 && req.method === 'PATCH' && error.code === 'invalid_transition') {
          const d = error.details as { from?: string; to?: string } | undefined
          if (d?.from && d.from === d.to) return { id: req.path.split('/').pop(), status: d.to } as T
        }
        // Likewise a retried DELETE finds nothing left to delete: the delete is done, not NotFoundError.
        if (mayHaveLanded && req.method === 'DELETE' && error.status === 404) return { id: req.path.split('/').pop(), deleted: true } as T
      } catch (e) {
        if (!(e instanceof FixloopError)) throw e
        error = e
      }
      if (attempt >= maxRetries || !shouldRetry(req, error) || opts.signal?.aborted) throw error
      // Waiting less than Retry-After would only earn another 429; waiting longer than the cap parks the
      // caller: past it, the error (with retryAfterSeconds) is theirs to schedule.
      if ((retryAfterMs(error.headers) ?? 0) > MAX_RETRY_AFTER_MS) throw error
      mayHaveLanded ||= error.status === 0 || error.status >= 500
      const delayMs = retryDelayMs(attempt, error)
      this.options.onRetry?.({ attempt: attempt + 1, delayMs, error, method: req.method, path: req.path })
      await pause(delayMs, opts.signal)
    }
  }

  /**
   * One attempt. The timeout covers the response and, through `read`, its body; a stream (`live`) keeps
   * only the caller's signal once its headers have arrived. Network failures become ConnectionError or
   * TimeoutError; the caller's own abort is re-thrown as is.
   */
  async send<T>(url: string, init: RequestInit, opts: RequestOptions, read: (res: Response) => Promise<T>, live = false): Promise<T> {
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs
    const controller = new AbortController()
    const onAbort = () => controller.abort(opts.signal?.reason)
    if (opts.signal?.aborted) onAbort()
    opts.signal?.addEventListener('abort', onAbort, { once: true })
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      controller.abort()
    }, timeoutMs)
    try {
      const res = await this.fetchImpl(url, { ...init, signal: controller.signal })
      if (live) clearTimeout(timer)
      return await read(res)
    } catch (e) {
      if (opts.signal?.aborted) throw opts.signal.reason ?? e
      if (timedOut) throw new TimeoutError({ status: 0, code: 'timeout', message: `no response within ${timeoutMs} ms` })
      throw new ConnectionError({ status: 0, code: 'connection_error', message: `connection failed: ${(e as Error)?.message ?? e}` })
    } finally {
      clearTimeout(timer)
      if (!live) opts.signal?.removeEventListener('abort', onAbort)
    }
  }
}

/**
 * Header names are case-insensitive but object keys are not: merged as given, a caller's
 * `Idempotency-Key` went out beside ours as one header "key, <uuid>" (which the server refuses), and an
 * `Accept` beside ours as "application/json, application/json". Lower-cased, the caller's replaces ours.
 */
function lowerCased(headers: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(headers ?? {})) out[k.toLowerCase()] = v
  return out
}

function parseJson(text: string): unknown {
  if (!text) return undefined
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

function shouldRetry(req: Request, error: FixloopError): boolean {
  const { status, code } = error
  // Refused before any work was done: always safe to send again. not_yet_sanitized (409 with Retry-After)
  // answers a triage call made on a report the worker has not sanitized yet, typically right after submit.
  if (status === 429 || status === 408 || code === 'concurrent_update' || code === 'not_yet_sanitized') return true
  if (code === 'invalid_transition' || code === 'invalid_target') return false
  // The request may or may not have run: repeat only what cannot happen twice.
  const repeatable = req.method === 'GET' || req.method === 'PATCH' || req.method === 'DELETE' || req.idempotent === true
  return repeatable && (status >= 500 || status === 0)
}

/**
 * 0.5 s · 2^n capped at 8 s, with jitter; Retry-After is the floor, not the delay (spec part 8: "the value
 * is a floor; back off exponentially on repeated 429s"), so a storm of Retry-After: 1 still spreads out.
 */
function retryDelayMs(attempt: number, error: FixloopError): number {
  const backoff = Math.min(500 * 2 ** attempt, MAX_BACKOFF_MS) * (0.75 + Math.random() * 0.25)
  const floor = retryAfterMs(error.headers)
  if (floor === null) return Math.round(backoff)
  return Math.round(Math.max(backoff, floor + Math.random() * 250))
}

/**
 * Waits `ms`, or rejects with the signal's reason as soon as it aborts. The listener goes when the wait
 * ends: a stream or waitFor pausing for days on one signal must not pile one up per pause.
 */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => (clearTimeout(timer), reject(signal!.reason))
    const timer = setTimeout(() => (signal?.removeEventListener('abort', onAbort), resolve()), ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
