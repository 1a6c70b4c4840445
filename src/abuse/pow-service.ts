/**
 * Proof of work for public-mode submissions (issue 27): challenges for GET /v1/widget/challenge, and the
 * check of X-Fixloop-Proof-Of-Work on POST /v1/feedback and /v1/feedback/upload-url. The verdicts are the
 * error codes of docs/api.md ("Proof of work"); the single use is claimed last, so a solution refused for
 * another reason is not spent.
 *
 * Single use (src/abuse/pow-single-use.ts): a solution's signature is remembered until its challenge
 * expires, in the database (`pow_spent`) or, in cluster mode, in Redis with SET NX PX, the database
 * standing in while Redis cannot answer. The claims made in the database during an outage are also
 * checked there for 10 minutes after it, so they are not accepted again once Redis is back; a Redis that
 * restarts without persistence still forgets the claims it held (docs/security.md).
 */
import { createHmac } from 'node:crypto'
import type { Clock } from '../core/clock'
import { ApiError } from '../core/errors'
import type { Logger } from '../core/logger'
import type { RedisLink } from '../nodes/redis-link'
import type { AbuseRepo } from './abuse-repo'
import { FloodMeter, type Meter } from './flood-meter'
import { SharedFloodMeter } from './shared-flood-meter'
import { createPowSingleUse, type PowClaim } from './pow-single-use'
import { isProofOfWorkLevel, POW_CHALLENGE_TTL_MS, REPORT_BUDGET_WINDOW_MS, requiredMaxnumber, type ProofOfWorkLevel } from './difficulty'
import { createPowChallenge, decodePowHeader, verifyPowSolution, type PowChallenge, type SolvedChallenge } from './pow'

export const POW_HEADER = 'x-fixloop-proof-of-work'
const PURGE_EVERY_MS = 60_000

export interface PowApp {
  id: string
  proofOfWork: string
}

export interface ChallengeAnswer {
  required: boolean
  difficulty: ProofOfWorkLevel
  challenge: PowChallenge | null
}

/** The HMAC key of challenges, derived from the master key (via the URL-signing key); never leaves the process. */
export function powKeyOf(urlSigningKey: Uint8Array): Buffer {
  return createHmac('sha256', urlSigningKey).update('fixloop/proof-of-work/v1').digest()
}

export function levelOf(app: PowApp): ProofOfWorkLevel {
  return isProofOfWorkLevel(app.proofOfWork) ? app.proofOfWork : 'off'
}

/** What a spent solution paid for: a report (counts against the address's report budget) or an upload URL. */
export type PowUse = 'report' | 'upload'

/**
 * `address` everywhere below is the caller's address key (src/http/client-address.ts `addressKey`: an
 * IPv6 address as its /64), never the raw address.
 */
