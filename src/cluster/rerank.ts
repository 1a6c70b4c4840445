/**
 * The second stage of ranking: the word index finds a shortlist; here each candidate gets the blended
 * score that /similar shows and the merge rules compare. Character 3–5-grams, weighted by TF-IDF over
 * the shortlist itself, catch what words miss in technical reports: identifiers glued to punctuation,
 * inflections the stemmer leaves apart, typos, partial class names in stack traces. Measured on long
 * real bug reports, the blend beat words alone for /similar R@1 and R@5 (docs/triage.md).
 */
import { trigrams } from './features'

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

/**
 * Character 3-, 4- and 5-grams (letters and digits, spaces collapsed), each hashed to an int, as a
 * sorted vector: two sorted vectors meet in one merge pass, with no hash map per comparison.
 */
export function charGrams(text: string, limit = CHAR_LIMIT): GramVector {
  const lower = text.toLowerCase()
  const plain = /[^\x00-\x7f]/.test(lower) ? lower.normalize('NFKD').replace(/[\u0300-\u036f]/g, '') : lower
  const norm = ' ' + plain.replace(/[^a-z0-9]+/g, ' ').trim().slice(0, limit) + ' '
  const all = new Int32Array(Math.max(0, 3 * (norm.length - 2)))
  let n = 0
  for (let i = 0; i + 3 <= norm.length; i++) {
    // FNV-1a over the gram, extended one character at a time: 3-, 4- and 5-grams from one pass.
    let h = 0x811c9dc5
    for (let k = 0; k < 5 && i + k < norm.length; k++) {
      h = Math.imul(h ^ norm.charCodeAt(i + k), 0x01000193)
      if (k >= 2) all[n++] = h ^ k
    }
  }
  const sorted = all.subarray(0, n).sort()
  const keys = new Int32Array(n)
  const counts = new Float32Array(n)
  let u = -1
  for (let i = 0; i < n; i++) {
    if (u >= 0 && keys[u] === sorted[i]) counts[u]++
    else {
      keys[++u] = sorted[i]
      counts[u] = 1
    }
  }
  return { keys: keys.subarray(0, u + 1), counts: counts.subarray(0, u + 1) }
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
  const qw = new Float32Array(query.keys.length)
  const qNorm = weigh(query, slots, 0, idf, qw)
  const out: number[] = []
  at = query.keys.length
  for (const d of docs) {
    if (weightBuf.length < d.keys.length) weightBuf = new Float32Array(Math.max(d.keys.length, weightBuf.length * 2))
    const dw = weightBuf
    const dNorm = weigh(d, slots, at, idf, dw)
    at += d.keys.length
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

export interface Blended {
  score: number
  /** The raw trigram cosine (today's second signal), reused for a cluster's centroid score. */
  triScore: number
  charScore: number
}

/** A report's character trigrams as a sorted vector, with the sum of its squared counts. */
interface TrigramVector {
  keys: Int32Array
  counts: Float64Array
  sumSquares: number
}

function trigramVector(text: string): TrigramVector {
  const map = trigrams(text)
  const keys = Int32Array.from(map.keys()).sort()
  const counts = new Float64Array(keys.length)
  let sumSquares = 0
  for (let i = 0; i < keys.length; i++) {
    const c = map.get(keys[i])!
    counts[i] = c
    sumSquares += c * c
  }
  return { keys, counts, sumSquares }
}

/** Cosine of two trigram count vectors (the counts are integers: every sum is exact, as with maps). */
function trigramVectorCosine(a: TrigramVector, b: TrigramVector): number {
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

interface Grams {
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
  const g = { chars: charGrams(text), tri: trigramVector(text) }
  if (recent.size >= RECENT_MAX) recent.delete(recent.keys().next().value!)
  recent.set(text, g)
  return g
}

/**
 * The blended score of each candidate (same order), each in 0..1. Candidates with the same text (a burst
 * of one templated report) are scored once: the n-gram IDF still counts each of them.
 */
export function blend(queryText: string, candidates: { id?: string; text: string; wordScore: number }[], w: BlendWeights = DEFAULT_BLEND): Blended[] {
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
  const tri = distinct.map((g) => trigramVectorCosine(query.tri, g.tri))
  return candidates.map((c, i) => {
    const k = which[i]
    return { score: Math.min(1, combine(c.wordScore, tri[k], chars[k], w)), triScore: tri[k], charScore: chars[k] }
  })
}

/** The blend itself, for a candidate whose parts are known (a cluster's centroid word score). */
export function combine(wordScore: number, triScore: number, charScore: number, w: BlendWeights = DEFAULT_BLEND): number {
  const today = w.todayWordWeight * wordScore + (1 - w.todayWordWeight) * triScore
  return w.today * today + w.words * wordScore + w.chars * charScore
}
