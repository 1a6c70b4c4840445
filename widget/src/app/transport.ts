/**
 * Sending one report: user token (private mode), uploads (upload-url + PUT with retry), then
 * POST /v1/feedback with the report's one Idempotency-Key. 429 waits Retry-After plus jitter with
 * exponential backoff; a network error or 5xx leaves the report queued for later. In public mode each
 * upload-url and submission attempt carries its own proof-of-work solution when the App asks for one; a
 * refusal of the proof (403 proof_of_work_required / proof_of_work_invalid) fetches a new challenge and
 * retries once.
 */
import { saveReport, type PendingBlob, type QueuedReport } from './queue'
import { PROOF_HEADER, type Proofs } from './proof'
import { stringify } from '../json'

export type SendResult =
  | { kind: 'sent'; id: string; status: string }
  | { kind: 'later'; status: number; code: string; message: string }
  | { kind: 'rejected'; status: number; code: string; message: string }
  /** Private mode: the page's user is not the report's owner; it waits for its owner (nothing was sent). */
  | { kind: 'held'; status: 0; code: 'other_user'; message: string }

class HttpFailure extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly retryAfterMs?: number) {
    super(message)
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const MAX_429_WAIT_MS = 60_000
const MAX_ATTEMPTS = 5
/**
 * The most one send waits out 429s in all before the report is kept to send later: the reporter watches
 * "Sending…" meanwhile (five waits of a Retry-After of 2 s were 29 s of it). Kept, it goes with the queue's
 * next try (30 s later, back online, the next page), which waits out the server's Retry-After again.
 */
const MAX_429_TOTAL_MS = 8_000

/** What sending needs of a token source. */
export type Tokens = Pick<TokenSource, 'enabled' | 'current'>

/** Caches the customer's user token and refreshes it shortly before its exp. */
export class TokenSource {
  private token?: string
  private expMs = 0
  constructor(private readonly get?: () => Promise<string>) {}
  get enabled(): boolean {
    return !!this.get
  }
  /** The cached token while fresh, without asking the page for one (naming the address must not cost a token call). */
  peek(): string | undefined {
    return this.token && Date.now() <= this.expMs - 30_000 ? this.token : undefined
  }
  /** The page's user signed out (Fixloop.resetUser): the next call asks the page again. */
  forget(): void {
    this.token = undefined
    this.expMs = 0
  }
  async current(force = false): Promise<string | undefined> {
    if (!this.get) return undefined
    if (force || !this.token || Date.now() > this.expMs - 30_000) {
      this.token = await this.get()
      this.expMs = expiryOf(this.token)
    }
    return this.token
  }
}

/** A user token's claims, read (not verified: the server verifies the token); {} when unreadable. */
function claimsOf(token: string | undefined): Record<string, any> {
  if (!token) return {}
  try {
    const bytes = atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'))
    let text = bytes
    try {
      text = decodeURIComponent(escape(bytes)) // UTF-8 (an address outside ASCII)
    } catch {
      // not UTF-8: read as it is
    }
    const claims = JSON.parse(text)
    return claims && typeof claims === 'object' ? claims : {}
  } catch {
    return {}
  }
}

function expiryOf(token: string): number {
  const exp = claimsOf(token).exp
  return typeof exp === 'number' ? exp * 1000 : 0
}

/** The user a token names (its `sub`), or '' when it names none: whose report a queued one is. */
export function tokenSub(token: string | undefined): string {
  const sub = claimsOf(token).sub
  return typeof sub === 'string' ? sub : ''
}

/** The page's user is not the queued report's owner (private mode): nothing is sent for it. */
class OtherUser extends Error {}

/**
 * The token source a queued report is sent with: every token it hands out (the first, a refresh before
 * exp, the one asked again after a 401) must name the report's owner. A queue on a shared browser holds
 * the reports of whoever used the site; without this, user B's next page load sent user A's waiting
 * report (text, screenshot, replay) as B's: filed under B, listed in B's "Your reports", mailed to B.
 * `bind`: the report has no owner yet (no token could be had when it was written) and this page wrote
 * it, so the page's user is its owner; a report without owner found on a later page load waits.
 */
function ownersTokens(tokens: TokenSource, report: QueuedReport, bind: boolean): Tokens {
  if (!tokens.enabled) return tokens
  const check = (token: string | undefined) => {
    const sub = tokenSub(token)
    // A token naming nobody is no user token the server takes: it refuses it (401), as it always did, and
    // the report is not held as another user's (it would wait forever, and the page say it was saved).
    if (!sub) return token
    if (report.owner === undefined && bind) {
      report.owner = sub
      void saveReport(report).catch(() => undefined) // a later page load knows whose it is
    }
    if (report.owner !== sub) throw new OtherUser('this report waits for the user who wrote it')
    return token
  }
  return { enabled: true, current: async (force = false) => check(await tokens.current(force)) }
}

async function failureOf(res: Response): Promise<HttpFailure> {
  let code = 'http_' + res.status
  let message = res.statusText
  try {
    const body = await res.json()
    code = body?.error?.code ?? code
    message = body?.error?.message ?? message
  } catch {
    // not the envelope (a proxy's error page)
  }
  const ra = Number(res.headers.get('retry-after'))
  return new HttpFailure(res.status, code, message, Number.isFinite(ra) && ra >= 0 ? ra * 1000 : undefined)
}

const PROOF_REFUSALS = ['proof_of_work_required', 'proof_of_work_invalid']

/**
 * One request with the 429 policy, the 401 invalid_user_token refresh and (public mode, `proofs` given)
 * a fresh proof-of-work solution per attempt; throws HttpFailure.
 */
async function request(http: typeof fetch, tokens: Tokens, build: (token?: string) => [string, RequestInit], proofs?: Proofs, more = false): Promise<Response> {
  let refreshed = false
  let reproved = false
  let waited = 0
  for (let attempt = 0; ; attempt++) {
    const token = await tokens.current()
    const [url, init] = build(token)
    if (proofs && !tokens.enabled) {
      const proof = await proofs.take(more)
      if (proof) init.headers = { ...(init.headers as Record<string, string>), [PROOF_HEADER]: proof }
    }
    let res: Response
    try {
      res = await http(url, init)
    } catch (e) {
      throw new HttpFailure(0, 'network_error', (e as Error).message || 'network error')
    }
    if (res.ok) return res
    const failure = await failureOf(res)
    if (res.status === 401 && failure.code === 'invalid_user_token' && tokens.enabled && !refreshed) {
      refreshed = true
      await tokens.current(true)
      continue
    }
    if (res.status === 403 && PROOF_REFUSALS.includes(failure.code) && proofs && !tokens.enabled && !reproved) {
      reproved = true
      proofs.discard()
      continue
    }
    if (res.status === 429 && attempt < MAX_ATTEMPTS) {
      const backoff = Math.max(failure.retryAfterMs ?? 0, 500 * 2 ** attempt)
      if (backoff > MAX_429_WAIT_MS || waited + backoff > MAX_429_TOTAL_MS) throw failure
      const wait = backoff + Math.random() * 250
      waited += wait
      await sleep(wait)
      continue
    }
    throw failure
  }
}

function authHeaders(publicKey: string, token?: string): Record<string, string> {
  const h: Record<string, string> = { authorization: `Bearer ${publicKey}` }
  if (token) h['x-service-user-token'] = token
  return h
}

let replayWarned = false

/** A replay the server will not take (4xx other than a wait): the report goes without it. */
const refusesReplay = (e: unknown): e is HttpFailure => e instanceof HttpFailure && e.status >= 400 && e.status < 500 && e.status !== 408 && e.status !== 429

async function upload(http: typeof fetch, report: QueuedReport, tokens: Tokens, proofs?: Proofs): Promise<void> {
  for (const item of report.blobs) {
    if (item.uploadedKey || item.dropped) continue
    try {
      item.uploadedKey = await uploadOne(http, report, item, tokens, proofs)
    } catch (e) {
      if (item.kind !== 'replay' || !refusesReplay(e)) throw e
      item.dropped = true
      if (!replayWarned) console.warn('[fixloop] the session replay was refused; the report is sent without it:', e.code, e.message)
      replayWarned = true
    }
    await saveReport(report).catch(() => undefined)
  }
}

async function uploadOne(http: typeof fetch, report: QueuedReport, item: PendingBlob, tokens: Tokens, proofs?: Proofs): Promise<string> {
  const res = await request(http, tokens, (token) => [
    `${report.endpoint}/v1/feedback/upload-url`,
    {
      method: 'POST',
      headers: { ...authHeaders(report.publicKey, token), 'content-type': 'application/json' },
      body: stringify({ contentType: item.contentType, byteSize: item.blob.size, kind: item.kind, ...(item.filename ? { filename: item.filename } : {}) }),
    },
  ], proofs, true)
  const grant = (await res.json()) as { key: string; url: string; method: string; headers: Record<string, string> }
  for (let attempt = 0; ; attempt++) {
    try {
      const put = await http(grant.url, { method: grant.method || 'PUT', headers: grant.headers, body: item.blob })
      if (put.ok) break
      if (put.status < 500 || attempt >= 2) throw await failureOf(put)
    } catch (e) {
      if (e instanceof HttpFailure || attempt >= 2) throw e instanceof HttpFailure ? e : new HttpFailure(0, 'network_error', String(e))
    }
    await sleep(400 * 2 ** attempt + Math.random() * 200)
  }
  return grant.key
}

function finalBody(report: QueuedReport, privateMode: boolean): string {
  const payload = { ...report.payload }
  if (privateMode) delete payload.identity
  const attachments = report.blobs
    .filter((b) => b.slot === 'attachment' && !b.dropped)
    .map((b) => ({ key: b.uploadedKey!, kind: b.kind, contentType: b.contentType, byteSize: b.blob.size, ...(b.width ? { width: b.width, height: b.height } : {}) }))
  if (attachments.length) payload.attachments = attachments
  const component = report.blobs.find((b) => b.slot === 'component')
  if (component && payload.componentTarget) payload.componentTarget = { ...payload.componentTarget, screenshotKey: component.uploadedKey }
  return stringify(payload)
}

/**
 * Uploads and submits one queued report. `http` is the page's fetch from before the widget wrapped it,
 * so the widget's own calls never show up in a report's request summary.
 */
export async function sendReport(http: typeof fetch, report: QueuedReport, pageTokens: TokenSource, proofs?: Proofs, bind = false): Promise<SendResult> {
  try {
    // Every request takes its token from here, before it is made: another user's page sends nothing.
    const tokens = ownersTokens(pageTokens, report, bind)
    await upload(http, report, tokens, proofs)
    const res = await request(http, tokens, (token) => [
      `${report.endpoint}/v1/feedback`,
      {
        method: 'POST',
        headers: { ...authHeaders(report.publicKey, token), 'content-type': 'application/json', 'idempotency-key': report.key },
        body: finalBody(report, pageTokens.enabled),
      },
    ], proofs)
    const body = (await res.json()) as { id: string; status: string }
    return { kind: 'sent', id: body.id, status: body.status }
  } catch (e) {
    if (e instanceof OtherUser) return { kind: 'held', status: 0, code: 'other_user', message: e.message }
    const f = e instanceof HttpFailure ? e : new HttpFailure(0, 'network_error', String(e))
    if (f.status === 0) void hintRefusedOrigin(http, report.endpoint)
    const retryable = f.status === 0 || f.status >= 500 || f.status === 429 || f.status === 408
    return { kind: retryable ? 'later' : 'rejected', status: f.status, code: f.code, message: f.message }
  }
}

let originHinted = false

/**
 * A network error while fixloop answers its own script: the browser refused fixloop's answer to this page,
 * most often because the page's origin is not among the App's allowed origins (the preflight is refused,
 * so the 403 origin_not_allowed never reaches the page, and the reporter reads "Your report couldn’t be sent just now").
 * The report stays queued, since a proxy's error page without CORS headers looks the same, but the
 * integrator gets one line in the console saying where to look. Once per page.
 */
async function hintRefusedOrigin(http: typeof fetch, endpoint: string): Promise<void> {
  if (originHinted) return
  originHinted = true
  try {
    // widget.js is readable from every origin: its answer proves fixloop is reachable from here.
    const res = await http(`${endpoint}/widget.js`, { method: 'HEAD', cache: 'no-store' })
    if (res.ok) console.warn(`[fixloop] ${endpoint} answers, but the browser refused its answer to this page: is ${location.origin} one of the App's allowed origins? (fixloop app update APP_ID --allowed-origins …; docs/widget.md, "Install") If it is, the request failed on its way (a proxy or filter between this page and fixloop): the browser's network panel shows where.`)
  } catch {
    // Unreachable too: offline indeed, nothing to hint.
  }
}

/** The address in a user token's ctx.email (read, not verified: the server verifies the token), if any. */
export function tokenEmail(token: string | undefined): string | undefined {
  const email = claimsOf(token).ctx?.email
  return typeof email === 'string' && email.length > 0 ? email : undefined
}

export interface MyReport {
  id: string
  status: string
  createdAt: string
  text: string
}

/** GET /v1/me/feedback: the signed-in user's reports (first page), with the token refresh of every call. */
export async function listMine(http: typeof fetch, endpoint: string, publicKey: string, tokens: TokenSource): Promise<MyReport[]> {
  // Always the page's current user: a cached token may be a user who signed out since (a single-page app
  // switches users without a reload), and the list is that user's reports. The fresh token is cached.
  await tokens.current(true)
  const res = await request(http, tokens, (token) => [`${endpoint}/v1/me/feedback?limit=20`, { headers: authHeaders(publicKey, token) }])
  const body = (await res.json()) as { data: MyReport[] }
  return body.data
}
