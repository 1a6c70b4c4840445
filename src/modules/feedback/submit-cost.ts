/**
 * What a submission costs its sender's rate-limit bucket beyond the one token every request takes. The
 * spec lets a report carry ~0.5 MB of free text (8 KB text, 500 console messages of 1,000 characters);
 * sanitizing it costs in proportion, so a bucket charged one token per report would let two clients keep
 * the processing thread busy for every tenant. One more token per full 32 K characters of free text: a
 * report at every limit costs 16 tokens (a public client gets ~4 such reports a minute instead of 60);
 * an ordinary report (text, a few console lines) costs 1, as before.
 */
import type { SubmitBody } from './model'

/** Characters of free text per extra token. */
export const CHARS_PER_TOKEN = 32 * 1024

/** The free text the sanitizer will read: text, url, user agent and console messages (metadata and the component are capped at 4 KB each). */
export function freeTextChars(body: Pick<SubmitBody, 'text' | 'url' | 'userAgent' | 'consoleLogs'>): number {
  let chars = body.text.length + (body.url?.length ?? 0) + (body.userAgent?.length ?? 0)
  for (const entry of body.consoleLogs ?? []) chars += entry.message.length
  return chars
}

/** Tokens a submission takes beyond the first. */
export const extraTokens = (body: Pick<SubmitBody, 'text' | 'url' | 'userAgent' | 'consoleLogs'>): number => Math.floor(freeTextChars(body) / CHARS_PER_TOKEN)
