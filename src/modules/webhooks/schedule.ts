/**
 * The retry schedule, after Svix's: after a failed attempt wait 5 s, 5 min, 30 min, 2 h, 5 h, 10 h,
 * 10 h (8 attempts over ~27.6 hours). Jitter only ever adds (up to +20%), so the whole schedule never
 * ends before 24 hours; a Retry-After longer than the next step is honoured (capped at 24 hours).
 * FIXLOOP_WEBHOOK_RETRY_SCALE multiplies every delay (tests shrink the day to seconds).
 */
export const RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000] as const

/** An endpoint whose deliveries have failed without any success for this long is disabled. */
export const DISABLE_AFTER_FAILING_MS = 5 * 24 * 3600_000

const RETRY_AFTER_CAP_MS = 24 * 3600_000

/** Retry-After as seconds or an HTTP date, in ms from now; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (!value) return undefined
  const v = value.trim()
  if (/^\d+$/.test(v)) return Math.min(Number(v) * 1000, RETRY_AFTER_CAP_MS)
  const at = Date.parse(v)
  if (Number.isNaN(at)) return undefined
  return Math.min(Math.max(0, at - now), RETRY_AFTER_CAP_MS)
}

/**
 * The wait before the retry that follows failed attempt number `failedIndex` (0 = the first attempt),
 * or undefined when the schedule is exhausted.
 */
export function retryDelayMs(failedIndex: number, scale: number, random: () => number = Math.random, retryAfterMs?: number): number | undefined {
  const base = RETRY_DELAYS_MS[failedIndex]
  if (base === undefined) return undefined
  const jittered = base * (1 + 0.2 * random())
  return Math.round(Math.max(jittered, retryAfterMs ?? 0) * scale)
}
