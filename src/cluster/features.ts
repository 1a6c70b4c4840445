/** Everything the clustering compares, derived once per report. */
import { errorFingerprint, firstLine, identifyingNumbers, pagePath, polarity, trigrams, versions, words } from './tokenize'

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
  /** Word → weighted term frequency (first-line words count double). */
  tf: Map<string, number>
  firstNumbers: string[]
  /** Versions named anywhere in the text. */
  versions: Set<string>
  /** Whether the report says something happens too often ("twice") or not at all ("never"). */
  polarity: 'many' | 'none' | null
  /** Distinct content words: short reports need more evidence to merge. */
  distinctWords: number
  page: string | null
  component: string | null
  errorFp: string | null
}

/** How much more a word of the first line (usually the summary) counts than one in the body. */
export const FIRST_LINE_WEIGHT = 2

function firstError(consoleLogs: string | null): string | null {
  if (!consoleLogs) return null
  try {
    const entries = JSON.parse(consoleLogs) as { level?: string; message?: string }[]
    return entries.find((e) => e.level === 'error')?.message ?? null
  } catch {
    return null
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

export function featuresOf(r: ReportInput): Features {
  const tf = new Map<string, number>()
  const head = firstLine(r.text)
  for (const w of words(r.text)) tf.set(w, (tf.get(w) ?? 0) + 1)
  for (const w of words(head)) tf.set(w, (tf.get(w) ?? 0) + (FIRST_LINE_WEIGHT - 1))
  return {
    id: r.id,
    tf,
    firstNumbers: identifyingNumbers(head),
    versions: versions(r.text),
    polarity: polarity(r.text),
    distinctWords: tf.size,
    page: pagePath(r.url),
    component: componentName(r.componentTarget),
    errorFp: errorFingerprint(firstError(r.consoleLogs)),
  }
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
