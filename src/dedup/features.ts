/** Everything the clustering compares, derived once per report. */
import { errorFingerprints, identifyingNumbers, pagePath, polarity, summaryLine, trigrams, versions, words } from './tokenize'
import { stackFingerprint } from './stack-trace'
import { withoutUserAgents } from './user-agent'

export interface ReportInput {
  id: string
  text: string
  url: string | null
  /** componentTarget JSON or null */
  componentTarget: string | null
  /** consoleLogs JSON or null */
  consoleLogs: string | null
  duplicateOfId: string | null
}

export interface Features {
  id: string
  /** Word → sublinear term weight, 1 + ln(count); a word of the title line counts three times. */
  tf: Map<string, number>
  /**
   * The title line (first line or first sentence; the next one when the first is an integration's,
   * `featuresOf`), for the title rules and the templated-sibling veto.
   */
  title: string
  firstNumbers: string[]
  /**
   * Versions named in the title line. Only there: versions in the body are mostly user-agent strings,
   * build numbers and CVE ids, which differ between true duplicates.
   */
  versions: Set<string>
  /** Whether the report says something happens too often ("twice") or not at all ("never"). */
  polarity: 'many' | 'none' | null
  /** Distinct content words: short reports need more evidence to merge. */
  distinctWords: number
  page: string | null
  component: string | null
  /** The console errors' fingerprints, newest first (errorFingerprints). */
  errorFps: string[]
  /** Where a stack trace in the text failed: its exception and first application frame (stack-trace.ts). */
  stackFp: string | null
}

/** How much more a word of the title line (the summary) counts than one in the body. */
export const TITLE_WEIGHT = 3

/** The messages of the console's error entries, oldest first (as recorded). */
function errorMessages(consoleLogs: string | null): string[] {
  if (!consoleLogs) return []
  try {
    const entries = JSON.parse(consoleLogs) as { level?: string; message?: string }[]
    if (!Array.isArray(entries)) return []
    return entries.flatMap((e) => (e?.level === 'error' && typeof e.message === 'string' ? [e.message] : []))
  } catch {
    return []
  }
}

function componentName(componentTarget: string | null): string | null {
  if (!componentTarget) return null
  try {
    const name = (JSON.parse(componentTarget) as { name?: unknown }).name
    return typeof name === 'string' && name ? name.toLowerCase() : null
  } catch {
    return null
  }
}

/** A bare number in a body: a line number, a timestamp part, a port, a duration (noise between reports). */
const NOISE_NUMBER = /^\d+$/

/**
 * `boilerplate`: whether a leading line is not the user's summary (AppIndex.isBoilerplate: a line at the
 * head of many of the App's reports); such a line is skipped for the title and what is read from it.
 */
export function featuresOf(r: ReportInput, boilerplate?: (line: string) => boolean): Features {
  // What the report says, without the browser's user agent a tracker form puts in it (user-agent.ts).
  const text = withoutUserAgents(r.text)
  const counts = new Map<string, number>()
  const head = summaryLine(text, boilerplate)
  const inTitle = new Set(words(head))
  for (const w of words(text)) if (!(NOISE_NUMBER.test(w) && !inTitle.has(w))) counts.set(w, (counts.get(w) ?? 0) + 1)
  // Sublinear: a stack trace naming one class forty times must not drown the rest of the report.
  const tf = new Map<string, number>()
  for (const [w, c] of counts) tf.set(w, (1 + Math.log(c)) * (inTitle.has(w) ? TITLE_WEIGHT : 1))
  return {
    id: r.id,
    tf,
    ...titleFields(head),
    polarity: polarity(text),
    distinctWords: tf.size,
    page: pagePath(r.url),
    component: componentName(r.componentTarget),
    errorFps: errorFingerprints(errorMessages(r.consoleLogs)),
    stackFp: stackFingerprint(text),
  }
}

/**
 * `f` with its title read again under `boilerplate` from `text`, the report's text: for a report indexed
 * before its first line was known to be an integration's. Its word weights are left as they were.
 */
export function retitled<T extends { title: string; firstNumbers: readonly string[]; versions: ReadonlySet<string> }>(f: T, text: string, boilerplate: (line: string) => boolean): T {
  const head = summaryLine(withoutUserAgents(text), boilerplate)
  return head === f.title ? f : { ...f, ...titleFields(head) }
}

/** What the title rules read of a title line. */
function titleFields(head: string): Pick<Features, 'title' | 'firstNumbers' | 'versions'> {
  return { title: head, firstNumbers: identifyingNumbers(head), versions: versions(head) }
}

/** Cosine similarity of two trigram count maps. */
export function trigramCosine(a: Map<number, number>, b: Map<number, number>): number {
  let dot = 0
  let na = 0
  let nb = 0
  for (const [g, c] of a) {
    na += c * c
    const o = b.get(g)
    if (o !== undefined) dot += c * o
  }
  for (const c of b.values()) nb += c * c
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb)
}

export { trigrams }
