/**
 * SHA-256 in plain JavaScript, shaped for the proof-of-work search: the compression function works on a
 * caller's state, so the search compresses the salt's full 64-byte blocks once (the "midstate") and
 * hashes only the tail (`…salt end + n`, one or two blocks) per candidate, without allocating.
 * crypto.subtle would cost a promise per hash and exists only in secure contexts; this runs the same in
 * a Worker and in main-thread slices.
 */
const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
  0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
  0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
])
export const IV = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19])
const W = new Uint32Array(64)

/** Compresses the 64-byte block of `bytes` at `off` into `state` (8 words, changed in place). */
export function compress(state: Uint32Array, bytes: Uint8Array, off: number): void {
  for (let i = 0; i < 16; i++) {
    const j = off + i * 4
    W[i] = (bytes[j] << 24) | (bytes[j + 1] << 16) | (bytes[j + 2] << 8) | bytes[j + 3]
  }
  for (let i = 16; i < 64; i++) {
    const a = W[i - 15], b = W[i - 2]
    const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3)
    const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10)
    W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0
  }
  let a = state[0], b = state[1], c = state[2], d = state[3], e = state[4], f = state[5], g = state[6], h = state[7]
  for (let i = 0; i < 64; i++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))
    const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))
    const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0
    h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0
  }
  state[0] += a; state[1] += b; state[2] += c; state[3] += d; state[4] += e; state[5] += f; state[6] += g; state[7] += h
}

/** Writes the padding of a message of `total` bytes whose last partial block starts at buf[0] with `used` bytes; returns the blocks to compress (1 or 2). */
export function pad(buf: Uint8Array, used: number, total: number): number {
  const blocks = used + 9 > 64 ? 2 : 1
  buf.fill(0, used, blocks * 64)
  buf[used] = 0x80
  const bits = total * 8
  const end = blocks * 64
  const hi = Math.floor(bits / 0x100000000)
  buf[end - 8] = hi >>> 24; buf[end - 7] = (hi >>> 16) & 255; buf[end - 6] = (hi >>> 8) & 255; buf[end - 5] = hi & 255
  buf[end - 4] = bits >>> 24; buf[end - 3] = (bits >>> 16) & 255; buf[end - 2] = (bits >>> 8) & 255; buf[end - 1] = bits & 255
  return blocks
}

const HEX: string[] = []
for (let i = 0; i < 256; i++) HEX.push((i < 16 ? '0' : '') + i.toString(16))
export const encoder = new TextEncoder()

export function hexOf(state: Uint32Array): string {
  let out = ''
  for (let i = 0; i < 8; i++) {
    const v = state[i]
    out += HEX[v >>> 24] + HEX[(v >>> 16) & 255] + HEX[(v >>> 8) & 255] + HEX[v & 255]
  }
  return out
}

/** The lowercase hex SHA-256 digest of `text` (UTF-8). */
export function sha256Hex(text: string): string {
  const data = encoder.encode(text)
  const state = IV.slice()
  const full = data.length - (data.length % 64)
  for (let off = 0; off < full; off += 64) compress(state, data, off)
  const buf = new Uint8Array(128)
  buf.set(data.subarray(full))
  const blocks = pad(buf, data.length - full, data.length)
  for (let i = 0; i < blocks; i++) compress(state, buf, i * 64)
  return hexOf(state)
}
