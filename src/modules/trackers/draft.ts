/**
 * The issue fixloop writes for a lead (docs/trackers.md "What is pushed"): the title the dashboard shows
 * (the lead's theme, else the start of its text), the consolidated sanitized text (never the raw report)
 * inside a code fence, so @mentions, #references, links and HTML in a report never act on the tracker,
 * then the cluster size, the severity, a link to the report on the dashboard and the number of
 * screenshots, recordings and other files attached (viewed on that page: no attachment URL leaves
 * fixloop). The title is neutralized like a pull request's (src/core/safe-title.ts, as src/agent/pr-text.ts does: no
 * `Fixes #1`, `@team` or link acts on the tracker). Labels: `fixloop` and `severity:<level>`. Pure.
 */
import { safeTheme } from '../../core/safe-title'
import type { IssueDraft } from '../../trackers/adapter'
import type { LeadForTracker } from './repo'
import { clip } from '../../core/clip'

export const TITLE_MAX = 200
/** What of the text an issue body carries at most (trackers cap bodies at 65k characters and less). */
export const BODY_TEXT_MAX = 20_000

/** The dashboard's report page, when the server knows its public address (FIXLOOP_PUBLIC_URL). */
export const reportPageUrl = (publicUrl: string | undefined, lead: { org_id: string; id: string }) =>
  publicUrl ? `${publicUrl}/admin/o/${encodeURIComponent(lead.org_id)}/r/${encodeURIComponent(lead.id)}` : null

/** The issue's title: the theme (else the text's first line), one line, references and mentions broken, bounded. */
export function titleOf(lead: Pick<LeadForTracker, 'theme' | 'text'>): string {
  return safeTheme(lead.theme, lead.text, TITLE_MAX)
}

/** A code fence longer than any run of backticks in `text` (CommonMark: a shorter run cannot close it). */
function fenced(text: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length))
  const fence = '`'.repeat(longest + 1)
  return `${fence}text\n${text}\n${fence}`
}

/** How many attachments of each kind the report has (the stored list's `kind`: screenshot, recording, anything else a file). */
export function attachmentCounts(attachments: string | null): { screenshots: number; recordings: number; files: number } {
  const counts = { screenshots: 0, recordings: 0, files: 0 }
  if (!attachments) return counts
  let list: unknown
  try {
    list = JSON.parse(attachments)
  } catch {
    return counts
  }
  if (!Array.isArray(list)) return counts
  for (const a of list.slice(0, 1000)) {
    const kind = a && typeof a === 'object' ? (a as { kind?: unknown }).kind : undefined
    if (kind === 'screenshot') counts.screenshots++
    else if (kind === 'recording') counts.recordings++
    else counts.files++
  }
  return counts
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`

export function draftOf(lead: LeadForTracker, publicUrl: string | undefined): IssueDraft {
  const size = 1 + lead.duplicate_count
  const raw = lead.consolidated_text || lead.text
  const text = raw.length > BODY_TEXT_MAX ? `${clip(raw, BODY_TEXT_MAX)}\n[… cut at ${BODY_TEXT_MAX} characters]` : raw
  const page = reportPageUrl(publicUrl, lead)
  const { screenshots, recordings, files } = attachmentCounts(lead.attachments)
  const lines = [
    fenced(text),
    '',
    `- **Reports:** ${size} (${size === 1 ? 'no duplicates' : `the lead and ${size - 1} duplicate${size === 2 ? '' : 's'}`})`,
    `- **Severity:** ${lead.severity ?? 'unset'}`,
    `- **Report:** ${page ?? `fixloop report \`${lead.id}\``}`,
  ]
  const attached = [
    ...(screenshots > 0 ? [plural(screenshots, 'screenshot', 'screenshots')] : []),
    ...(recordings > 0 ? [plural(recordings, 'screen recording', 'screen recordings')] : []),
    ...(files > 0 ? [plural(files, 'other file', 'other files')] : []),
  ]
  if (attached.length > 0) lines.push(`- **Attachments:** ${attached.join(', ')}${page ? `, on the report page: ${page}` : ''}`)
  lines.push('', '_Synced by fixloop: this text is replaced when the cluster grows; comment below instead of editing it._')
  return { title: titleOf(lead), body: lines.join('\n'), labels: ['fixloop', ...(lead.severity ? [`severity:${lead.severity}`] : [])] }
}

/** The comment posted when the cluster grows. */
export function growthComment(before: number, after: number, publicUrl: string | undefined, lead: { org_id: string; id: string }): string {
  const page = reportPageUrl(publicUrl, lead)
  return `fixloop: ${after - before} more report${after - before === 1 ? '' : 's'} joined this cluster (${after} in all, was ${before}).${page ? ` ${page}` : ''}`
}

/** One comment per COMMENT_EVERY_MS at most, unless the cluster at least doubled since the last pushed size. */
export const COMMENT_EVERY_MS = 60 * 60_000
export function commentDue(before: number, after: number, commentedAt: number | null, now: number): boolean {
  if (after <= before) return false
  return commentedAt === null || now - commentedAt >= COMMENT_EVERY_MS || after >= 2 * Math.max(before, 1)
}
