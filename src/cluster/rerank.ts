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

/** Counts of character 3-, 4- and 5-grams (letters and digits, spaces collapsed), each hashed to an int. */
export function charGrams(text: string, limit = CHAR_LIMIT): Map<number, number> {
  const lower = text.toLowerCase()
  const plain = /[^\x00-\x7f]/.test(lower) ? lower.normalize('NFKD').replace(/[\u0300-\u036f]/g, '') : lower
  const norm = ' ' + plain.replace(/[^a-z0-9]+/g, ' ').trim().slice(0, limit) + ' '
  const grams = new Map<number, number>()
  for (let i = 0; i + 3 <= norm.length; i++) {
    // FNV-1a over the gram, extended one character at a time: 3-, 4- and 5-grams from one pass.
    let h = 0x811c9dc5
    for (let n = 0; n < 5 && i + n < norm.length; n++) {
      h = Math.imul(h ^ norm.charCodeAt(i + n), 0x01000193)
      if (n >= 2) {
        const key = (h ^ n) | 0
        grams.set(key, (grams.get(key) ?? 0) + 1)
      }
    }
  }
  return grams
}

/** Cosine of sublinear-TF × IDF vectors, the IDF taken over the query and its shortlist. */
function tfidfCosines(query: Map<number, number>, docs: Map<number, number>[]): number[] {
  const df = new Map<number, number>()
  for (const d of docs) for (const g of d.keys()) df.set(g, (df.get(g) ?? 0) + 1)
  for (const g of query.keys()) df.set(g, (df.get(g) ?? 0) + 1)
  const n = docs.length + 1
  // df → idf in place: one logarithm per distinct gram, not one per (gram, document).
  for (const [g, d] of df) df.set(g, Math.log(1 + n / d))
  const weight = (g: number, tf: number) => (tf === 1 ? 1 : 1 + Math.log(tf)) * df.get(g)!
  let qNorm = 0
  const qw = new Map<number, number>()
  for (const [g, tf] of query) {
    const w = weight(g, tf)
    qw.set(g, w)
    qNorm += w * w
  }
  return docs.map((d) => {
    let dot = 0
    let dNorm = 0
    for (const [g, tf] of d) {
      const w = weight(g, tf)
      dNorm += w * w
      const q = qw.get(g)
      if (q !== undefined) dot += q * w
    }
    return qNorm === 0 || dNorm === 0 ? 0 : dot / Math.sqrt(qNorm * dNorm)
  })
}

export interface Blended {
  score: number
  /** The raw trigram cosine (today's second signal), reused for a cluster's centroid score. */
  triScore: number
  charScore: number
}

/** The blended score of each candidate (same order), each in 0..1. */
export function blend(queryText: string, candidates: { text: string; wordScore: number }[], w: BlendWeights = DEFAULT_BLEND): Blended[] {
  if (candidates.length === 0) return []
  const tri = trigrams(queryText)
  const chars = tfidfCosines(
    charGrams(queryText),
    candidates.map((c) => charGrams(c.text)),
  )
  return candidates.map((c, i) => {
    const triScore = trigramCosine(tri, trigrams(c.text))
    return { score: Math.min(1, combine(c.wordScore, triScore, chars[i], w)), triScore, charScore: chars[i] }
  })
}

/** The blend itself, for a candidate whose parts are known (a cluster's centroid word score). */
export function combine(wordScore: number, triScore: number, charScore: number, w: BlendWeights = DEFAULT_BLEND): number {
  const today = w.todayWordWeight * wordScore + (1 - w.todayWordWeight) * triScore
  return w.today * today + w.words * wordScore + w.chars * charScore
}
