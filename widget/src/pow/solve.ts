/**
 * The ALTCHA proof-of-work search: the n in [from, to) with SHA-256(salt + n) === challenge (hex).
 * One bounded step of the search, shared by the Worker and the main-thread fallback (which calls it in
 * short slices between setTimeout yields). The salt's full blocks are compressed once per challenge;
 * each candidate costs one or two compressions and no allocation.
 */
import { compress, encoder, IV, pad } from './sha256'

export interface PowChallenge {
  algorithm: string
  challenge: string
  maxnumber: number
  salt: string
  signature: string
}

type Target = Pick<PowChallenge, 'challenge' | 'salt' | 'maxnumber'>

interface Prepared {
  mid: Uint32Array
  tail: Uint8Array
  prefixLen: number
  target: Uint32Array
}

let cache: { key: string; value: Prepared } | undefined

function prepare(c: Target): Prepared {
  const key = c.salt + '\n' + c.challenge
  if (cache && cache.key === key) return cache.value
  const salt = encoder.encode(c.salt)
  const full = salt.length - (salt.length % 64)
  const mid = IV.slice()
  for (let off = 0; off < full; off += 64) compress(mid, salt, off)
  const hex = c.challenge.toLowerCase()
  const target = new Uint32Array(8)
  for (let i = 0; i < 8; i++) target[i] = parseInt(hex.slice(i * 8, i * 8 + 8), 16) >>> 0
  const value = { mid, tail: salt.slice(full), prefixLen: full, target }
  cache = { key, value }
  return value
}

const state = new Uint32Array(8)
const buf = new Uint8Array(128)

/** Searches [from, min(to, maxnumber + 1)); returns the number, or -1 when it is not in that range. */
export function searchRange(c: Target, from: number, to: number): number {
  if (!/^[0-9a-fA-F]{64}$/.test(c.challenge)) return -1
  const p = prepare(c)
  const end = Math.min(to, c.maxnumber + 1)
  const t = p.target
  const tailLen = p.tail.length
  for (let n = from; n < end; n++) {
    buf.set(p.tail)
    const digits = String(n)
    for (let i = 0; i < digits.length; i++) buf[tailLen + i] = digits.charCodeAt(i)
    const used = tailLen + digits.length
    const blocks = pad(buf, used, p.prefixLen + used)
    state.set(p.mid)
    compress(state, buf, 0)
    if (blocks === 2) compress(state, buf, 64)
    if (state[0] === t[0] && state[1] === t[1] && state[2] === t[2] && state[3] === t[3] && state[4] === t[4] && state[5] === t[5] && state[6] === t[6] && state[7] === t[7]) return n
  }
  return -1
}
