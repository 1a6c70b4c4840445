/**
 * Proof of work (issue 27): what the server pays per public submission — decoding the header and
 * verifying a solution (one SHA-256 + one HMAC), making a challenge — and, for reference, what solving
 * costs a client at each difficulty with node:crypto on this machine (a browser's WebCrypto in a worker is
 * slower per hash: h-spamui measures it in Chromium), and what `like_spam` costs a submission to an App
 * holding a full ring of 200 spam texts. Bounded loops; prints figures and `uptime`.
 *
 *   bun bench/pow-verify.ts
 */
import { execSync } from 'node:child_process'
import { createPowChallenge, decodePowHeader, powHeaderOf, solvePowChallenge, verifyPowSolution } from '../src/abuse/pow'
import { POW_MAXNUMBER } from '../src/abuse/difficulty'
import { spamScore } from '../src/abuse/spam-score'
import { SPAM_RING_SIZE, SpamRing } from '../src/abuse/spam-ring'
import { ManualClock } from '../src/core/clock'

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

// like_spam: a full ring of distinct pitches (~150-200 characters, as flood junk is: words drawn at random,
// so no two are near copies), and queries of a genuine report's length and of a long one (the first
// 1,000 characters are read).
const ring = new SpamRing(new ManualClock(now))
const vocab = 'buy cheap best price offer deal discount free bonus casino crypto bitcoin trading signals forex robot seo backlinks traffic ranking google website visitors followers instagram likes essay writing service pills weight loss payday loans replica watches luxury shop online order today now limited time exclusive guaranteed profit money earn home work click visit join subscribe admin hello friend partner agency marketing growth leads sales conversion'.split(' ')
let seed = 7
const rand = () => ((seed = (seed * 1664525 + 1013904223) >>> 0) / 2 ** 32)
for (let i = 0; ring.count(app) < SPAM_RING_SIZE && i < 10 * SPAM_RING_SIZE; i++) {
  const words = Array.from({ length: 22 }, () => vocab[Math.floor(rand() * vocab.length)])
  ring.add(app, `${words.join(' ')} https://shop-${i}.example/${words[0]}?ref=${i * 37}`)
}
if (ring.count(app) !== SPAM_RING_SIZE) throw new Error(`bench: the ring holds ${ring.count(app)} texts, not ${SPAM_RING_SIZE}`)
const LN = 5_000
const likeUs = timeIt(LN, (i) => ring.likeness(app, `The save button does nothing on page ${i} of the checkout, on Firefox 128. https://a.example/x`))
const longText = `Checkout fails with a 500 after the address step ${'and then the page reloads with an error about the zip code '.repeat(40)}`
const likeLongUs = timeIt(LN, (i) => ring.likeness(app, longText + i))
const emptyUs = timeIt(N, (i) => ring.likeness('an-app-with-no-spam', `The save button does nothing on page ${i}`))

console.log(`decode + verify a solution:      ${verifyUs.toFixed(2)} µs/submission (${N} runs)`)
console.log(`decode + refuse a forged one:    ${forgedUs.toFixed(2)} µs`)
console.log(`make a challenge:                ${createUs.toFixed(2)} µs`)
console.log(`spam score of a report:          ${scoreUs.toFixed(2)} µs`)
console.log(`like_spam, ${SPAM_RING_SIZE} texts held, a short report: ${likeUs.toFixed(2)} µs (${LN} runs)`)
console.log(`like_spam, ${SPAM_RING_SIZE} texts held, a ${longText.length}-char report: ${likeLongUs.toFixed(2)} µs`)
console.log(`like_spam, an App holding none:  ${emptyUs.toFixed(3)} µs`)

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
