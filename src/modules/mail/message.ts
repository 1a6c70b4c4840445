/**
 * The mails fixloop sends to reporters: what they say and which headers they carry. Pure functions, so the
 * content rules are tested without a server (docs/email.md "What the mails say").
 *
 * What an anonymous submitter wrote is never quoted: a public-mode report's text, title and links are the
 * submitter's own (anyone with the public key can file one with any address), and quoting them would turn
 * the App's mail server into a relay for their words. Only a private-mode report (the App's backend vouched
 * for the user with a signed token) is quoted: a short excerpt of its SANITIZED text and a short title.
 */
import { clip } from '../../core/clip'

export const EXCERPT_MAX = 80
export const TITLE_MAX = 60

export interface ResolvedMail {
  appName: string
  feedbackId: string
  /** When the report was sent (ms): how a person recognises a report without its text. */
  createdAt: number
  /**
   * Private mode only: the report's sanitized text (the worker's output), and its short title (theme or
   * the text's start); null for a public-mode report or one that was never sanitized.
   */
  quotable: { text: string; title: string } | null
  prUrl: string | null
  unsubscribeUrl: string
  /** mailto: alternative for List-Unsubscribe (null: https only). */
  unsubscribeMailto: string | null
}

/** One line, controls removed, cut at `max` characters on a word boundary where possible. */
export function safeExcerpt(sanitized: string | null, max = EXCERPT_MAX): string | null {
  if (sanitized === null) return null
  // eslint-disable-next-line no-control-regex
  const flat = sanitized.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').replace(/\s+/g, ' ').trim()
  if (flat.length === 0) return null
  if (flat.length <= max) return flat
  const cut = clip(flat, max)
  const space = cut.lastIndexOf(' ')
  return `${(space > max / 2 ? cut.slice(0, space) : cut).trimEnd()}…`
}

/** App names are the customer's; a header gets them on one line. */
const oneLine = (s: string) => clip(s.replace(/[\r\n\t]+/g, ' '), 120)

/** 28 Nov 2026 (UTC): a date a person reads, the same in every locale of the server. */
export function readableDate(ms: number): string {
  const d = new Date(ms)
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
  return `${d.getUTCDate()} ${months[d.getUTCMonth()]} ${d.getUTCFullYear()}`
}

const unsubscribeHeaders = (url: string, mailto: string | null) => ({
  'List-Unsubscribe': [`<${url}>`, ...(mailto ? [`<${mailto}>`] : [])].join(', '),
  'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
  'Auto-Submitted': 'auto-generated',
})

export function resolvedMessage(m: ResolvedMail): { subject: string; text: string; headers: Record<string, string> } {
  const app = oneLine(m.appName) || 'fixloop'
  const excerpt = m.quotable ? safeExcerpt(m.quotable.text) : null
  const title = m.quotable ? safeExcerpt(m.quotable.title, TITLE_MAX) : null
  const when = readableDate(m.createdAt)
  const lines = [
    'Hello,',
    '',
    `the problem you reported to ${app} on ${when} has been fixed.`,
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
  return {
    subject: title ? `Fixed: ${title} (${app})` : `${app}: the problem you reported on ${when} is fixed`,
    text: lines.join('\n'),
    headers: unsubscribeHeaders(m.unsubscribeUrl, m.unsubscribeMailto),
  }
}

export interface ConfirmMail {
  appName: string
  confirmUrl: string
  /** How long the link works, in days. */
  days: number
  unsubscribeUrl: string
}

/**
 * The double opt-in's one mail: it names the App and carries the link, and quotes nothing a submitter
 * wrote (no report text, no name, no link from the report), so a stranger who types someone else's address
 * sends them only this fixed text.
 */
export function confirmMessage(m: ConfirmMail): { subject: string; text: string; headers: Record<string, string> } {
  const app = oneLine(m.appName) || 'fixloop'
  const lines = [
    'Hello,',
    '',
    `someone reported a problem to ${app} and asked to be told at this address when it is fixed.`,
    '',
    'If that was you, confirm your address (one click, then one button):',
    m.confirmUrl,
    '',
    `The link works for ${m.days} days. If it was not you, ignore this mail: without the confirmation this address gets no mail about the report.`,
    '',
    '--',
    `To get no mails at all from ${app} about reports:`,
    m.unsubscribeUrl,
  ]
  return { subject: `Confirm your address for ${app}`, text: lines.join('\n'), headers: unsubscribeHeaders(m.unsubscribeUrl, null) }
}
