/**
 * The pull request's title, commit subject and body. The title is a fixed template plus the report's
 * theme made safe: one line, control characters dropped, links removed, issue references (`#12`,
 * `GH-12`, `owner/repo#12`) and @-mentions broken so that no closing keyword (fixes/closes/resolves)
 * closes an issue and no team is pinged, bounded to 72 characters. Everything from the agent is
 * scrubbed (src/agent/scrubber.ts) and neutralized the same way, inside a code block.
 */
import type { AgentUsage } from './presets'
import type { Scrub } from './scrubber'

// One neutralizer for every title fixloop writes on a git host or tracker (src/core/safe-title.ts).
export { neutralize, safeTheme } from '../core/safe-title'
import { neutralize, safeTheme } from '../core/safe-title'
import { clip } from '../core/clip'

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
  const summary = b.usage.summary ? clip(neutralize(scrub(b.usage.summary)).replace(/[\x00-\x08\x0b-\x1f\x7f]/g, ' '), 2000) : ''
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
