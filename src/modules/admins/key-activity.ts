/**
 * Remembers when each `sk_` key was last used, for the dashboard's key list. One write per key per
 * minute at most, so a busy API client does not turn every read into a write.
 */
import type { AdminsRepo } from './repo'
import type { Clock } from '../../core/clock'

const WRITE_EVERY_MS = 60_000
const MAX_TRACKED = 10_000

export function createKeyActivity(repo: AdminsRepo, clock: Clock) {
  const written = new Map<string, number>()
  /** Undefined (nothing to wait for) unless this use is written. */
  return (keyId: string): Promise<void> | undefined => {
    const now = clock.now()
    const last = written.get(keyId)
    if (last !== undefined && now - last < WRITE_EVERY_MS) return
    if (written.size >= MAX_TRACKED) written.clear()
    written.set(keyId, now)
    return repo.keyUsed(keyId, now)
  }
}
