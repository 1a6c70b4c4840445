/** "Did you mean …?" for mistyped commands and flags: the closest candidate by edit distance, if close. */

/** Levenshtein distance (insert, delete, substitute each cost 1). */
export function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]
    prev[0] = i
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]
      prev[j] = Math.min(prev[j] + 1, prev[j - 1] + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1))
      diag = up
    }
  }
  return prev[b.length]
}

/** The closest candidate within a third of the word's length (at least 2 edits), else undefined. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined
  let bestD = Infinity
  for (const c of candidates) {
    const d = editDistance(word, c)
    if (d < bestD) [best, bestD] = [c, d]
  }
  return bestD <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined
}

/** " Did you mean "X"?" or '' — to append to an error message. */
export function didYouMean(word: string, candidates: readonly string[], prefix = ''): string {
  const c = closest(word, candidates)
  return c ? ` Did you mean "${prefix}${c}"?` : ''
}
