/**
 * The second stage of ranking: the word index finds a shortlist; here each candidate gets the blended
 * score that /similar shows and the merge rules compare. Character 3–5-grams, weighted by TF-IDF over
 * the shortlist itself, catch what words miss in technical reports: identifiers glued to punctuation,
 * inflections the stemmer leaves apart, typos, partial class names in stack traces. Measured on long
 * real bug reports, the blend beat words alone for /similar R@1 and R@5 (docs/triage.md).
 */
import { withoutUserAgents } from './user-agent'
import { fold, GRAM_CHAR, trigramKey } from './tokenize'
import { isHighSurrogate, isLowSurrogate } from '../core/clip'

export interface BlendWeights {
  /** Today's score: word TF-IDF cosine blended with raw trigram cosine by `todayWordWeight`. */
  today: number
  todayWordWeight: number
  /** Word TF-IDF cosine alone (sublinear TF, title ×3, identifiers split). */
  words: number
  /** Character 3–5-gram TF-IDF cosine over the shortlist. */
  chars: number
}

export const DEFAULT_BLEND: BlendWeights = { today: 0.4, todayWordWeight: 0.75, words: 0.3, chars: 0.3 }

/** Characters of a report read for its n-grams: the title and the start of the body carry the bug. */
const CHAR_LIMIT = 1000

/** A report's character n-grams: distinct hashed grams in ascending order, with their counts. */
export interface GramVector {
  keys: Int32Array
  counts: Float32Array
}

/** Characters of a report read for its trigrams (as `trigrams` in tokenize.ts, which this matches). */
const TRIGRAM_LIMIT = 2000

/**
 * A text as n-grams see it, as UTF-16 codes in a reused buffer: lowercased, accents folded, every run of
 * characters other than letters, marks and digits (of any script; of ASCII a-z and 0-9) one space,
 * trimmed, cut to `limit` codes, with one space added on each side; returns the length. The same string as
 * `' ' + fold(text).replace(/[^\p{L}\p{M}\p{N}]+/gu, ' ').trim().slice(0, limit) + ' '`, built in one
 * pass that stops at `limit` (a 20 kB stack trace is not lowercased and scanned whole for its first 2,000
 * characters). Sets `normWide` when a code beyond ASCII was kept.
 */
let normBuf = new Uint16Array(TRIGRAM_LIMIT + 2)
let normWide = false
function normalize(text: string, limit: number): number {
  if (normBuf.length < limit + 2) normBuf = new Uint16Array(limit + 2)
  const out = normBuf
  // Plain ASCII is lowercased here; anything else the way tokenize.ts folds it.
  const ascii = !NON_ASCII.test(text)
  const src = ascii ? text : fold(text)
  let n = 1
  out[0] = 32
  let gap = false
  normWide = false
  for (let i = 0; i < src.length; i++) {
    let c = src.charCodeAt(i)
    if (ascii && c >= 65 && c <= 90) c |= 0x20
    // A character beyond ASCII: one code, or a surrogate pair (two codes, kept or dropped together).
    const width = isHighSurrogate(c) && isLowSurrogate(src.charCodeAt(i + 1)) ? 2 : 1
    const kept = c < 128 ? (c >= 97 && c <= 122) || (c >= 48 && c <= 57) : gramChar(src, i, width)
    if (!kept) {
      gap = true
      i += width - 1
      continue
    }
    if (gap && n > 1) {
      if (n - 1 >= limit) break
      out[n++] = 32
    }
    gap = false
    if (n - 1 + width > limit) {
      // As `.slice(0, limit)` would: the pair's first half fits, the second does not.
      if (n - 1 < limit) out[n++] = c
      break
    }
    out[n++] = c
    if (width === 2) out[n++] = src.charCodeAt(++i)
    if (c >= 128) normWide = true
  }
  out[n++] = 32
  return n
}
const NON_ASCII = /[^\x00-\x7f]/

/** Whether the character at `i` (`width` codes) is one the n-grams read; remembered per BMP code. */
const gramCharSeen = new Uint8Array(65536) // 0: not asked yet, 1: read, 2: not read
function gramChar(src: string, i: number, width: number): boolean {
  if (width === 2) return GRAM_CHAR.test(src.slice(i, i + 2))
  const c = src.charCodeAt(i)
  if (gramCharSeen[c] === 0) gramCharSeen[c] = GRAM_CHAR.test(src[i]) ? 1 : 2
  return gramCharSeen[c] === 1
}

