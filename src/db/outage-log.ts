/**
 * How background loops (the job worker, webhook dispatch, partition leases) log a failure. A failure that
 * is the database being away (`storageUnavailable`) repeats on every pass while it lasts, several times a
 * second on every node: it is logged at `warn` once per message per window, with how many repeats were not
 * logged since the last line, instead of thousands of `error` lines for one outage. Any other failure is
 * logged every time at the level asked for.
 */
import type { Logger } from '../core/logger'
import { storageUnavailable } from './unavailable'

/** At most one line per message this often while the database is away. */
export const OUTAGE_LOG_WINDOW_MS = 30_000

export type FailureLog = (level: 'warn' | 'error', msg: string, error: unknown, fields?: Record<string, unknown>) => void

export function failureLog(log: Logger, windowMs = OUTAGE_LOG_WINDOW_MS, now: () => number = () => performance.now()): FailureLog {
  const lastLine = new Map<string, { at: number; notLogged: number }>()
  return (level, msg, error, fields = {}) => {
    const text = error instanceof Error ? error.message : String(error)
    if (storageUnavailable(error) === null) return log[level](msg, { ...fields, error: text })
    const t = now()
    const last = lastLine.get(msg)
    if (last && t - last.at < windowMs) {
      last.notLogged++
      return
    }
    lastLine.set(msg, { at: t, notLogged: 0 })
    log.warn(msg, { ...fields, error: text, databaseUnavailable: true, ...(last && last.notLogged > 0 ? { notLoggedSinceLastLine: last.notLogged } : {}) })
  }
}
