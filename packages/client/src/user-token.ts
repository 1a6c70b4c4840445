/**
 * signUserToken: mints a private-mode user token (spec 5.1) offline with WebCrypto — no round trip to
 * fixloop, no dependency. The secret is decoded exactly as the server decodes it: hex when it is an
 * even number of hex digits, else base64 or base64url.
 */

export interface SignUserTokenParams {
  /** The App signing secret (hex or base64), from the dashboard or `fixloop app create`. */
  secret: string
  appId: string
  /** The end user's id in your system. */
  sub: string
  /** Optional JSON object of at most 2 KB (e.g. email, plan). */
  ctx?: Record<string, unknown>
  /** 60 to 86400; default 3600. */
  expiresInSeconds?: number
  /** For tests: the issue time in epoch ms. */
  now?: number
}

const te = new TextEncoder()

/** Decodes a signing secret: hex first, then base64/base64url (what the server accepts). */
export function decodeSecret(text: string): Uint8Array<ArrayBuffer> {
  const t = text.trim()
  if (t.length > 0 && t.length % 2 === 0 && /^[0-9a-fA-F]+$/.test(t)) {
    return Uint8Array.from(t.match(/../g)!, (h) => parseInt(h, 16))
  }
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(t)) {
    const b64 = t.replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '')
    return Uint8Array.from(atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4)), (c) => c.charCodeAt(0))
  }
  throw new TypeError('fixloop: the signing secret is neither hex nor base64')
}

export function base64url(bytes: Uint8Array | string): string {
  const raw = typeof bytes === 'string' ? te.encode(bytes) : bytes
  let s = ''
  for (const b of raw) s += String.fromCharCode(b)
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

/** NUL or an unpaired UTF-16 surrogate in a string, or in a key or value of an object or array within. */
function illFormed(v: unknown): boolean {
  if (typeof v === 'string') return /\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(v)
  return v !== null && typeof v === 'object' && Object.entries(v).some(([k, x]) => illFormed(k) || illFormed(x))
}

export async function signUserToken({ secret, appId, sub, ctx, expiresInSeconds = 3600, now = Date.now() }: SignUserTokenParams): Promise<string> {
  if (!/^[0-9a-f]{24}$/.test(appId)) throw new TypeError('fixloop: appId must be a 24-character hex id')
  if (typeof sub !== 'string' || sub.length === 0 || sub.length > 256) throw new TypeError('fixloop: sub must be a string of 1 to 256 characters')
  if (!Number.isInteger(expiresInSeconds) || expiresInSeconds < 60 || expiresInSeconds > 86400) {
    throw new RangeError('fixloop: expiresInSeconds must be an integer from 60 to 86400')
  }
  if (ctx !== undefined && (ctx === null || typeof ctx !== 'object' || Array.isArray(ctx))) throw new TypeError('fixloop: ctx must be a JSON object')
  if (ctx !== undefined && te.encode(JSON.stringify(ctx)).length > 2048) throw new RangeError('fixloop: ctx must be at most 2 KB of JSON')
  // The server refuses these with 401 invalid_user_token at submission, far from here (a browser's report lost).
  if (illFormed(sub) || illFormed(ctx)) throw new TypeError('fixloop: sub and ctx must not contain NUL (U+0000) or an unpaired surrogate')
  const iat = Math.floor(now / 1000)
  const payload: Record<string, unknown> = { sub, app: appId, iat, exp: iat + expiresInSeconds }
  if (ctx !== undefined) payload.ctx = ctx
  const signingInput = `${base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))}.${base64url(JSON.stringify(payload))}`
  const key = await crypto.subtle.importKey('raw', decodeSecret(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
  const signature = new Uint8Array(await crypto.subtle.sign('HMAC', key, te.encode(signingInput)))
  return `${signingInput}.${base64url(signature)}`
}