/**
 * What a report's n-grams are read from: its text without user agents (user-agent.ts), and with the
 * body's digits blanked. Digits of the body are timestamps of pasted logs, line numbers, ports, build and
 * issue numbers: they differ between duplicates and agree between unrelated reports of the same weeks
 * (every log line of one month starts `2011-05-`), as the words' bare numbers did (features.ts drops
 * them). The title line keeps its digits (`Error 502`, `v2.3`). Measured: the real corpora with three log
 * lines pasted into every body, R@1 0.728 → 0.743 (Eclipse), 0.666 → 0.676 (Firefox); the synthetic
 * evaluation corpus, whose bodies hold versions, codes and stack-frame lines, merge recall 0.337 → 0.389,
 * R@1 0.975 → 0.982 (bench/README, "digits of the body").
 */
export function gramText(text: string): string {
  const t = withoutUserAgents(text)
  const cut = t.indexOf('\n')
  return cut === -1 ? t : t.slice(0, cut + 1) + t.slice(cut + 1).replace(DIGITS, ' ')
}
const DIGITS = /[0-9]+/g

/**
 * Character 3-, 4- and 5-grams (letters and digits, spaces collapsed), each hashed to an int, as a
 * sorted vector: two sorted vectors meet in one merge pass, with no hash map per comparison.
 */
export function charGrams(text: string, limit = CHAR_LIMIT): GramVector {
  const len = normalize(text, limit) // may grow normBuf: read it after
  return charGramsOf(normBuf, len)
}

let gramBuf = new Int32Array(3 * CHAR_LIMIT)
/** The 3-5-grams of a normalized text (`norm[0..len)`). */
function charGramsOf(norm: Uint16Array, len: number): GramVector {
  if (gramBuf.length < 3 * len) gramBuf = new Int32Array(3 * len)
  const all = gramBuf
  let n = 0
  for (let i = 0; i + 3 <= len; i++) {
    // FNV-1a over the gram, extended one character at a time: 3-, 4- and 5-grams from one pass.
    let h = 0x811c9dc5
    for (let k = 0; k < 5 && i + k < len; k++) {
      h = Math.imul(h ^ norm[i + k], 0x01000193)
      if (k >= 2) all[n++] = h ^ k
    }
  }
  const sorted = all.subarray(0, n).sort()
  // Count the distinct grams first, so the vectors are allocated at their size (no oversized copy to cut).
  let distinct = 0
  for (let i = 0; i < n; i++) if (i === 0 || sorted[i] !== sorted[i - 1]) distinct++
  const keys = new Int32Array(distinct)
  const counts = new Float32Array(distinct)
  let u = -1
  for (let i = 0; i < n; i++) {
    if (u >= 0 && keys[u] === sorted[i]) counts[u]++
    else {
      keys[++u] = sorted[i]
      counts[u] = 1
    }
  }
  return { keys, counts }
}

/**
 * Document frequencies of grams over a handful of vectors: one open-addressing table, reused by every
 * query (a generation stamp empties it in O(1)), so ranking a report allocates no table of its own.
 */
class GramCounts {
  private keys = new Int32Array(1 << 15)
  private stamp = new Uint32Array(1 << 15)
  private vals = new Uint16Array(1 << 15)
  private mask = (1 << 15) - 1
  private generation = 0

  /** Empties the table, sized for `capacity` distinct keys. */
  reset(capacity: number): void {
    if (capacity * 2 > this.keys.length) {
      let size = this.keys.length
      while (size < capacity * 2) size <<= 1
      this.keys = new Int32Array(size)
      this.stamp = new Uint32Array(size)
      this.vals = new Uint16Array(size)
      this.mask = size - 1
      this.generation = 0
    }
    if (++this.generation === 0xffffffff) {
      this.stamp.fill(0)
      this.generation = 1
    }
  }

  /** The key's slot (claimed for it if new). */
  slot(key: number): number {
    const { keys, stamp, generation, mask } = this
    let i = (Math.imul(key, 0x9e3779b1) >>> 0) & mask
    while (stamp[i] === generation && keys[i] !== key) i = (i + 1) & mask
    if (stamp[i] !== generation) {
      stamp[i] = generation
      keys[i] = key
      this.vals[i] = 0
    }
    return i
  }

  add(slot: number, times: number): void {
    // A gram is counted once per vector; a shortlist holds far fewer than 65,535 vectors.
    this.vals[slot] += times
  }

