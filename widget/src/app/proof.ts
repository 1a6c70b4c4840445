/**
 * Proof of work for public-mode submissions (docs/widget.md "Abuse defence"). When the App asks for it
 * (GET /v1/widget/challenge says `required`), every POST /v1/feedback and upload-url carries its own
 * solved, single-use challenge in X-Fixloop-Proof-Of-Work. One solution is prepared ahead (when the form
 * opens), so the user rarely waits at Send. Solving runs in a Worker started from a blob: URL (a Worker
 * must be same-origin with the page, so fixloop's origin cannot host it); when the page's CSP (no
 * `worker-src blob:`) or Trusted Types refuse it, the same search runs on the main thread in ~12 ms
 * slices between setTimeout yields, so typing never stalls.
 */
import { searchRange, type PowChallenge } from '../pow/solve'
import { stringify } from '../json'

declare const __POW_WORKER__: string

export const PROOF_HEADER = 'x-fixloop-proof-of-work'

interface ChallengeResponse {
  required: boolean
  challenge: PowChallenge | null
  /** The App can send the "fixed" mail (it has SMTP settings). */
  notifyEmail?: boolean
}

/**
 * Whether the App can mail the reporter (GET /v1/widget/challenge's `notifyEmail`), asked with the user
 * token in private mode; null when the answer could not be had (the caller decides what unknown means).
 */
export async function fetchMailOffered(http: typeof fetch, endpoint: string, publicKey: string, userToken?: string): Promise<boolean | null> {
  try {
    const headers: Record<string, string> = { authorization: `Bearer ${publicKey}` }
    if (userToken) headers['x-service-user-token'] = userToken
    const res = await http(`${endpoint}/v1/widget/challenge`, { headers })
    if (!res.ok) return null
    const body = (await res.json()) as ChallengeResponse
    return typeof body.notifyEmail === 'boolean' ? body.notifyEmail : null
  } catch {
    return null
  }
}

/** A prepared solution: the header value, or '' when the App does not ask for proof of work. */
interface Prepared {
  header: string
  /** ms epoch after which the server would call it expired (from the salt's `expires=`), or Infinity. */
  expiresAt: number
}

const SLICE_MS = 12
/** A solution is not used when it expires within this margin (clock skew, the request's own time). */
const EXPIRY_MARGIN_MS = 15_000

function expiryOf(salt: string): number {
  const m = /[?&]expires=(\d+)/.exec(salt)
  return m ? Number(m[1]) * 1000 : Infinity
}

function encode(c: PowChallenge, number: number): string {
  const json = stringify({ algorithm: c.algorithm, challenge: c.challenge, number, salt: c.salt, signature: c.signature })
  return btoa(json) // the fields are ASCII (hex, base64url, digits)
}

/** The search on the main thread, a slice at a time, yielding to the page between slices. */
export function solveInSlices(c: PowChallenge): Promise<number> {
  return new Promise((resolve) => {
    let n = 0
    let step = 2000
    const slice = () => {
      const started = performance.now()
      while (n <= c.maxnumber && performance.now() - started < SLICE_MS) {
        const found = searchRange(c, n, n + step)
        if (found >= 0) return resolve(found)
        n += step
      }
      if (n > c.maxnumber) return resolve(-1)
      setTimeout(slice, 0)
    }
    slice()
  })
}

export class Proofs {
  private prepared?: Promise<Prepared | undefined>
  /** Whether the App asked for proof of work in its latest challenge answer (known before the solving ends). */
  private asked?: Promise<boolean>
  /** Whether the App can send the "fixed" mail, from the same answer (null: unknown). */
  private mail?: Promise<boolean | null>
  private workerURL?: string
  private workerRefused = false

  constructor(
    private readonly http: typeof fetch,
    private readonly endpoint: string,
    private readonly publicKey: string,
    /** The blob: URL as the page's Trusted Types policy wants it (the loader's `fixloop` policy). */
    private readonly trustedWorkerURL: (url: string) => string,
    /** Called with true while a Send waits for a solution, false when it has one. */
    private readonly onWaiting: (waiting: boolean) => void = () => {},
  ) {}

