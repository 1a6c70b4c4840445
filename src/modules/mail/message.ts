/**
 * The "your report was fixed" mail: what it says and which headers it carries. A pure function, so the
 * content rules are tested without a server: it names the App and the report id, quotes at most a short
 * excerpt of the SANITIZED text (never the raw text: secrets and personal data were replaced before it is
 * stored; the excerpt is cut to one line of EXCERPT_MAX characters), links the pull request when there is
 * one, and carries RFC 8058 one-click unsubscribe headers.
 */

export const EXCERPT_MAX = 80

export interface ResolvedMail {
  appName: string
  feedbackId: string
  /** The report's sanitized text (the worker's output), or null when it was never sanitized. */
  sanitizedText: string | null
  prUrl: string | null
  unsubscribeUrl: string
  /** mailto: alternative for List-Unsubscribe (null: https only). */
  unsubscribeMailto: string | null
}

/** One line, controls removed, cut at EXCERPT_MAX characters on a word boundary where possible. */
export function safeExcerpt(sanitized: string | null): string | null {
  if (sanitized === null) return null
  // eslint-disable-next-line no-control-regex
  const flat = sanitized.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').replace(/\s+/g, ' ').trim()
  if (flat.length === 0) return null
  if (flat.length <= EXCERPT_MAX) return flat
  const cut = flat.slice(0, EXCERPT_MAX)
  const space = cut.lastIndexOf(' ')
  return `${(space > EXCERPT_MAX / 2 ? cut.slice(0, space) : cut).trimEnd()}…`
}

/** App names are the customer's; a header gets them on one line. */
const oneLine = (s: string) => s.replace(/[\r\n\t]+/g, ' ').slice(0, 120)

export function resolvedMessage(m: ResolvedMail): { subject: string; text: string; headers: Record<string, string> } {
  const app = oneLine(m.appName) || 'fixloop'
  const excerpt = safeExcerpt(m.sanitizedText)
  const lines = [
    'Hello,',
    '',
    `the problem you reported to ${app} has been fixed.`,
    '',
    `Report: ${m.feedbackId}`,
    ...(excerpt ? [`You wrote: "${excerpt}"`] : []),
    ...(m.prUrl ? [`The change: ${m.prUrl}`] : []),
    '',
    'Thank you for taking the time to tell us.',
    '',
    '--',
    `You get this mail because you asked to be told when this report is fixed. To get no more mails from ${app}:`,
    m.unsubscribeUrl,
  ]
  const list = [`<${m.unsubscribeUrl}>`, ...(m.unsubscribeMailto ? [`<${m.unsubscribeMailto}>`] : [])].join(', ')
  return {
    subject: `Fixed: your report ${m.feedbackId} to ${app}`,
    text: lines.join('\n'),
    headers: { 'List-Unsubscribe': list, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click', 'Auto-Submitted': 'auto-generated' },
  }
}
