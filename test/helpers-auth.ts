/**
 * Helpers shared by the auth, user-token, limits, CORS and tenancy suites: scenario tables, the error
 * envelope check, a leak scan over every reply, and user tokens signed locally with jose exactly as a
 * customer's backend would (or deliberately wrong, for the rejection cases).
 */
import { expect } from 'bun:test'
import { SignJWT, base64url } from 'jose'
import { call, type Reply } from './harness'

/** One row of a scenario table: a request, the expected outcome and what must never show up. */
export interface Scenario {
  name: string
  method: string
  path: string
  auth?: string
  headers?: Record<string, string>
  body?: unknown
  rawBody?: string | Uint8Array
  status: number
  code?: string
  /** Strings that must not appear anywhere in the reply (body or headers). */
  mustNotContain?: string[]
}

/** Every reply a suite received, so afterAll can assert properties of all of them (no 5xx, no leaks). */
export class ReplyLog {
  readonly replies: { label: string; reply: Reply }[] = []

  add(label: string, reply: Reply): Reply {
    this.replies.push({ label, reply })
    return reply
  }

  /** `call` that records its reply. */
  async call(base: string, method: string, path: string, opts: Parameters<typeof call>[3] = {}): Promise<Reply> {
    return this.add(`${method} ${path}`, await call(base, method, path, opts))
  }

  /** No reply was a server error. */
  expectNo5xx(): void {
    const bad = this.replies.filter((r) => r.reply.status >= 500).map((r) => `${r.label} → ${r.reply.status} ${r.reply.text.slice(0, 200)}`)
    expect(bad).toEqual([])
  }

  /** No reply (body or any header) contains any of the given secrets. */
  expectNoLeak(secrets: string[]): void {
    const found: string[] = []
    for (const { label, reply } of this.replies) {
      const haystack = reply.text + '\n' + [...reply.headers].map(([k, v]) => `${k}: ${v}`).join('\n')
      for (const s of secrets) if (s && haystack.includes(s)) found.push(`${label} leaked ${s.slice(0, 8)}…`)
    }
    expect(found).toEqual([])
  }

  /** Every reply carried an X-Request-Id header. */
  expectRequestIds(): void {
    const missing = this.replies.filter((r) => !r.reply.headers.get('x-request-id')).map((r) => `${r.label} → ${r.reply.status}`)
    expect(missing).toEqual([])
  }
}

/** Runs one scenario and checks status, error code, envelope and forbidden content. */
export async function runScenario(base: string, s: Scenario, log?: ReplyLog): Promise<Reply> {
  const r = await call(base, s.method, s.path, { auth: s.auth, headers: s.headers, body: s.body, rawBody: s.rawBody })
  log?.add(s.name, r)
  expect({ name: s.name, status: r.status, code: r.body?.error?.code }).toEqual({ name: s.name, status: s.status, code: s.code })
  if (s.code) expectEnvelope(r, s.code)
  for (const secret of s.mustNotContain ?? []) {
    expect(r.text).not.toContain(secret)
    for (const [, v] of r.headers) expect(v).not.toContain(secret)
  }
  return r
}

/** The reply is exactly the spec's envelope `{ error: { code, message, details? } }` with that code. */
export function expectEnvelope(r: Reply, code: string): void {
  expect(r.headers.get('content-type') ?? '').toStartWith('application/json')
  expect(r.body).toBeObject()
  expect(Object.keys(r.body)).toEqual(['error'])
  const e = r.body.error
  expect(e.code).toBe(code)
  expect(typeof e.message).toBe('string')
  expect(e.message.length).toBeGreaterThan(0)
  for (const k of Object.keys(e)) expect(['code', 'message', 'details']).toContain(k)
}

/** An invalid_body reply whose details.issues is a non-empty array of issues. */
export function expectInvalidBody(r: Reply): void {
  expect(r.status).toBe(400)
  expectEnvelope(r, 'invalid_body')
  expect(Array.isArray(r.body.error.details?.issues)).toBe(true)
  expect(r.body.error.details.issues.length).toBeGreaterThan(0)
}

/** A 429 with a Retry-After header holding an integer number of seconds, at least 1. */
export function expectRateLimited(r: Reply): number {
  expect(r.status).toBe(429)
  expectEnvelope(r, 'rate_limited')
  const ra = r.headers.get('retry-after')
  expect(ra).toMatch(/^[0-9]+$/)
  const seconds = Number(ra)
  expect(seconds).toBeGreaterThanOrEqual(1)
  return seconds
}

export const nowS = (): number => Math.floor(Date.now() / 1000)