  count(slot: number): number {
    return this.vals[slot]
  }
}

const df = new GramCounts()
/** Reused buffers: each vector's slots in `df`, and one document's weights. */
let slotBuf = new Int32Array(1 << 12)
let weightBuf = new Float32Array(1 << 12)

/**
 * Sublinear-TF × IDF weights of `v` into `out` (float32, as stored weights always were), and the
 * vector's norm. `idf[d]` is the IDF of a gram held by `d` vectors; `slots` are the grams' df slots.
 */
function weigh(v: GramVector, slots: Int32Array, from: number, idf: Float64Array, out: Float32Array): number {
  let sum = 0
  for (let i = 0; i < v.keys.length; i++) {
    const tf = v.counts[i]
    out[i] = (tf === 1 ? 1 : 1 + Math.log(tf)) * idf[df.count(slots[from + i])]
    // The stored (float32) weight, as the norm has always been taken.
    const w = out[i]
    sum += w * w
  }
  return Math.sqrt(sum)
}

/**
 * Cosine of sublinear-TF × IDF vectors, the IDF taken over the query and its shortlist; `docs[k]` stands
 * for `multiplicity[k]` candidates with that same vector.
 */
function tfidfCosines(query: GramVector, docs: GramVector[], multiplicity: number[]): number[] {
  let total = query.keys.length
  for (const d of docs) total += d.keys.length
  df.reset(total)
  if (slotBuf.length < total) slotBuf = new Int32Array(Math.max(total, slotBuf.length * 2))
  const slots = slotBuf
  // One hash lookup per gram: its slot is kept for the weights below.
  let at = 0
  let n = 0
  for (let k = -1; k < docs.length; k++) {
    const v = k === -1 ? query : docs[k]
    const times = k === -1 ? 1 : multiplicity[k]
    n += times
    for (let i = 0; i < v.keys.length; i++) {
      const s = df.slot(v.keys[i])
      slots[at++] = s
      df.add(s, times)
    }
  }
  const idf = new Float64Array(n + 1)
  for (let d = 1; d <= n; d++) idf[d] = Math.log(1 + n / d)
  // The vectors' slots are in `slots` in the order they are weighed: the query, then each document.
  at = 0
  return weightedCosines(query, docs, (v, out) => {
    const norm = weigh(v, slots, at, idf, out)
    at += v.keys.length
    return norm
  })
}

/**
 * Cosine of the query's weighted vector with each document's, `weighOf(v, out)` writing a vector's
 * weights into `out` and returning its norm (the query first, then each document in order).
 */
function weightedCosines(query: GramVector, docs: GramVector[], weighOf: (v: GramVector, out: Float32Array) => number): number[] {
  const qw = new Float32Array(query.keys.length)
  const qNorm = weighOf(query, qw)
  const out: number[] = []
  for (const d of docs) {
    if (weightBuf.length < d.keys.length) weightBuf = new Float32Array(Math.max(d.keys.length, weightBuf.length * 2))
    const dw = weightBuf
    const dNorm = weighOf(d, dw)
    if (qNorm === 0 || dNorm === 0) {
      out.push(0)
      continue
    }
    // Merge join of two ascending key lists.
    let dot = 0
    const qk = query.keys
    const dk = d.keys
    for (let i = 0, j = 0; i < qk.length && j < dk.length; ) {
      const a = qk[i]
      const b = dk[j]
      if (a === b) dot += qw[i++] * dw[j++]
      else if (a < b) i++
      else j++
    }
    out.push(dot / (qNorm * dNorm))
  }
  return out
}

/**
 * Document frequencies of character n-grams over a whole App, for the n-gram IDF (`blend`'s `appGrams`).
 * Counted in a count-min sketch (two hashed tables of 16-bit counters, 256 KB per App, the smaller count
 * read): exact counts would need every distinct gram of the App kept. A removed or re-indexed report is
 * not taken off (its grams are not kept): the counts are of every report the index has seen, and `docs`
 * counts them the same way, so the ratio stays a fair IDF. Measured on the real development corpora
 * (bench/dup-corpora), IDF over the App instead of over the 15-report shortlist: /similar R@5 0.771 →
 * 0.79 (Eclipse), 0.678 → 0.71 (Firefox); tables of 2^14 and 2^18 counters gave the same within 0.004.
 */
