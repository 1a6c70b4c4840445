/**
 * How alike two titles are by their words alone, for /similar's order. The blended score reads a title's
 * words three times over in the whole text (features.ts TITLE_WEIGHT) and its characters within the first
 * 1,000; two titles that name the same thing in the same words still rank a little higher when their
 * agreement counts on its own: people who meet one bug often type one summary and then tell different
 * stories. Measured on the real development corpora (bench/README.md, issue 41, session 25).
 */
import { words } from './tokenize'

/**
 * What the titles' cosine adds to /similar's score. Flat between 0.05 and 0.1 on the real corpora in
 * filing order; above 0.1 the first result suffers (Firefox R@1 −1 point at 0.12), so the low end.
 */
export const SIMILAR_TITLE_WEIGHT = 0.05

/** A title's distinct content words, stemmed (tokenize.ts `words`). */
export function titleWords(title: string): string[] {
  return [...new Set(words(title))]
}

/** The cosine of two titles' word sets, each word weighed by `idf` (the App's): 0 when either has none. */
export function titleCosine(a: readonly string[], b: readonly string[], idf: (word: string) => number): number {
  if (a.length === 0 || b.length === 0) return 0
  const inB = new Set(b)
  let dot = 0
  let normA = 0
  for (const w of a) {
    const weight = idf(w) ** 2
    normA += weight
    if (inB.has(w)) dot += weight
  }
  if (dot === 0) return 0
  let normB = 0
  for (const w of b) normB += idf(w) ** 2
  return dot / Math.sqrt(normA * normB)
}
