/**
 * The pull request's title, commit subject and body. The title is a fixed template plus the report's
 * theme made safe: one line, control characters dropped, links removed, issue references (`#12`,
 * `GH-12`, `owner/repo#12`) and @-mentions broken so that no closing keyword (fixes/closes/resolves)
 * closes an issue and no team is pinged, bounded to 72 characters. Everything from the agent is
 * scrubbed (src/agent/scrubber.ts) and neutralized the same way, inside a code block.
 */
import type { AgentUsage } from './presets'
import type { Scrub } from './scrubber'

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
  if (s.length > max) s = s.slice(0, max - 1).trimEnd() + '…'
  return s || 'a user report'
}

export function prTitle(theme: string | null, text: string, scrub: Scrub): string {
  return `fixloop: ${safeTheme(scrub(theme ?? ''), scrub(text))}`
}

export interface PrBodyInput {
  feedbackId: string
  theme: string | null
  duplicateCount: number
  usage: AgentUsage
  files: number
  lines: number
  publicUrl: string | undefined
}

/** Fences a text with a fence longer than any backtick run in it. */
function codeBlock(text: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length))
  const ticks = '`'.repeat(longest + 1)
  return `${ticks}text\n${text}\n${ticks}`
}

/** The PR body: what was fixed and where it came from; never the submitter's identity. */
export function prBody(b: PrBodyInput, scrub: Scrub): string {
  const link = b.publicUrl ? `${b.publicUrl}/v1/feedback/${b.feedbackId}` : `feedback id \`${b.feedbackId}\``
  const summary = b.usage.summary ? neutralize(scrub(b.usage.summary)).replace(/[\x00-\x08\x0b-\x1f\x7f]/g, ' ').slice(0, 2000) : ''
  return [
    'Automated fix proposed by fixloop for a user report.',
    '',
    `- Report: ${link}${b.duplicateCount > 0 ? ` (a cluster of ${b.duplicateCount + 1} similar reports)` : ''}`,
    `- Theme: ${b.theme ? safeTheme(scrub(b.theme), '', 200) : '(none)'}`,
    `- Change: ${b.files} file${b.files === 1 ? '' : 's'}, ${b.lines} line${b.lines === 1 ? '' : 's'}; passed fixloop's guardrails`,
    summary ? `\n**Agent summary** (untrusted text written by the agent)\n\n${codeBlock(summary)}` : '',
    '',
    'Please review carefully before merging.',
  ].join('\n')
}
