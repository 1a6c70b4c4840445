/**
 * How crowded a report's neighbourhood is, for /similar's order. Some reports score high against many
 * others: long or generic texts full of the App's common words and n-grams ("hubs"). Ranked by raw
 * similarity, such a report crowds the top of many lists where it is not the duplicate. Each candidate's
 * score is therefore scaled by its own neighbourhood: the mean of its 7 best ranking scores among the
 * App's reports (its *density*), as in cross-domain similarity local scaling (CSLS, Conneau et al. 2018):
 * `score + ½ × (the query's density − the candidate's density)`.
 *
 * On the real development corpora (bench/dup-corpora, public Bugzilla duplicates), offline over every
 * pair of reports: R@5 0.803 → 0.831 (Eclipse) and 0.735 → 0.767 (Firefox), R@10 0.854 → 0.874 and
 * 0.808 → 0.823. Tried and left out: a density from word scores alone (+1 point), the similarity to the
 * App's centroid (nothing), pseudo-relevance feedback from the query's best neighbours (−1 point), a
 * reciprocal-rank bonus (+1-2 points, and only on top of less).
 *
 * A density must know the reports that arrived after it (a density counted against earlier reports
 * only cost R@1 10 points: the first report of a bug looks lonely), so it is computed when /similar
 * first needs it, from a ranking of that report, and kept until the App has grown by 5 %.
 */

/** How many of a report's best scores make its density (5-10 measured alike; 20 and 3 worse). */
export const DENSITY_NEIGHBOURS = 7
/** How much of the density difference moves a score (0.4-0.6 measured alike; 1.0 worse). */
export const DENSITY_WEIGHT = 0.5
/**
 * How many of /similar's best candidates are rescored (at least the `limit` asked for): scaling only
 * reorders near the top, and the 30 best held every gain measured (20: −0.4 points R@10).
 */
export const RESCALED_CANDIDATES = 30
/**
 * How many candidates a density's ranking scores fully (its 7 best are all it keeps). 25: at 100,000
 * reports a cold /similar took 56 ms instead of 128 ms with /similar's 50, for R@5 −0.4 to 0 points
 * (15: 38 ms, −0.3 points on both corpora).
 */
export const NEIGHBOURHOOD_SHORTLIST = 25
/** A density is computed again once the App has this share more reports indexed (or 20, if more). */
const STALE_SHARE = 0.05
const STALE_MIN = 20

/** The mean of the `DENSITY_NEIGHBOURS` best of `scores` (fewer: the missing ones count as 0). */
export function densityOf(scores: readonly number[]): number {
  const best = [...scores].sort((a, b) => b - a).slice(0, DENSITY_NEIGHBOURS)
  let sum = 0
  for (const s of best) sum += s
  return sum / DENSITY_NEIGHBOURS
}

/** A candidate's score in /similar's order: its ranking score moved by the two densities (the caller shows it clamped to 0..1). */
export function scaledScore(rankScore: number, queryDensity: number, candidateDensity: number): number {
  return rankScore + DENSITY_WEIGHT * (queryDensity - candidateDensity)
}

/** One App's densities by report id, each with the App's count of indexed reports when it was computed. */
export class Densities {
  private held = new Map<string, { density: number; added: number }>()

  /** The density of `id` when fresh for an App that has indexed `added` reports so far, else undefined. */
  get(id: string, added: number): number | undefined {
    const d = this.held.get(id)
    if (!d) return undefined
    return added - d.added > Math.max(STALE_MIN, d.added * STALE_SHARE) ? undefined : d.density
  }

  set(id: string, density: number, added: number): void {
    this.held.set(id, { density, added })
  }

  delete(id: string): void {
    this.held.delete(id)
  }

  get size(): number {
    return this.held.size
  }
}
