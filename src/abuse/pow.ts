/**
 * Proof of work, the ALTCHA v1 scheme (https://altcha.org/docs/proof-of-work), made and checked offline
 * with node:crypto. A challenge is `challenge = SHA-256(salt + number)` for a secret random `number` in
 * [0, maxnumber], signed `signature = HMAC-SHA-256(key, challenge)`; the client finds `number` by trying
 * 0, 1, 2, … (maxnumber / 2 hashes on average) and sends back `{ algorithm, challenge, number, salt,
 * signature }`. Verifying costs one SHA-256 and one HMAC.
 *
 * Why not the npm `altcha-lib`: its current major (2.x) speaks ALTCHA's PoW v2 (key-derivation challenges)
 * by default, while the widget contract is the v1 shape; the v1 scheme is a few lines over node:crypto, and
 * fixloop needs its own checks around it anyway (the salt's App, difficulty and expiry, single use), so no
 * dependency is added to the compiled binary.
 *
 * The salt carries signed parameters like altcha-lib's (`<random hex>?expires=<unix s>&app=<id>&max=<n>&`):
 * `expires` is ALTCHA's own; `app` binds the challenge to one App; `max` records the difficulty it was made
 * at, so a solution to an easier challenge than the App now asks for is told apart. The salt ends with `&`
 * (as altcha-lib does since its salt-splicing fix): otherwise a client could move digits between the end of
 * the salt and the start of the number ("…expires=17" + "123" = "…expires=1712" + "3") and get a
 * different, still validly signed, expiry.
 */
import { createHash, createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto'

export const POW_ALGORITHM = 'SHA-256'

export interface PowChallenge {
  algorithm: typeof POW_ALGORITHM
  challenge: string
  maxnumber: number
  salt: string
  signature: string
}

/** What the client sends back (the ALTCHA payload), base64 of its JSON in X-Fixloop-Proof-Of-Work. */
export interface PowSolution {
  algorithm: string
  challenge: string
  number: number
  salt: string
  signature: string
}

/** The signed facts a verified solution carries. */
export interface SolvedChallenge {
  appId: string
  maxnumber: number
  /** Epoch ms. */
  expiresAt: number
  /** The challenge's signature: the single-use key. */
  signature: string
}

export type PowVerdict =
  | { ok: true; solved: SolvedChallenge }
  | { ok: false; code: 'proof_of_work_invalid'; reason: 'malformed' | 'forged' }
  | { ok: false; code: 'proof_of_work_required'; reason: 'expired' }

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex')
const hmacHex = (key: Uint8Array, text: string) => createHmac('sha256', key).update(text).digest('hex')

/** Makes a challenge for `appId` at difficulty `maxnumber`, valid until `expiresAt` (epoch ms). */
export function createPowChallenge(key: Uint8Array, appId: string, maxnumber: number, expiresAt: number): PowChallenge {
  const salt = `${randomBytes(12).toString('hex')}?expires=${Math.floor(expiresAt / 1000)}&app=${appId}&max=${maxnumber}&`
  const number = randomInt(0, maxnumber + 1)
  const challenge = sha256Hex(salt + number)
  return { algorithm: POW_ALGORITHM, challenge, maxnumber, salt, signature: hmacHex(key, challenge) }
}

/** Header values above this are not a solution (a real one is ~400 bytes). */
export const POW_HEADER_MAX = 2048
const HEX64 = /^[0-9a-f]{64}$/
const SALT_RE = /^[0-9a-f]{24}\?expires=(\d{1,12})&app=([0-9a-f]{24})&max=(\d{1,10})&$/

/** Decodes the header's base64 JSON; undefined when it is not a well-formed ALTCHA v1 payload. */
export function decodePowHeader(header: string): PowSolution | undefined {
  if (header.length === 0 || header.length > POW_HEADER_MAX || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(header)) return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(header, 'base64').toString('utf8'))
  } catch {
    return undefined
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined
  const p = parsed as Record<string, unknown>
  const strings = ['algorithm', 'challenge', 'salt', 'signature'] as const
  if (strings.some((k) => typeof p[k] !== 'string' || (p[k] as string).length > 512)) return undefined
  if (typeof p.number !== 'number' || !Number.isSafeInteger(p.number) || p.number < 0) return undefined
  return { algorithm: p.algorithm as string, challenge: p.challenge as string, number: p.number, salt: p.salt as string, signature: p.signature as string }
}

/**
 * Checks a solution: the right algorithm and shapes, `SHA-256(salt + number) = challenge` (the work was
 * done), the HMAC over the challenge is ours (the salt, hence App, difficulty and expiry, are ours), then
 * the expiry. The App and difficulty are compared by the caller, who knows what is required now.
 */
export function verifyPowSolution(key: Uint8Array, s: PowSolution, now: number): PowVerdict {
  if (s.algorithm !== POW_ALGORITHM || !HEX64.test(s.challenge) || !HEX64.test(s.signature)) return { ok: false, code: 'proof_of_work_invalid', reason: 'malformed' }
  const m = SALT_RE.exec(s.salt)
  if (!m) return { ok: false, code: 'proof_of_work_invalid', reason: 'malformed' }
  const maxnumber = Number(m[3])
  if (s.number > maxnumber) return { ok: false, code: 'proof_of_work_invalid', reason: 'forged' }
  const worked = Buffer.from(sha256Hex(s.salt + s.number), 'hex')
  const signed = Buffer.from(hmacHex(key, s.challenge), 'hex')
  if (!timingSafeEqual(worked, Buffer.from(s.challenge, 'hex')) || !timingSafeEqual(signed, Buffer.from(s.signature, 'hex'))) {
    return { ok: false, code: 'proof_of_work_invalid', reason: 'forged' }
  }
  const expiresAt = Number(m[1]) * 1000
  if (expiresAt <= now) return { ok: false, code: 'proof_of_work_required', reason: 'expired' }
  return { ok: true, solved: { appId: m[2], maxnumber, expiresAt, signature: s.signature } }
}

/** Solves a challenge by brute force (tests, the bench and scripts; the widget solves in a Web Worker). */
export function solvePowChallenge(c: Pick<PowChallenge, 'challenge' | 'salt' | 'maxnumber'>): number | undefined {
  for (let n = 0; n <= c.maxnumber; n++) if (sha256Hex(c.salt + n) === c.challenge) return n
  return undefined
}

/** The header value for a solved challenge. */
export function powHeaderOf(c: PowChallenge, number: number): string {
  return Buffer.from(JSON.stringify({ algorithm: c.algorithm, challenge: c.challenge, number, salt: c.salt, signature: c.signature })).toString('base64')
}