export class AppGrams {
  private static readonly BITS = 16
  private readonly a = new Uint16Array(1 << AppGrams.BITS)
  private readonly b = new Uint16Array(1 << AppGrams.BITS)
  /** Reports counted. */
  docs = 0

  private static slotA(key: number): number {
    return Math.imul(key, 0x9e3779b1) >>> (32 - AppGrams.BITS)
  }
  private static slotB(key: number): number {
    return Math.imul(key ^ 0x5bd1e995, 0x85ebca6b) >>> (32 - AppGrams.BITS)
  }

  /** Counts a report's grams (each distinct gram once). */
  note(v: GramVector): void {
    const { a, b } = this
    for (let i = 0; i < v.keys.length; i++) {
      const x = AppGrams.slotA(v.keys[i])
      const y = AppGrams.slotB(v.keys[i])
      if (a[x] < 0xffff) a[x]++
      if (b[y] < 0xffff) b[y]++
    }
    this.docs++
  }

  /** How many counted reports hold the gram (an upper bound: a collision only adds). */
  df(key: number): number {
    return Math.min(this.a[AppGrams.slotA(key)], this.b[AppGrams.slotB(key)])
  }

  /** Bytes held (the index memory figure). */
  get bytes(): number {
    return this.a.byteLength + this.b.byteLength
  }
}

/** Below this many reports an App's own n-gram counts say little: the shortlist's IDF is used. */
export const APP_GRAMS_MIN_DOCS = 50

/** Counts a report's text in its App's n-gram frequencies (when it is indexed). */
export function noteText(grams: AppGrams, text: string): void {
  grams.note(gramsOf(text).chars)
}

/** Sublinear-TF × App-IDF weights of `v` into `out`, and the vector's norm. */
function weighByApp(v: GramVector, grams: AppGrams, out: Float32Array): number {
  const n = grams.docs + 1
  let sum = 0
  for (let i = 0; i < v.keys.length; i++) {
    const tf = v.counts[i]
    const w = (tf === 1 ? 1 : 1 + Math.log(tf)) * Math.log(1 + n / (grams.df(v.keys[i]) + 1))
    out[i] = w
    sum += w * w
  }
  return Math.sqrt(sum)
}

/** Cosine of sublinear-TF × IDF vectors, the IDF taken over the App (`grams`). */
function appTfidfCosines(query: GramVector, docs: GramVector[], grams: AppGrams): number[] {
  return weightedCosines(query, docs, (v, out) => weighByApp(v, grams, out))
}

export interface Blended {
  score: number
  /**
   * The candidate's place in the order (`rankScore`, with the App's n-gram IDF); the blended score
   * itself while the App is too small for its own n-gram counts (APP_GRAMS_MIN_DOCS).
   */
  rankScore: number
  /** The raw trigram cosine (today's second signal), reused for a cluster's centroid score. */
  triScore: number
  charScore: number
}

/** A report's character trigrams as a sorted vector, with the sum of its squared counts. */
export interface TrigramVector {
  keys: Int32Array
  counts: Float64Array
  sumSquares: number
}

/**
 * Trigram counts by symbol: ASCII in a normalized text is 37 symbols (space, 0-9, a-z), so an ASCII
 * trigram is one of 37³ slots, in the same order as its key (three 7-bit codes): counting needs no map, and sorting only
 * the distinct slots gives the keys in order.
 */
const SYMBOL = new Int8Array(128).fill(-1)
const SYMBOL_CODE = new Int32Array(37)
{
  const symbols = ' 0123456789abcdefghijklmnopqrstuvwxyz'
  for (let r = 0; r < symbols.length; r++) {
    SYMBOL[symbols.charCodeAt(r)] = r
    SYMBOL_CODE[r] = symbols.charCodeAt(r)
  }
}
const triCount = new Uint16Array(37 * 37 * 37)
const triStamp = new Uint32Array(37 * 37 * 37)
let triGeneration = 0
let triSlots = new Int32Array(TRIGRAM_LIMIT + 2)

