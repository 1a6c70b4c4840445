/**
 * Whether an App's duplicates arrive close together, learned from the App's own clusters, and the
 * bonus a candidate that arrived close to the report gets in /similar's order and as a suggestion, and
 * as a merge corroboration halfway between the corroborated and the merge bar (decide.ts
 * `arrivalCorroborates`; at the corroborated bar itself it doubled the wrong attachments on real reports).
 *
 * A bug appears with a release and its reports come in a burst until it is fixed. In the real development
 * corpora (bench/dup-corpora, public Bugzilla duplicates) half of the reports have a duplicate within 1 %
 * of the project's reports in arrival order, and 79 % within 5 %; a random pair is that close 2 % and
 * 10 % of the time. But not every App receives its reports in the order its users met the bugs (an import
 * of an old tracker, a backlog sent in one go), and where arrival says nothing a bonus for it only adds
 * noise: measured with shuffled arrivals, a fixed bonus cost R@1 3.6 points (Eclipse) and 8.3 (Firefox).
 *
 * So the bonus is weighed by what the App's own clusters show. Each link of a report to its cluster (an
 * automatic merge, a merge by hand, a confirmed suggestion, an index build) notes whether the report
 * arrived within `NEAR_SHARE` of the App's reports of its nearest cluster member, and how likely that
 * would be if arrival order said nothing (`1 − (1 − NEAR_SHARE)^k` with k earlier members). The App's
 * *locality* is the share of the links that are near beyond that chance, less two standard deviations
 * of it, and shrunk while links are few: 0 where arrival order says nothing, near 1 where duplicates
 * come in bursts. Unmerging a report takes its link's note back.
 */

/** How close in arrival (a share of the App's indexed reports) counts as near, for learning the locality. */
export const NEAR_SHARE = 0.05
/** Links the locality is shrunk by while few (n / (n + LOCALITY_PRIOR_LINKS)). */
export const LOCALITY_PRIOR_LINKS = 20
/** The most a candidate's arrival can add to its /similar or suggestion score, at full locality and no gap. */
export const RECENCY_WEIGHT = 0.3
/** The gap (a share of the App's reports) at which the bonus is half its most. */
export const RECENCY_HALF_GAP = 0.05
/**
 * How many reports that arrived right before and after the one /similar asks about are its candidates
 * whatever their words (where the App has a locality): a paraphrase may share none of its rarest words.
 * On the real corpora in filing order R@10 +0.4 to +1.6 points; 5 and 10 alike, 20 and 30 less.
 */
export const ARRIVAL_NEIGHBOURS = 10

/**
 * The least arrival bonus (`recencyBonus`) that corroborates an automatic merge at the arrival bar
 * (decide.ts `arrivalCorroborates`): at the real corpora's locality (~0.6) a lead that arrived within
 * about 13 % of the App's reports; never below a locality of 1/6.
 */
export const ARRIVAL_CORROBORATES = 0.05

/**
 * How far apart in arrival (a share of the App's reports) a lead may have arrived and still corroborate
 * a merge at `locality`: where `recencyBonus` falls to `ARRIVAL_CORROBORATES`. Null where even a report
 * arriving right beside would not (a weak or no locality).
 */
export function corroboratingGap(locality: number): number | null {
  const gap = RECENCY_HALF_GAP * ((RECENCY_WEIGHT * locality) / ARRIVAL_CORROBORATES - 1)
  return gap >= 0 ? gap : null
}

/**
 * A cluster last reported more than this share of the App's reports ago, in an App whose locality is at
 * least `LONG_AGO_LOCALITY`: a report that would merge into it is suggested instead (`longAgoBlock`).
 */
export const LONG_AGO_SHARE = 0.5
export const LONG_AGO_LOCALITY = 0.3

export class ArrivalLocality {
  private links = 0
  private near = 0
  /** Sum over links of the chance of being near with arrival order saying nothing. */
  private expected = 0
  /** Sum of that chance's variance (p(1 − p)), for the noise margin. */
  private variance = 0

  /** A link noted (`sign` 1) or taken back (−1): whether it was near, and its chance of being near anyway. */
  note(near: boolean, chance: number, sign: 1 | -1): void {
    this.links += sign
    if (near) this.near += sign
    this.expected += sign * chance
    this.variance += sign * chance * (1 - chance)
  }

  /** 0 (arrival says nothing about duplicates in this App) to 1 (duplicates come in bursts). */
  get strength(): number {
    const excess = this.near - this.expected - 2 * Math.sqrt(Math.max(0, this.variance))
    const room = this.links - this.expected
    if (this.links <= 0 || room <= 0 || excess <= 0) return 0
    return Math.min(1, excess / room) * (this.links / (this.links + LOCALITY_PRIOR_LINKS))
  }

  get linkCount(): number {
    return this.links
  }
}

/**
 * The chance that a report is within `share` of the App's reports of the nearest of its `earlier` cluster
 * members, if arrival order said nothing (each member anywhere before it).
 */
export function nearByChance(earlier: number, share = NEAR_SHARE): number {
  return 1 - Math.pow(1 - share, Math.max(1, earlier))
}

/** What a candidate `gapShare` of the App's reports away in arrival adds to its /similar score, at `locality`. */
export function recencyBonus(gapShare: number, locality: number): number {
  if (locality <= 0 || gapShare < 0) return 0
  return (RECENCY_WEIGHT * locality) / (1 + gapShare / RECENCY_HALF_GAP)
}

/**
 * The merge block for a cluster last reported `sinceShare` of the App's reports ago, at `locality`: its
 * reason, or null when the cluster is recent enough (or the App's arrival says nothing) to take an
 * automatic merge. Where duplicates come in bursts, a report that matches a bug only seen long
 * before is as likely a new bug that reads alike (or a recurrence, which deserves its own lead) as a
 * late duplicate, so a person decides: the lead is suggested. On the real Eclipse corpus in filing order
 * the two merges it stops made 4 wrong pairs and 1 right one: wrong attachments 0.33 → 0.20 %; Firefox
 * one right pair of 38 suggested instead; nothing else moved.
 */
export function longAgoBlock(sinceShare: number, locality: number): string | null {
  if (locality < LONG_AGO_LOCALITY || sinceShare <= LONG_AGO_SHARE) return null
  return `its bug was last reported long ago (${Math.round(sinceShare * 100)} % of the App's reports back)`
}