export function createPowService(deps: { key: Uint8Array; clock: Clock; repo: AbuseRepo; redis?: RedisLink; log?: Logger; meter?: Meter; budget?: Meter }) {
  const { key, clock, repo, redis, log } = deps
  // Cluster mode: the counts of every node (shared-flood-meter.ts: pushed and read back in the background,
  // never a Redis round trip on a request's way), so spreading reports over the nodes buys nothing.
  const meter = deps.meter ?? (redis ? new SharedFloodMeter({ link: redis, clock, name: 'pow', log }) : new FloodMeter(clock))
  /** Reports per App and address key over the last hour: the report budget (difficulty.ts). */
  const budget = deps.budget ?? (redis ? new SharedFloodMeter({ link: redis, clock, name: 'budget', windowMs: REPORT_BUDGET_WINDOW_MS, log }) : new FloodMeter(clock, 50_000, REPORT_BUDGET_WINDOW_MS))
  const singleUse = createPowSingleUse(deps)
  let lastPurge = 0

  /**
   * The difficulty `address` must solve for `app` now. Reads the counts, never adds to them: asking for a
   * challenge costs nothing, so it must not raise anyone's difficulty (docs/security.md).
   */
  function required(app: PowApp, address: string): number {
    return requiredMaxnumber(levelOf(app), {
      appPerMinute: meter.rate(`app:${app.id}`),
      addressPerMinute: meter.rate(`ip:${app.id}|${address}`),
      addressReports: budget.rate(`${app.id}|${address}`),
    })
  }

  /**
   * Counts a verified solution against `address` (the flood meter; a report also against the budget).
   * Called before the single-use claim's await, in the same synchronous run as the difficulty check: a
   * burst of solutions sent at once (solved ahead, all at the easy difficulty) then sees each other's
   * counts, so the budget cannot be outrun by concurrency. A replay counts against its own sender only.
   */
  function counted(app: PowApp, address: string, use: PowUse): void {
    meter.hit(`ip:${app.id}|${address}`)
    if (use === 'report') budget.hit(`${app.id}|${address}`)
  }

  async function claim(s: PowClaim): Promise<boolean> {
    const now = clock.now()
    if (now - lastPurge > PURGE_EVERY_MS) {
      lastPurge = now
      repo.purgePow(now).catch((e) => deps.log?.warn('purging spent proofs of work failed', { error: e instanceof Error ? e.message : String(e) }))
    }
    return singleUse.claim(s)
  }

  return {
    /**
     * Spends another signed request's signature (`signature`: namespaced by the caller) until `expiresAt`,
     * like a solution: false when it was spent already. Slack's slash commands use it (their replays).
     */
    spend: (signature: string, expiresAt: number): Promise<boolean> => claim({ signature, expiresAt }),
    meter,

    /** GET /v1/widget/challenge: a fresh challenge at the difficulty required now (null when the App asks none). */
    challenge(app: PowApp, address: string): ChallengeAnswer {
      const difficulty = levelOf(app)
      if (difficulty === 'off') return { required: false, difficulty, challenge: null }
      const max = required(app, address)
      if (max === 0) return { required: false, difficulty, challenge: null }
      return { required: true, difficulty, challenge: createPowChallenge(key, app.id, max, clock.now() + POW_CHALLENGE_TTL_MS) }
    },

    /**
     * A public-mode request to an App that asks for proof of work: refuses (ApiError) a missing, malformed,
     * forged, expired, other App's, too easy or already used solution; otherwise spends it. Returns the
     * solved challenge, or undefined when the App asks none (the header is then ignored). Only a solution
     * spent here is counted (`use`: a report also counts against the address's report budget).
     */
    async check(app: PowApp, address: string, header: string | null, use: PowUse = 'report'): Promise<SolvedChallenge | undefined> {
      // The hot path of an App without the defence: nothing counted, nothing read.
      if (levelOf(app) === 'off') return undefined
      const max = required(app, address)
      if (max === 0) return undefined
      if (header === null || header === '') throw new ApiError('proof_of_work_required', { reason: 'missing', difficulty: levelOf(app) })
      const solution = decodePowHeader(header)
      if (!solution) throw new ApiError('proof_of_work_invalid', { reason: 'malformed' })
      const verdict = verifyPowSolution(key, solution, clock.now())
      if (!verdict.ok) throw new ApiError(verdict.code, { reason: verdict.reason })
      if (verdict.solved.appId !== app.id) throw new ApiError('proof_of_work_invalid', { reason: 'wrong_app' })
      if (verdict.solved.maxnumber < max) throw new ApiError('proof_of_work_invalid', { reason: 'too_easy', required: max })
      counted(app, address, use)
      // A replayed solution counts as missing (CONTRACT "Abuse defence").
      if (!(await claim(verdict.solved))) throw new ApiError('proof_of_work_required', { reason: 'replayed', difficulty: levelOf(app) })
      // The App-wide count only for work really spent: replays of one solution must not raise everyone's difficulty.
      meter.hit(`app:${app.id}`)
      return verdict.solved
    },
  }
}
export type PowService = ReturnType<typeof createPowService>
