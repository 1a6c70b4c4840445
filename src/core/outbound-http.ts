/**
 * The one HTTP client of every outbound call that reads a remote answer: issue trackers (GitHub, GitLab,
 * Gitea, Jira, Linear), git hosts (opening and polling pull requests) and Slack. A tenant (an Org owner,
 * an sk_ key) chooses where most of these go, so the remote end is treated as hostile:
 *
 * - the answer is read as a stream and given up past ANSWER_MAX_BYTES (a declared Content-Length past it
 *   is refused before a byte is read): a host that streams gigabytes costs 2 MiB, not the process;
 * - one deadline covers the whole exchange (connect, headers AND body): a host that trickles its body
 *   past it ends the call with an OutboundError, never a hang and never a stray timeout exception;
 * - redirects are never followed (node:http does not): a 3xx is an answer like any other for the caller
 *   to refuse, so a credential header is never carried to another URL;
 * - when an address guard checked the host (`addresses`), the connection goes to exactly those addresses
 *   (a pinned `lookup`, as the webhook sender and the SMTP transport do; TLS still verifies the host
 *   name): a DNS answer that changes between the check and the connect (rebinding) cannot reach a
 *   private address.
 *
 * Every failure is an OutboundError; the caller maps it to its own error (TrackerError, HostError…).
 */
import type { ClientRequest, IncomingHttpHeaders } from 'node:http'
import type { LookupFunction } from 'node:net'
import { httpClientFor } from './node-http'
import type { CheckedAddress } from './address-guard'

/** The most of a remote answer fixloop reads (2 MiB): larger answers are refused. */
export const ANSWER_MAX_BYTES = 2 * 1024 * 1024

export interface OutboundRequest {
  url: string
  method: 'GET' | 'POST' | 'PUT' | 'PATCH'
  headers: Record<string, string>
  /** The request body, already serialized. */
  body?: string
  /** The deadline of the whole exchange, body included. */
  timeoutMs: number
  signal?: AbortSignal
  /** Defaults to ANSWER_MAX_BYTES. */
  maxBytes?: number
  /**
   * The addresses an address guard checked for the URL's host: the connection goes to exactly these, in
   * order. Unset: the host is resolved once, by the connection itself.
   */
  addresses?: CheckedAddress[]
}

export interface OutboundAnswer {
  status: number
  headers: Headers
  /** The body as UTF-8 text (at most maxBytes bytes of it). */
  text: string
}

/**
 * unreachable: no answer (network, refused, reset, aborted); timeout: the deadline passed (before or
 * while the body came); too_large: the answer is longer than maxBytes.
 */
export type OutboundFailure = 'unreachable' | 'timeout' | 'too_large'

export class OutboundError extends Error {
  constructor(
    readonly failure: OutboundFailure,
    message: string,
    /** The answer's status when the failure came after the headers. */
    readonly status: number | null = null,
  ) {
    super(message)
  }
}

/** A lookup that answers with the checked addresses only, whatever the name resolves to now. */
export function pinnedLookup(addresses: CheckedAddress[]): LookupFunction {
  return ((_host: string, options: { all?: boolean } | undefined, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, addresses)
    else callback(null, addresses[0].address, addresses[0].family)
  }) as unknown as LookupFunction
}

function headersOf(raw: IncomingHttpHeaders): Headers {
  const out = new Headers()
  for (const [k, v] of Object.entries(raw)) {
    if (typeof v === 'string') out.set(k, v)
    else if (Array.isArray(v)) for (const one of v) out.append(k, one)
  }
  return out
}

/** Sends one request and reads its answer within the bounds above; every failure an OutboundError. */
export function requestBounded(r: OutboundRequest): Promise<OutboundAnswer> {
  const max = r.maxBytes ?? ANSWER_MAX_BYTES
  let url: URL
  try {
    url = new URL(r.url)
  } catch {
    return Promise.reject(new OutboundError('unreachable', 'not an absolute URL'))
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return Promise.reject(new OutboundError('unreachable', `only http and https URLs (got ${url.protocol})`))
  const body = r.body === undefined ? undefined : Buffer.from(r.body, 'utf8')
  // The deadline starts once the client module is loaded (the first call's few milliseconds are fixloop's, not the host's).
  return httpClientFor(url.protocol).then((lib) => sendWith(lib, url, r, body, max))
}

function sendWith(lib: Awaited<ReturnType<typeof httpClientFor>>, url: URL, r: OutboundRequest, body: Buffer | undefined, max: number): Promise<OutboundAnswer> {
  return new Promise<OutboundAnswer>((resolve, reject) => {
    let settled = false
    let req: ClientRequest | undefined
    const end = (outcome: { ok: OutboundAnswer } | { error: OutboundError }) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      r.signal?.removeEventListener('abort', onAbort)
      if ('ok' in outcome) resolve(outcome.ok)
      else {
        // Stop reading: the rest of an endless or trickling answer is never pulled in.
        req?.destroy()
        reject(outcome.error)
      }
    }
    const timer = setTimeout(() => end({ error: new OutboundError('timeout', `no complete answer within ${r.timeoutMs} ms`, status) }), r.timeoutMs)
    const onAbort = () => end({ error: new OutboundError('unreachable', 'the call was cancelled', status) })
    let status: number | null = null
    if (r.signal?.aborted) return onAbort()
    r.signal?.addEventListener('abort', onAbort, { once: true })

    req = lib.request(
      url,
      {
        method: r.method,
        headers: { ...r.headers, ...(body ? { 'content-length': String(body.byteLength) } : {}) },
        agent: false,
        ...(r.addresses && r.addresses.length > 0 ? { lookup: pinnedLookup(r.addresses) } : {}),
      },
      (res) => {
        status = res.statusCode ?? 0
        const declared = Number(res.headers['content-length'])
        if (Number.isFinite(declared) && declared > max) {
          end({ error: new OutboundError('too_large', `answered ${status} with ${declared} bytes, more than the ${max} read at most`, status) })
          return
        }
        const chunks: Buffer[] = []
        let size = 0
        res.on('data', (chunk: Buffer) => {
          size += chunk.byteLength
          if (size > max) end({ error: new OutboundError('too_large', `answered ${status} with more than the ${max} bytes read at most`, status) })
          else chunks.push(chunk)
        })
        res.on('end', () => end({ ok: { status: status ?? 0, headers: headersOf(res.headers), text: Buffer.concat(chunks).toString('utf8') } }))
        res.on('error', (e: NodeJS.ErrnoException) => end({ error: new OutboundError('unreachable', `the answer broke off: ${e.code ?? e.message}`, status) }))
        res.on('aborted', () => end({ error: new OutboundError('unreachable', 'the answer broke off', status) }))
      },
    )
    req.on('error', (e: NodeJS.ErrnoException) => end({ error: new OutboundError('unreachable', `connection failed: ${e.code ?? e.message}`, status) }))
    req.end(body)
  })
}
