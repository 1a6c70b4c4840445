/**
 * How much of one report's title the other report says anywhere, title or body, for /similar's order.
 * Two people who meet one bug summarise it differently, and the second often tells in the body what the
 * first put in the title ("Tab strip flickers" / a body that says the tab strip flickers when …). The
 * word score sets the whole texts side by side and is worn down by everything else they hold; this counts
 * a title's words found in the other text, weighed by how rare they are in the App, and takes the better
 * of the two directions.
 *
 * Measured on the real development corpora (bench/README.md, issue 41, session 44), /similar's 50
 * candidates re-ranked in filing order, R@1 / R@5 / R@10: Eclipse 0.744 / 0.878 / 0.911 → 0.756 / 0.883 /
 * 0.921, Firefox 0.681 / 0.856 / 0.903 → 0.690 / 0.865 / 0.909 at the weight below.
 */
import { words } from './tokenize'

/** What the better containment adds to /similar's score (flat between 0.08 and 0.12 on the real corpora). */
export const SIMILAR_CONTAINMENT_WEIGHT = 0.1

/**
 * The share of `titleWords` (distinct, as title-cosine.ts `titleWords`) that `held` marks as present in the
 * other report, each weighed by `idf`: 0 for a title with no words.
 */
export function containment(titleWords: readonly string[], held: readonly boolean[], idf: (word: string) => number): number {
  let total = 0
  let found = 0
  for (let i = 0; i < titleWords.length; i++) {
    const weight = idf(titleWords[i])
    total += weight
    if (held[i]) found += weight
  }
  return total === 0 ? 0 : found / total
}

/** Which of `titleWords` a text holds (for a report the App's index does not hold). */
export function heldIn(text: string, titleWords: readonly string[]): boolean[] {
  const present = new Set(words(text))
  return titleWords.map((w) => present.has(w))
}