  /** Starts preparing one solution (the form opened); a no-op when one is ready or being prepared. */
  prefetch(): void {
    if (!this.prepared) this.prepared = this.prepare().catch(() => undefined)
  }

  /** Whether the App can send the "fixed" mail (the latest challenge answer's `notifyEmail`); fetches one when none was asked yet. */
  mailOffered(): Promise<boolean | null> {
    if (!this.mail) this.prefetch()
    return this.mail!
  }

  /**
   * Whether the App has the abuse defence on (its latest challenge answer said `required`); fetches one
   * when none was asked yet. The widget sends its bot signals (clientSignals) only then: an App whose owner
   * left proof of work off gets exactly the reports it got before.
   */
  async defended(): Promise<boolean> {
    if (!this.asked) this.prefetch()
    return (await this.waiting(this.asked!)) ?? false
  }

  /** `p`, telling onWaiting when Send has waited for it more than 150 ms (and when the wait is over). */
  private async waiting<T>(p: Promise<T>): Promise<T> {
    let waited = false
    const timer = setTimeout(() => {
      waited = true
      this.onWaiting(true)
    }, 150)
    try {
      return await p
    } finally {
      clearTimeout(timer)
      if (waited) this.onWaiting(false)
    }
  }

  /** Drops the prepared solution (a refusal said it is used, expired or no longer enough). */
  discard(): void {
    this.prepared = undefined
  }

  /**
   * The header value for one request ('' when the App does not ask), consuming the prepared solution;
   * `more`: another request follows (the report after an upload), so the next one is prepared now. A
   * challenge that cannot be fetched gives '': the server then decides, and a refusal makes the caller
   * discard() and ask once more.
   */
  async take(more: boolean): Promise<string> {
    let pending = this.prepared
    if (!pending) pending = this.prepare().catch(() => undefined)
    this.prepared = undefined
    let got = await this.waiting(pending)
    if (got && got.expiresAt - EXPIRY_MARGIN_MS < Date.now()) got = await this.waiting(this.prepare().catch(() => undefined))
    // The App asks for proof of work: have the next one ready for the request that follows.
    if (got?.header && more) this.prefetch()
    return got?.header ?? ''
  }

  private async prepare(): Promise<Prepared | undefined> {
    const answer = this.http(`${this.endpoint}/v1/widget/challenge`, { headers: { authorization: `Bearer ${this.publicKey}` } }).then(
      (res) => (res.ok ? (res.json() as Promise<ChallengeResponse>) : undefined),
    )
    this.asked = answer.then((b) => !!b?.required, () => false)
    this.mail = answer.then((b) => (typeof b?.notifyEmail === 'boolean' ? b.notifyEmail : null), () => null)
    const body = await answer
    if (!body) return undefined
    if (!body.required || !body.challenge) return { header: '', expiresAt: Infinity }
    const c = body.challenge
    const number = await this.solve(c)
    if (number < 0) throw new Error('proof of work: no solution in range')
    return { header: encode(c, number), expiresAt: expiryOf(c.salt) }
  }

  private solve(c: PowChallenge): Promise<number> {
    if (!this.workerRefused) {
      try {
        return this.solveInWorker(c).catch(() => {
          this.workerRefused = true
          return solveInSlices(c)
        })
      } catch {
        this.workerRefused = true
      }
    }
    return solveInSlices(c)
  }

  /** Rejects (asynchronously or by throwing) when the page may not start a blob: Worker. */
  private solveInWorker(c: PowChallenge): Promise<number> {
    if (!this.workerURL) this.workerURL = URL.createObjectURL(new Blob([__POW_WORKER__], { type: 'text/javascript' }))
    const worker = new Worker(this.trustedWorkerURL(this.workerURL))
    return new Promise<number>((resolve, reject) => {
      worker.onmessage = (e: MessageEvent<number>) => {
        worker.terminate()
        resolve(e.data)
      }
      worker.onerror = (e) => {
        e.preventDefault()
        worker.terminate()
        reject(new Error('worker refused'))
      }
      worker.postMessage(c)
    })
  }
}