/** The trigram vector of a normalized text (`norm[0..len)`): what `trigrams` in tokenize.ts counts, sorted. */
function trigramVectorOf(norm: Uint16Array, len: number): TrigramVector {
  if (++triGeneration === 0xffffffff) {
    triStamp.fill(0)
    triGeneration = 1
  }
  const gen = triGeneration
  if (triSlots.length < len) triSlots = new Int32Array(len)
  // Trigrams with a code beyond ASCII have hashed keys (tokenize.ts trigramKey), counted in a map: only
  // a text with such characters pays for one.
  const wide = normWide ? new Map<number, number>() : undefined
  let distinct = 0
  for (let i = 0; i + 3 <= len; i++) {
    const a = norm[i]
    const b = norm[i + 1]
    const c = norm[i + 2]
    if ((a | b | c) >= 128) {
      const key = trigramKey(a, b, c)
      wide!.set(key, (wide!.get(key) ?? 0) + 1)
      continue
    }
    const slot = SYMBOL[a] * 1369 + SYMBOL[b] * 37 + SYMBOL[c]
    if (triStamp[slot] !== gen) {
      triStamp[slot] = gen
      triCount[slot] = 0
      triSlots[distinct++] = slot
    }
    triCount[slot]++
  }
  const slots = triSlots.subarray(0, distinct).sort()
  // The hashed keys are negative, so they come first in the sorted keys.
  const wideKeys = wide ? Int32Array.from(wide.keys()).sort() : new Int32Array(0)
  const keys = new Int32Array(wideKeys.length + distinct)
  const counts = new Float64Array(wideKeys.length + distinct)
  let sumSquares = 0
  for (let i = 0; i < wideKeys.length; i++) {
    const count = wide!.get(wideKeys[i])!
    keys[i] = wideKeys[i]
    counts[i] = count
    sumSquares += count * count
  }
  for (let i = 0; i < distinct; i++) {
    const slot = slots[i]
    const a = (slot / 1369) | 0
    const b = ((slot - a * 1369) / 37) | 0
    const c = slot - a * 1369 - b * 37
    const at = wideKeys.length + i
    keys[at] = (SYMBOL_CODE[a] << 14) | (SYMBOL_CODE[b] << 7) | SYMBOL_CODE[c]
    const count = triCount[slot]
    counts[at] = count
    sumSquares += count * count
  }
  return { keys, counts, sumSquares }
}

/** Both n-gram vectors of a text, from one normalization (the char grams read the first CHAR_LIMIT characters of it). */
export function gramsFromText(text: string): Grams {
  const len = normalize(gramText(text), TRIGRAM_LIMIT)
  const tri = trigramVectorOf(normBuf, len)
  // The first CHAR_LIMIT characters and the closing space: the same text `charGrams` would normalize.
  let charLen = len
  if (len - 2 > CHAR_LIMIT) {
    // The cut may leave a trailing space (the cut fell on a gap): as `.trim().slice(0, limit)` would.
    charLen = CHAR_LIMIT + 1
    normBuf[charLen++] = 32
  }
  const chars = charGramsOf(normBuf, charLen)
  return { chars, tri }
}

/**
 * The trigram vector of a text alone (no char grams), from its first `limit` characters: what the spam
 * score's `like_spam` keeps of a spam text (src/abuse/spam-ring.ts), compared with `trigramVectorCosine`.
 */
export function trigramVector(text: string, limit = TRIGRAM_LIMIT): TrigramVector {
  // normalize() may grow normBuf: read it after the call.
  const len = normalize(text, Math.min(limit, TRIGRAM_LIMIT))
  return trigramVectorOf(normBuf, len)
}

/** Cosine of two trigram count vectors (the counts are integers: every sum is exact, as with maps). */
export function trigramVectorCosine(a: TrigramVector, b: TrigramVector): number {
  if (a.sumSquares === 0 || b.sumSquares === 0) return 0
  let dot = 0
  for (let i = 0, j = 0; i < a.keys.length && j < b.keys.length; ) {
    const x = a.keys[i]
    const y = b.keys[j]
    if (x === y) dot += a.counts[i++] * b.counts[j++]
    else if (x < y) i++
    else j++
  }
  return dot / Math.sqrt(a.sumSquares * b.sumSquares)
}

/** The query's counts spread by slot (37³, as `triCount`), zero outside a `trigramCosines` call. */
const querySlots = new Uint16Array(37 * 37 * 37)
const slotOfKey = (key: number) => SYMBOL[key >> 14] * 1369 + SYMBOL[(key >> 7) & 127] * 37 + SYMBOL[key & 127]

/**
 * `trigramVectorCosine(query, v)` for each of many vectors, the same figures: the query's counts are
 * spread into a table by slot once, and each vector is then a run of lookups. A merge per pair steps
 * through both vectors with a branch that mispredicts on mixed vocabularies (~250 µs for 200 spam texts
 * of ~160 trigrams, against ~80 µs so; bench/pow-verify.ts).
 */
