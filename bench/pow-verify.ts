/**
 * Proof of work (issue 27): what the server pays per public submission — decoding the header and
 * verifying a solution (one SHA-256 + one HMAC), making a challenge — and, for reference, what solving
 * costs a client at each difficulty with node:crypto on this machine (a browser's WebCrypto in a worker is
 * slower per hash: h-spamui measures it in Chromium). Bounded loops; prints figures and `uptime`.
 *
 *   bun bench/pow-verify.ts
 */
import { execSync } from 'node:child_process'
import { createPowChallenge, decodePowHeader, powHeaderOf, solvePowChallenge, verifyPowSolution } from '../src/abuse/pow'
import { POW_MAXNUMBER } from '../src/abuse/difficulty'
import { spamScore } from '../src/abuse/spam-score'

const key = Buffer.alloc(32, 3)
const app = 'a'.repeat(24)
const now = Date.now()

function timeIt(n: number, work: (i: number) => void): number {
  for (let i = 0; i < Math.min(n, 1000); i++) work(i) // warm-up
  const t = performance.now()
  for (let i = 0; i < n; i++) work(i)
  return ((performance.now() - t) * 1000) / n
}

const challenges = Array.from({ length: 200 }, () => createPowChallenge(key, app, 1000, now + 600_000))
const headers = challenges.map((c) => powHeaderOf(c, solvePowChallenge(c)!))
const N = 50_000
const verifyUs = timeIt(N, (i) => {
  const s = decodePowHeader(headers[i % headers.length])!
  if (!verifyPowSolution(key, s, now).ok) throw new Error('bench: a valid solution was refused')
})
const forgedUs = timeIt(N, (i) => {
  const s = decodePowHeader(headers[i % headers.length])!
  verifyPowSolution(Buffer.alloc(32, 4), s, now)
})
const createUs = timeIt(N, () => createPowChallenge(key, app, POW_MAXNUMBER.normal, now + 600_000))
const scoreUs = timeIt(N, (i) => spamScore({ addressPerMinute: 1, repeatAddresses: 1, powRaised: false, text: `The save button does nothing on page ${i} https://a.example/x`, formMs: 5000, honeypot: '' }))

console.log(`decode + verify a solution:      ${verifyUs.toFixed(2)} µs/submission (${N} runs)`)
console.log(`decode + refuse a forged one:    ${forgedUs.toFixed(2)} µs`)
console.log(`make a challenge:                ${createUs.toFixed(2)} µs`)
console.log(`spam score of a report:          ${scoreUs.toFixed(2)} µs`)

for (const [level, max] of Object.entries(POW_MAXNUMBER)) {
  const runs = level === 'normal' ? 20 : 6
  let total = 0
  for (let i = 0; i < runs; i++) {
    const c = createPowChallenge(key, app, max, now + 600_000)
    const t = performance.now()
    solvePowChallenge(c)
    total += performance.now() - t
  }
  console.log(`solve '${level}' (maxnumber ${max}) with node:crypto, one core: ${(total / runs).toFixed(0)} ms on average (${runs} runs)`)
}
console.log(execSync('uptime').toString().trim())
