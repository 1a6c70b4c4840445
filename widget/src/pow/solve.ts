/**
 * The ALTCHA proof-of-work search: the n in [from, to) with SHA-256(salt + n) === challenge (hex).
 * One bounded step of the search, shared by the Worker and the main-thread fallback (which calls it in
 * short slices between setTimeout yields).
 */
import { sha256Hex } from './sha256'

export interface PowChallenge {
  algorithm: string
  challenge: string
  maxnumber: number
  salt: string
  signature: string
}

/** Searches [from, min(to, maxnumber + 1)); returns the number, or -1 when it is not in that range. */
export function searchRange(c: Pick<PowChallenge, 'challenge' | 'salt' | 'maxnumber'>, from: number, to: number): number {
  const end = Math.min(to, c.maxnumber + 1)
  const want = c.challenge.toLowerCase()
  for (let n = from; n < end; n++) if (sha256Hex(c.salt + n) === want) return n
  return -1
}
