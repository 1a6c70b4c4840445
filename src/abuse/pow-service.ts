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
import { FloodMeter } from './flood-meter'
import { createPowSingleUse } from './pow-single-use'
import { isProofOfWorkLevel, POW_CHALLENGE_TTL_MS, requiredMaxnumber, type ProofOfWorkLevel } from './difficulty'
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

export function createPowService(deps: { key: Uint8Array; clock: Clock; repo: AbuseRepo; redis?: RedisLink; log?: Logger; meter?: FloodMeter }) {
  const { key, clock, repo } = deps
  const meter = deps.meter ?? new FloodMeter(clock)
  const singleUse = createPowSingleUse(deps)
  let lastPurge = 0

  /** Counts one public request of `ip` to `appId`; the difficulty required now. */
  function required(app: PowApp, ip: string): number {
    const appPerMinute = meter.hit(`app:${app.id}`)
    const addressPerMinute = meter.hit(`ip:${app.id}|${ip}`)
    return requiredMaxnumber(levelOf(app), { appPerMinute, addressPerMinute })
  }

  async function claim(s: SolvedChallenge): Promise<boolean> {
    const now = clock.now()
    if (now - lastPurge > PURGE_EVERY_MS) {
      lastPurge = now
      repo.purgePow(now).catch((e) => deps.log?.warn('purging spent proofs of work failed', { error: e instanceof Error ? e.message : String(e) }))
    }
    return singleUse.claim(s)
  }

  return {
    meter,

    /** GET /v1/widget/challenge: a fresh challenge at the difficulty required now (null when the App asks none). */
    challenge(app: PowApp, ip: string): ChallengeAnswer {
      const difficulty = levelOf(app)
      if (difficulty === 'off') return { required: false, difficulty, challenge: null }
      const max = required(app, ip)
      if (max === 0) return { required: false, difficulty, challenge: null }
      return { required: true, difficulty, challenge: createPowChallenge(key, app.id, max, clock.now() + POW_CHALLENGE_TTL_MS) }
    },

    /**
     * A public-mode request to an App that asks for proof of work: refuses (ApiError) a missing, malformed,
     * forged, expired, other App's, too easy or already used solution; otherwise spends it. Returns the
     * solved challenge, or undefined when the App asks none (the header is then ignored).
     */
    async check(app: PowApp, ip: string, header: string | null): Promise<SolvedChallenge | undefined> {
      // The hot path of an App without the defence: nothing counted, nothing read.
      if (levelOf(app) === 'off') return undefined
      const max = required(app, ip)
      if (max === 0) return undefined
      if (header === null || header === '') throw new ApiError('proof_of_work_required', { reason: 'missing', difficulty: levelOf(app) })
      const solution = decodePowHeader(header)
      if (!solution) throw new ApiError('proof_of_work_invalid', { reason: 'malformed' })
      const verdict = verifyPowSolution(key, solution, clock.now())
      if (!verdict.ok) throw new ApiError(verdict.code, { reason: verdict.reason })
      if (verdict.solved.appId !== app.id) throw new ApiError('proof_of_work_invalid', { reason: 'wrong_app' })
      if (verdict.solved.maxnumber < max) throw new ApiError('proof_of_work_invalid', { reason: 'too_easy', required: max })
      // A replayed solution counts as missing (CONTRACT "Abuse defence").
      if (!(await claim(verdict.solved))) throw new ApiError('proof_of_work_required', { reason: 'replayed', difficulty: levelOf(app) })
      return verdict.solved
    },
  }
}
export type PowService = ReturnType<typeof createPowService>
