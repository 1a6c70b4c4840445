/**
 * verifyWebhook: checks a Standard Webhooks 1.0 delivery (headers webhook-id, webhook-timestamp,
 * webhook-signature "v1,<base64>" — several, space-separated, during a secret rotation) and returns the
 * parsed event. Signed content is "<id>.<timestamp>.<body>", HMAC-SHA256 keyed with the base64 part of
 * the `whsec_` secret. Pass the raw body exactly as received: re-serialised JSON will not verify.
 */
import { FixloopError } from './errors.js'
import type { FixloopEvent } from './types.js'

export class WebhookVerificationError extends FixloopError {
  override name = 'WebhookVerificationError'
  constructor(message: string) {
    super({ status: 0, code: 'invalid_webhook_signature', message })
  }
}

export interface VerifyWebhookOptions {
  /** Accepted clock difference; default 300 s (replays older than this are refused). */
  toleranceSeconds?: number
  /** For tests: now in epoch ms. */
  now?: number
}

type HeaderBag = Headers | Record<string, string | string[] | undefined>

const te = new TextEncoder()

function header(headers: HeaderBag, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined
  const bag = headers as Record<string, string | string[] | undefined>
  const key = Object.keys(bag).find((k) => k.toLowerCase() === name)
  const v = key === undefined ? undefined : bag[key]
  return Array.isArray(v) ? v[0] : v
}

/**
 * The key of a `whsec_` secret. A secret that is none (empty, not base64: a wrong variable, a value cut
 * short when pasted) is a TypeError naming the mistake, not a verification failure: every delivery would
 * fail alike, and a receiver answering them 400 would only see them stop.
 */
function secretBytes(secret: string): Uint8Array<ArrayBuffer> {
  const encoded = typeof secret === 'string' ? secret.replace(/^whsec_/, '') : ''
  let bytes: Uint8Array<ArrayBuffer> | null = null
  if (/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) {
    try {
      bytes = Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0))
    } catch {
      bytes = null
    }
  }
  if (!bytes || bytes.length === 0) throw new TypeError("verifyWebhook: secret must be the endpoint's signing secret, whsec_ followed by base64 (as the API returned it)")
  return bytes
}

export async function verifyWebhook(
  body: string | Uint8Array,
  headers: HeaderBag,
  secret: string,
  { toleranceSeconds = 300, now = Date.now() }: VerifyWebhookOptions = {},
): Promise<FixloopEvent> {
  const id = header(headers, 'webhook-id')
  const timestamp = header(headers, 'webhook-timestamp')
  const signatures = header(headers, 'webhook-signature')
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature header')
  const ts = Number(timestamp)
  if (!/^\d+$/.test(timestamp) || Math.abs(now / 1000 - ts) > toleranceSeconds) throw new WebhookVerificationError('webhook-timestamp is outside the tolerance')
  const key = await crypto.subtle.importKey('raw', secretBytes(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['verify'])
  const text = typeof body === 'string' ? body : new TextDecoder().decode(body)
  const signed = te.encode(`${id}.${timestamp}.${text}`)
  for (const candidate of signatures.split(' ')) {
    const [version, value] = candidate.split(',', 2)
    if (version !== 'v1' || !value) continue
    let sig: Uint8Array<ArrayBuffer>
    try {
      sig = Uint8Array.from(atob(value), (c) => c.charCodeAt(0))
    } catch {
      continue
    }
    // subtle.verify compares in constant time.
    if (await crypto.subtle.verify('HMAC', key, sig, signed)) return JSON.parse(text) as FixloopEvent
  }
  throw new WebhookVerificationError('no webhook-signature matches this secret')
}