export function trigramCosines(query: TrigramVector, vectors: readonly TrigramVector[]): Float64Array {
  const out = new Float64Array(vectors.length)
  if (query.sumSquares === 0) return out
  const qk = query.keys
  for (let i = 0; i < qk.length; i++) querySlots[slotOfKey(qk[i])] = query.counts[i]
  for (let v = 0; v < vectors.length; v++) {
    const { keys, counts, sumSquares } = vectors[v]
    if (sumSquares === 0) continue
    let dot = 0
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]
      dot += counts[i] * querySlots[SYMBOL[key >> 14] * 1369 + SYMBOL[(key >> 7) & 127] * 37 + SYMBOL[key & 127]]
    }
    out[v] = dot / Math.sqrt(query.sumSquares * sumSquares)
  }
  for (let i = 0; i < qk.length; i++) querySlots[slotOfKey(qk[i])] = 0
  return out
}

export interface Grams {
  chars: GramVector
  tri: TrigramVector
}

/**
 * The n-grams of recently compared texts, by text. A lead is a candidate for every report of its bug,
 * and in a burst many reports carry the same text (a templated widget report, a copied error): their
 * grams are computed once instead of once per comparison (the larger part of ranking's cost).
 */
const recent = new Map<string, Grams>()
const RECENT_MAX = 512

function gramsOf(text: string): Grams {
  const hit = recent.get(text)
  if (hit) {
    recent.delete(text)
    recent.set(text, hit) // most recently used last
    return hit
  }
  const g = gramsFromText(text)
  if (recent.size >= RECENT_MAX) recent.delete(recent.keys().next().value!)
  recent.set(text, g)
  return g
}

/**
 * The blended score of each candidate (same order), each in 0..1. Candidates with the same text (a burst
 * of one templated report) are scored once: the n-gram IDF still counts each of them.
 */
export function blend(queryText: string, candidates: { id?: string; text: string; wordScore: number }[], w: BlendWeights = DEFAULT_BLEND, appGrams?: AppGrams): Blended[] {
  if (candidates.length === 0) return []
  const query = gramsOf(queryText)
  const distinct: Grams[] = []
  const multiplicity: number[] = []
  const which = candidates.map((c) => {
    const g = gramsOf(c.text)
    let k = distinct.indexOf(g)
    if (k === -1) {
      k = distinct.push(g) - 1
      multiplicity.push(0)
    }
    multiplicity[k]++
    return k
  })
  const chars = tfidfCosines(
    query.chars,
    distinct.map((g) => g.chars),
    multiplicity,
  )
  const appChars =
    appGrams && appGrams.docs >= APP_GRAMS_MIN_DOCS
      ? appTfidfCosines(
          query.chars,
          distinct.map((g) => g.chars),
          appGrams,
        )
      : null
  const tri = distinct.map((g) => trigramVectorCosine(query.tri, g.tri))
  return candidates.map((c, i) => {
    const k = which[i]
    const score = Math.min(1, combine(c.wordScore, tri[k], chars[k], w))
    return { score, triScore: tri[k], charScore: chars[k], rankScore: appChars ? rankScore(c.wordScore, appChars[k]) : score }
  })
}

/**
 * The order of /similar's list, and the score it shows:
 * character n-grams weighed by the App's IDF (AppGrams) lead, words follow. On the real development
 * corpora (bench/dup-corpora), against the blended score's order: R@5 0.771 → 0.79 (Eclipse), 0.678 →
 * 0.71 (Firefox). The merge rules keep comparing the blended score (the n-gram IDF over the shortlist),
 * whose bars are calibrated on it: the App's IDF in that score too merged more but less surely
 * (Firefox: auto-merge precision 0.95 → 0.88, wrong attachments 0.08 → 0.18 %).
 */
export const RANK_WEIGHTS = { words: 0.3, chars: 0.7 }
export function rankScore(wordScore: number, charScore: number): number {
  return RANK_WEIGHTS.words * wordScore + RANK_WEIGHTS.chars * charScore
}

/** The blend itself, for a candidate whose parts are known (a cluster's centroid word score). */
export function combine(wordScore: number, triScore: number, charScore: number, w: BlendWeights = DEFAULT_BLEND): number {
  const today = w.todayWordWeight * wordScore + (1 - w.todayWordWeight) * triScore
  return w.today * today + w.words * wordScore + w.chars * charScore
}
