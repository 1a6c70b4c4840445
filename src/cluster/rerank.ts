/**
 * The second stage of ranking: the word index finds a shortlist; here each candidate gets the blended
 * score that /similar shows and the merge rules compare. Character 3–5-grams, weighted by TF-IDF over
 * the shortlist itself, catch what words miss in technical reports: identifiers glued to punctuation,
 * inflections the stemmer leaves apart, typos, partial class names in stack traces. Measured on long
 * real bug reports, the blend beat words alone for /similar R@1 and R@5 (docs/triage.md).
 */
import { trigramCosine, trigrams } from './features'

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

/** Document frequencies of grams over a handful of vectors: an open-addressing table, no Map. */
class GramCounts {
  private keys: Int32Array
  private used: Uint8Array
  private vals: Float32Array
  private mask: number

  constructor(capacity: number) {
    let size = 1024
    while (size < capacity * 2) size <<= 1
    this.keys = new Int32Array(size)
    this.used = new Uint8Array(size)
    this.vals = new Float32Array(size)
    this.mask = size - 1
  }

  private slot(key: number): number {
    let i = Math.imul(key, 0x9e3779b1) >>> 0 & this.mask
    while (this.used[i] && this.keys[i] !== key) i = (i + 1) & this.mask
    return i
  }

  increment(key: number): void {
    const i = this.slot(key)
    this.used[i] = 1
    this.keys[i] = key
    this.vals[i]++
  }

  get(key: number): number {
    const i = this.slot(key)
    return this.used[i] ? this.vals[i] : 0
  }
}

/** Cosine of sublinear-TF × IDF vectors, the IDF taken over the query and its shortlist. */
function tfidfCosines(query: GramVector, docs: GramVector[]): number[] {
  const df = new GramCounts(docs.reduce((a, d) => a + d.keys.length, query.keys.length))
  for (const d of [query, ...docs]) for (let i = 0; i < d.keys.length; i++) df.increment(d.keys[i])
  const n = docs.length + 1
  const weights = (v: GramVector): Float32Array => {
    const w = new Float32Array(v.keys.length)
    for (let i = 0; i < w.length; i++) {
      const tf = v.counts[i]
      w[i] = (tf === 1 ? 1 : 1 + Math.log(tf)) * Math.log(1 + n / df.get(v.keys[i]))
    }
    return w
  }
  const norm = (w: Float32Array) => Math.sqrt(w.reduce((a, x) => a + x * x, 0))
  const qw = weights(query)
  const qNorm = norm(qw)
  return docs.map((d) => {
    const dw = weights(d)
    const dNorm = norm(dw)
    if (qNorm === 0 || dNorm === 0) return 0
    // Merge join of two ascending key lists.
    let dot = 0
    for (let i = 0, j = 0; i < query.keys.length && j < d.keys.length; ) {
      const a = query.keys[i]
      const b = d.keys[j]
      if (a === b) dot += qw[i++] * dw[j++]
      else if (a < b) i++
      else j++
    }
    return dot / (qNorm * dNorm)
  })
}

export interface Blended {
  score: number
  /** The raw trigram cosine (today's second signal), reused for a cluster's centroid score. */
  triScore: number
  charScore: number
}

interface Grams {
  text: string
  chars: GramVector
  tri: Map<number, number>
}

/**
 * The n-grams of recently compared reports, by id. A lead is a candidate for every report of its bug,
 * so its grams are reused instead of recomputed (the larger part of the cost for long reports).
 */
const recent = new Map<string, Grams>()
const RECENT_MAX = 256

function gramsOf(id: string | undefined, text: string): Grams {
  if (id !== undefined) {
    const hit = recent.get(id)
    if (hit && hit.text === text) {
      recent.delete(id)
      recent.set(id, hit) // most recently used last
      return hit
    }
  }
  const g = { text, chars: charGrams(text), tri: trigrams(text) }
  if (id !== undefined) {
    if (recent.size >= RECENT_MAX) recent.delete(recent.keys().next().value!)
    recent.set(id, g)
  }
  return g
}

/** The blended score of each candidate (same order), each in 0..1. `id`s let their n-grams be reused. */
export function blend(queryText: string, candidates: { id?: string; text: string; wordScore: number }[], w: BlendWeights = DEFAULT_BLEND): Blended[] {
  if (candidates.length === 0) return []
  const query = gramsOf(undefined, queryText)
  const grams = candidates.map((c) => gramsOf(c.id, c.text))
  const chars = tfidfCosines(
    query.chars,
    grams.map((g) => g.chars),
  )
  return candidates.map((c, i) => {
    const triScore = trigramCosine(query.tri, grams[i].tri)
    return { score: Math.min(1, combine(c.wordScore, triScore, chars[i], w)), triScore, charScore: chars[i] }
  })
}

/** The blend itself, for a candidate whose parts are known (a cluster's centroid word score). */
export function combine(wordScore: number, triScore: number, charScore: number, w: BlendWeights = DEFAULT_BLEND): number {
  const today = w.todayWordWeight * wordScore + (1 - w.todayWordWeight) * triScore
  return w.today * today + w.words * wordScore + w.chars * charScore
}
