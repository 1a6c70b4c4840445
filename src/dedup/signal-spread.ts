/**
 * How widely a merge signal (a component, a console-error fingerprint, a stack fingerprint) is spread
 * over an App's bugs. The same console error in two reports corroborates a merge only when that error
 * is specific to a bug. Some are everywhere: an ad blocker's `net::ERR_BLOCKED_BY_CLIENT`, a
 * `ResizeObserver loop` warning, a crash in the RPC client every failure passes through. A signal that
 * many different leads carry says nothing about which bug a report is, as a word every report holds
 * says nothing in TF-IDF.
 *
 * Spread is counted in leads (a lead and its duplicates are one bug), not in reports: a bug reported
 * forty times with one error keeps that error specific, however often it is reported.
 *
 * Titles too: a first line many leads share is no summary of a bug ("New message from the contact form",
 * a page title an integration puts first). The title rules (vetoes, merge blocks, same title) read the
 * first line; when every report has the same one, they see nothing and different bugs merge.
 */

import { titleKey } from './title-key'

/** A signal carried by more leads than this is generic at any App size. */
export const GENERIC_MIN_LEADS = 3
/** …or by more than this share of the App's leads, where that is more. */
export const GENERIC_LEAD_SHARE = 0.05

/** The merge signals of one report that can be spread: `kind:value` keys. */
export interface SpreadSignals {
  title: string
  /** Set on a copy whose title many other leads carry (withoutGeneric). */
  genericTitle?: boolean
  /** Set on a copy whose title more than GENERIC_MIN_LEADS other reports have (withoutGeneric). */
  commonTitle?: boolean
  component: string | null
  errorFps: readonly string[]
  stackFp: string | null
}

export function signalKeys(s: SpreadSignals): string[] {
  const keys: string[] = []
  if (s.component) keys.push(`c:${s.component}`)
  for (const e of s.errorFps) keys.push(`e:${e}`)
  if (s.stackFp) keys.push(`s:${s.stackFp}`)
  return keys
}

/**
 * Per signal, how many of the App's indexed leads carry it. Only leads count: a duplicate's signals are
 * its bug's, already counted once through its lead. One number per distinct signal: 0.4 MB at 100,000
 * widget reports with a component and one to three errors each, where a map of leads per signal took 26 MB.
 */
export class SignalSpread {
  private leadsOf = new Map<string, number>()
  /**
   * Per title (a 53-bit hash of it: a number, not a copy), the reports and the leads that have it,
   * packed in one number: reports × 2^20 + leads.
   */
  private titles = new Map<number, number>()

  /** A lead whose title's key (`titleKey`) is `title` carrying `keys` was indexed (or a duplicate became a lead again). */
  add(keys: readonly string[], title: number): void {
    for (const key of keys) bump(this.leadsOf, key, 1)
    bump(this.titles, title, 1)
  }

  /** A lead whose title's key is `title` carrying `keys` left the index (or became a duplicate). */
  remove(keys: readonly string[], title: number): void {
    for (const key of keys) bump(this.leadsOf, key, -1)
    bump(this.titles, title, -1)
  }

  /** A report whose title's key is `title` was indexed (1) or left the index (-1), lead or duplicate. */
  countTitle(title: number, by: 1 | -1): void {
    bump(this.titles, title, by * TITLE_REPORT)
  }

  /** How many indexed leads carry `key`. */
  leads(key: string): number {
    return this.leadsOf.get(key) ?? 0
  }

  /** How many indexed leads have `title` (case aside). */
  leadsTitled(title: string): number {
    return leadsIn(this.titleCounts(titleKey(title)))
  }

  /** The packed counts of the title whose key (`titleKey`) is `key`: read them with `reportsIn` and `leadsIn`. */
  titleCounts(key: number): number {
    return this.titles.get(key) ?? 0
  }
}

/** The reports of packed title counts (`SignalSpread.titleCounts`). */
export const reportsIn = (packed: number): number => Math.floor(packed / TITLE_REPORT)
/** The leads of packed title counts. */
export const leadsIn = (packed: number): number => packed % TITLE_REPORT

/** A report's weight in the packed title counts (its lead's is 1). */
const TITLE_REPORT = 2 ** 20

function bump<K>(counts: Map<K, number>, key: K, by: number): void {
  const n = (counts.get(key) ?? 0) + by
  if (n > 0) counts.set(key, n)
  else counts.delete(key)
}

/** Whether a signal carried by `leads` other leads of an App of `appLeads` leads is generic. */
export function isGeneric(leads: number, appLeads: number): boolean {
  return leads > Math.max(GENERIC_MIN_LEADS, GENERIC_LEAD_SHARE * appLeads)
}

/**
 * `signals` with its generic ones removed: what a merge may be corroborated by. The same object when
 * none is generic (the common case: no copy).
 */
export function withoutGeneric<T extends SpreadSignals>(
  signals: T,
  spread: SignalSpread,
  appLeads: number,
  indexed: { lead: boolean; report: boolean },
): T & { genericTitle?: boolean; commonTitle?: boolean } {
  // A report indexed as a lead counts itself among the leads carrying its signals: not an other lead.
  const own = indexed.lead ? 1 : 0
  const generic = (kind: string, value: string) => isGeneric(spread.leads(`${kind}:${value}`) - own, appLeads)
  const component = signals.component !== null && generic('c', signals.component)
  const errorFps = signals.errorFps.filter((e) => !generic('e', e))
  const stackFp = signals.stackFp !== null && generic('s', signals.stackFp)
  const titled = spread.titleCounts(titleKey(signals.title))
  const genericTitle = isGeneric(leadsIn(titled) - own, appLeads)
  // Reports, not leads: a line put before every report would otherwise look specific while wrong merges
  // keep its reports in one cluster. A popular bug's identical titles lose it too, and merge on their
  // score and their cluster's vocabulary.
  const commonTitle = reportsIn(titled) - (indexed.report ? 1 : 0) > GENERIC_MIN_LEADS
  if (!component && errorFps.length === signals.errorFps.length && !stackFp && !genericTitle && !commonTitle) return signals
  return { ...signals, component: component ? null : signals.component, errorFps, stackFp: stackFp ? null : signals.stackFp, genericTitle, commonTitle }
}

/**
 * For a verdict's reason: the signals `candidate` shares with the report that were not counted because
 * many bugs carry them (`specific` is `withoutGeneric(full, …)`), e.g. `; same console error, common to
 * many bugs: not counted`. Empty when there is none.
 */
export function genericNote(full: SpreadSignals, specific: SpreadSignals, candidate: SpreadSignals): string {
  const shared: string[] = []
  if (full.component !== null && specific.component === null && full.component === candidate.component) shared.push('component')
  // Shared before the generic ones were dropped, and none shared after: what was shared was dropped.
  if (full.errorFps.some((e) => candidate.errorFps.includes(e)) && !specific.errorFps.some((e) => candidate.errorFps.includes(e))) shared.push('console error')
  if (full.stackFp !== null && specific.stackFp === null && full.stackFp === candidate.stackFp) shared.push('stack trace')
  if (specific.genericTitle && full.title.toLowerCase() === candidate.title.toLowerCase()) shared.push('title')
  return shared.length === 0 ? '' : `; same ${shared.join(', ')}, common to many bugs: not counted`
}
