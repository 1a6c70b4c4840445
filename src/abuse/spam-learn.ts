/**
 * What an App's spam decisions by hand teach its score (issue 27), bounded like src/dedup/learn.ts:
 * "not spam" multiplies the factor of every reason that fired on that report by NOT_SPAM_STEP (the App's
 * reports trip that signal innocently: weigh it less), "spam" by SPAM_STEP. Factors stay within
 * [FACTOR_MIN, FACTOR_MAX]; a reason never decided on keeps factor 1. Content reasons stay capped in the
 * score whatever their factor (spam-score.ts CONTENT_CAP), so learning never makes content alone spam.
 */
import { SPAM_REASONS, type SpamReason } from './spam-score'

export const NOT_SPAM_STEP = 0.8
export const SPAM_STEP = 1.15
export const FACTOR_MIN = 0.25
export const FACTOR_MAX = 1.5

export type SpamFactors = Partial<Record<SpamReason, number>>

const round = (n: number) => Math.round(n * 1000) / 1000

/** The factors after one decision on a report whose score named `reasons`. */
export function learnFrom(factors: SpamFactors, reasons: readonly string[], decision: 'not_spam' | 'spam'): SpamFactors {
  const out: SpamFactors = { ...factors }
  const step = decision === 'not_spam' ? NOT_SPAM_STEP : SPAM_STEP
  for (const r of new Set(reasons)) {
    if (!(SPAM_REASONS as readonly string[]).includes(r)) continue
    const reason = r as SpamReason
    out[reason] = round(Math.min(FACTOR_MAX, Math.max(FACTOR_MIN, (out[reason] ?? 1) * step)))
  }
  return out
}

/** Stored factors, read defensively (a hand-edited or older row never breaks the score). */
export function parseFactors(json: string | undefined): SpamFactors {
  if (!json) return {}
  let raw: unknown
  try {
    raw = JSON.parse(json)
  } catch {
    return {}
  }
  const out: SpamFactors = {}
  if (typeof raw !== 'object' || raw === null) return out
  for (const r of SPAM_REASONS) {
    const v = (raw as Record<string, unknown>)[r]
    if (typeof v === 'number' && Number.isFinite(v)) out[r] = Math.min(FACTOR_MAX, Math.max(FACTOR_MIN, v))
  }
  return out
}