/** The HMAC key of spec 5.1: the signing secret decoded from hex. */
export function keyOf(secretHex: string): Uint8Array {
  return new Uint8Array(Buffer.from(secretHex, 'hex'))
}

/**
 * Signs a JWT with exactly the given claims (nothing is added: a missing claim stays missing).
 * `key` is the HMAC key bytes (or a CryptoKey/KeyObject for asymmetric algorithms).
 */
export async function signToken(
  key: Parameters<SignJWT['sign']>[0],
  claims: Record<string, unknown>,
  header: { alg: string; typ?: string } = { alg: 'HS256', typ: 'JWT' },
): Promise<string> {
  return new SignJWT(claims).setProtectedHeader(header).sign(key)
}

/** The usual valid claims for an App: 10 minutes of life, issued now. */
export function claimsFor(appId: string, sub = 'user-1', extra: Record<string, unknown> = {}): Record<string, unknown> {
  const iat = nowS()
  return { sub, app: appId, iat, exp: iat + 600, ...extra }
}

/** A correctly signed HS256 user token for the App. */
export function userToken(secretHex: string, appId: string, sub = 'user-1', extra: Record<string, unknown> = {}): Promise<string> {
  return signToken(keyOf(secretHex), claimsFor(appId, sub, extra))
}

/** An unsigned token (`alg: none`), which jose refuses to produce. */
export function unsignedToken(claims: Record<string, unknown>): string {
  const enc = (v: unknown) => base64url.encode(JSON.stringify(v))
  return `${enc({ alg: 'none', typ: 'JWT' })}.${enc(claims)}.`
}

/** Decodes a JWT's header and payload without verifying anything. */
export function decodeJwt(token: string): { header: Record<string, unknown>; payload: Record<string, unknown> } {
  const [h, p] = token.split('.')
  const dec = (s: string) => JSON.parse(new TextDecoder().decode(base64url.decode(s)))
  return { header: dec(h), payload: dec(p) }
}

/** Every textual form a 32-byte secret might leak in. */
export function secretForms(secretHex: string): string[] {
  const bytes = Buffer.from(secretHex, 'hex')
  return [secretHex, secretHex.toUpperCase(), bytes.toString('base64'), bytes.toString('base64url')]
}

/** A POST /v1/feedback body of the given JSON size in bytes (text is made too long on purpose). */
export function jsonOfSize(bytes: number): string {
  const prefix = '{"text":"'
  const suffix = '"}'
  return prefix + 'x'.repeat(bytes - prefix.length - suffix.length) + suffix
}

/** A body streamed in chunks with no Content-Length (Transfer-Encoding: chunked). */
export function chunkedBody(text: string, chunkBytes = 1024 * 1024): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text)
  let offset = 0
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close()
      controller.enqueue(bytes.subarray(offset, offset + chunkBytes))
      offset += chunkBytes
    },
  })
}

/** Sends a body as a chunked stream and parses the reply like `call`. */
export async function postStream(base: string, path: string, auth: string, body: ReadableStream<Uint8Array>): Promise<Reply> {
  const res = await fetch(base + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json' },
    body,
  })
  const text = await res.text()
  let parsed: unknown
  try {
    parsed = text ? JSON.parse(text) : undefined
  } catch {
    parsed = undefined
  }
  return { status: res.status, headers: res.headers, body: parsed, text }
}

/**
 * Attachment references usable in a submission. When the server has the upload-url endpoint of
 * CONTRACT.md, real objects are uploaded (keys must have been issued to the App and uploaded);
 * otherwise made-up keys are used.
 */
export async function attachmentRefs(base: string, pub: string, n: number, byteSize = 4): Promise<{ key: string; kind: string; contentType: string; byteSize: number }[]> {
  const refs = []
  for (let i = 0; i < n; i++) {
    const presign = await call(base, 'POST', '/v1/feedback/upload-url', { auth: pub, body: { contentType: 'image/png', byteSize, kind: 'attachment', filename: `a${i}.png` } })
    if (presign.status === 404 || presign.status === 405) {
      refs.push({ key: `uploads/test-${i}.png`, kind: 'attachment', contentType: 'image/png', byteSize })
      continue
    }
    expect(presign.status).toBe(200)
    const put = await fetch(presign.body.url, { method: presign.body.method ?? 'PUT', headers: presign.body.headers, body: new Uint8Array(byteSize) })
    expect(put.status).toBeLessThan(300)
    refs.push({ key: presign.body.key, kind: 'attachment', contentType: 'image/png', byteSize })
  }
  return refs
}
