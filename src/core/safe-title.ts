/**
 * Text from a report made safe as a title on a git host or an issue tracker (a pull request's title,
 * a tracker issue's title): one line, control and bidi characters dropped, links removed, issue
 * references (`#12`, `GH-12`, `owner/repo#12`) and @-mentions broken so that no closing keyword
 * (fixes/closes/resolves) closes an issue and no team is pinged, bounded. Pure; one definition for
 * src/agent/pr-text.ts and src/modules/trackers/draft.ts.
 */
import { clip } from './clip'

/** Breaks issue references and mentions: `#12` → `# 12`, `GH-12` → `GH- 12`, `@team` → `@ team`. */
export function neutralize(text: string): string {
  return text
    .replace(/#(?=\d)/g, '# ')
    .replace(/\b(GH)-(?=\d)/gi, '$1- ')
    .replace(/@(?=[\w-])/g, '@ ')
}

/** A theme (or a report's first line) as a safe, single-line, bounded title part. */
export function safeTheme(theme: string | null, text: string, max = 72): string {
  const source = theme && theme.trim() ? theme : (text.split('\n')[0] ?? '')
  let s = source
    .replace(/[\x00-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g, ' ')
    .replace(/\bhttps?:\/\/\S+/gi, '[link]')
    .replace(/[`<>]/g, "'")
  s = neutralize(s).replace(/\s+/g, ' ').trim()
  if (s.length > max) s = clip(s, max - 1).trimEnd() + '…'
  return s || 'a user report'
}

