/**
 * The cluster's summary fields on a lead: `theme` (a short label) and `consolidatedText` (the lead's
 * text plus the details its duplicates add, at most 8192 characters).
 */
import { summaryLine, words } from './tokenize'
import { clip } from '../core/clip'

export const CONSOLIDATED_MAX = 8192
export const THEME_MAX = 80

/**
 * The lead's label: its summary line, greeting dropped, at most `THEME_MAX` characters. `boilerplate`:
 * the App's test for a line that is not a summary (an integration's, AppIndex.isBoilerplate), so a lead
 * behind "New message from the contact form" is labelled by its own line.
 */
export function themeOf(leadText: string, boilerplate?: (line: string) => boolean): string {
  const line = summaryLine(leadText, boilerplate).replace(/^(hi|hello|hey|dear)\b[^,.!]*[,.!]\s*/i, '').replace(/\s+/g, ' ').trim()
  const base = line || leadText.trim().replace(/\s+/g, ' ')
  return base.length <= THEME_MAX ? base : clip(base, THEME_MAX - 1).replace(/\s+\S*$/, '') + '…'
}

function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?\u061f\u0964])\s+|(?<=[\u3002\uff01\uff1f])\s*|\n+/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
}

/**
 * The lead's text, then each sentence of a duplicate that brings at least one word the cluster has not
 * said yet, newest duplicates first, until the 8192-character cap. `count`: how many duplicate texts
 * the header names, when `duplicateTexts` lists each distinct text once (a repeated text adds nothing).
 */
export function consolidate(leadText: string, duplicateTexts: string[], count = duplicateTexts.length): string {
  if (duplicateTexts.length === 0) return clip(leadText, CONSOLIDATED_MAX)
  const seen = new Set(words(leadText))
  const seenSentences = new Set<string>()
  const extra: string[] = []
  let length = leadText.length
  for (const text of duplicateTexts) {
    // Once the cap is reached nothing more can be added: stop reading.
    if (length >= CONSOLIDATED_MAX) break
    for (const s of sentences(text)) {
      // Duplicates often repeat each other word for word: a sentence seen once is not tokenized again.
      const key = s.toLowerCase()
      if (seenSentences.has(key)) continue
      seenSentences.add(key)
      const ws = words(s)
      if (ws.length === 0 || ws.every((w) => seen.has(w))) continue
      for (const w of ws) seen.add(w)
      extra.push('- ' + s)
      length += s.length + 3
    }
  }
  const header = `\n\n--- ${count} similar report${count === 1 ? '' : 's'} add${count === 1 ? 's' : ''}: ---\n`
  let out = leadText + (extra.length ? header : '')
  for (const line of extra) {
    if (out.length + line.length + 1 > CONSOLIDATED_MAX) break
    out += line + '\n'
  }
  return clip(out.trimEnd(), CONSOLIDATED_MAX)
}
