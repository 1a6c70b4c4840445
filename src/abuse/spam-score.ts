/**
 * The spam score (issue 27): transparent weighted signals, each with a name that is shown as a reason.
 * Pure: the signals in, `{ score, reasons }` out; the App's learned factors (src/abuse/spam-learn.ts)
 * scale each weight. A report is spam when its score reaches SPAM_THRESHOLD.
 *
 * | reason          | weight | fires when |
 * |-----------------|--------|------------|
 * | honeypot        | 1.00   | the widget's hidden field came back filled (a person never sees it) |
 * | too_fast        | 0.80   | the form was submitted less than MIN_FORM_MS after it opened |
 * | address_flood   | 0.45   | the address sent more than ADDRESS_SUBMISSIONS_PER_MINUTE reports to the App in the last minute |
 * | repeated_text   | 0.45   | the same text (normalized) came from REPEAT_ADDRESSES or more addresses within REPEAT_WINDOW_MS |
 * | pow_raised      | 0.15   | the proof of work was solved at a raised (flood) difficulty |
 * | spam_phrases    | 0.30   | each known spam phrase (SPAM_PHRASES), at most two counted |
 * | link_density    | 0.30   | at least 4 links, and more than one link per 8 words (a list of links, not a report that cites some) |
 *
 * Content alone never makes spam: the content reasons (spam_phrases, link_density) together count for at
 * most CONTENT_CAP (0.45), so a long bug report full of links and stack traces, or one that happens to use
 * a phrase, stays below the threshold unless the sender also behaved like a bot. Content plus a raised
 * proof of work is 0.6: still not spam.
 */
export const SPAM_THRESHOLD = 0.7
export const MIN_FORM_MS = 1500
export const ADDRESS_SUBMISSIONS_PER_MINUTE = 10
export const REPEAT_ADDRESSES = 4
export const REPEAT_WINDOW_MS = 10 * 60_000
export const CONTENT_CAP = 0.45

export const SPAM_REASONS = ['honeypot', 'too_fast', 'address_flood', 'repeated_text', 'pow_raised', 'spam_phrases', 'link_density'] as const
export type SpamReason = (typeof SPAM_REASONS)[number]

export const SPAM_WEIGHTS: Record<SpamReason, number> = {
  honeypot: 1,
  too_fast: 0.8,
  address_flood: 0.45,
  repeated_text: 0.45,
  pow_raised: 0.15,
  spam_phrases: 0.3,
  link_density: 0.3,
}
const CONTENT: ReadonlySet<SpamReason> = new Set(['spam_phrases', 'link_density'])

/**
 * Known spam phrases (lowercase, matched on word boundaries in the normalized text): the stock of
 * comment-form spam (SEO, casinos, pills, crypto, "contact us" pitches). Small on purpose: a phrase only
 * adds to a score that needs a behavioural signal too.
 */
export const SPAM_PHRASES = [
  'buy now', 'cheap viagra', 'viagra', 'cialis', 'casino', 'online casino', 'free spins', 'betting tips', 'payday loan',
  'crypto giveaway', 'double your bitcoin', 'bitcoin investment', 'forex signals', 'seo services', 'backlinks', 'guest post',
  'increase your traffic', 'rank your website', 'first page of google', 'work from home', 'make money fast', 'earn $',
  'click here', 'limited time offer', 'weight loss', 'adult dating', 'hot singles', 'escort', 'essay writing service',
  'replica watches', 'telegram @', 'whatsapp +',
] as const

export interface SpamSignals {
  /** clientSignals.honeypot, as sent (undefined: not sent). */
  honeypot?: string
  /** clientSignals.formMs (undefined: not sent). */
  formMs?: number
  /** This address's submissions to the App over the last minute, this one included. */
  addressPerMinute: number
  /** Distinct addresses that sent the same normalized text to the App within the window, this one included. */
  repeatAddresses: number
  /** The proof of work was solved at a raised difficulty. */
  powRaised: boolean
  text: string
}

export interface SpamVerdict {
  score: number
  reasons: SpamReason[]
  spam: boolean
}

/** Lowercase, accents and punctuation folded to spaces, runs of spaces collapsed: the text as compared. */
export function normalizeText(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}$@+]+/gu, ' ')
    .trim()
}

const LINK_RE = /\bhttps?:\/\/|\bwww\.[a-z0-9-]+\./gi
const PHRASE_RES = SPAM_PHRASES.map((p) => new RegExp(`(^| )${p.replace(/[$+]/g, '\\$&')}( |$)`))

/** The content reasons of a text (shared by the intake score and "spam" marked by hand). */
export function contentReasons(text: string): { phrases: number; linkDensity: boolean } {
  const sample = text.slice(0, 8192)
  const links = sample.match(LINK_RE)?.length ?? 0
  const words = sample.split(/\s+/).filter(Boolean).length
  const norm = normalizeText(sample)
  let phrases = 0
  for (const re of PHRASE_RES) if (re.test(norm) && ++phrases >= 2) break
  return { phrases, linkDensity: links >= 4 && links * 8 > words }
}

/** Weighs the signals with the App's learned factors (reason → factor, 1 when absent). */
export function spamScore(s: SpamSignals, factors: Partial<Record<SpamReason, number>> = {}): SpamVerdict {
  const fired: [SpamReason, number][] = []
  if (s.honeypot !== undefined && s.honeypot.trim() !== '') fired.push(['honeypot', 1])
  if (s.formMs !== undefined && s.formMs < MIN_FORM_MS) fired.push(['too_fast', 1])
  if (s.addressPerMinute > ADDRESS_SUBMISSIONS_PER_MINUTE) fired.push(['address_flood', 1])
  if (s.repeatAddresses >= REPEAT_ADDRESSES) fired.push(['repeated_text', 1])
  if (s.powRaised) fired.push(['pow_raised', 1])
  const content = contentReasons(s.text)
  if (content.phrases > 0) fired.push(['spam_phrases', content.phrases])
  if (content.linkDensity) fired.push(['link_density', 1])
  let behaviour = 0
  let contentScore = 0
  for (const [reason, times] of fired) {
    const w = SPAM_WEIGHTS[reason] * times * (factors[reason] ?? 1)
    if (CONTENT.has(reason)) contentScore += w
    else behaviour += w
  }
  const score = Math.round(Math.min(1, behaviour + Math.min(CONTENT_CAP, contentScore)) * 1000) / 1000
  return { score, reasons: fired.map(([r]) => r), spam: score >= SPAM_THRESHOLD }
}
