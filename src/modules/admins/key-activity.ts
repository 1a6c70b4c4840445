/**
 * Remembers when each `sk_` key was last used, for the dashboard's key list. One write per key per
 * minute at most, so a busy API client does not turn every read into a write.
 */
import type { Database } from 'bun:sqlite'
import type { Clock } from '../../core/clock'

const WRITE_EVERY_MS = 60_000
const MAX_TRACKED = 10_000

export function createKeyActivity(sqlite: Database, clock: Clock) {
  const written = new Map<string, number>()
  const upsert = sqlite.query('INSERT INTO api_key_activity (key_id, last_used_at) VALUES (?, ?) ON CONFLICT (key_id) DO UPDATE SET last_used_at = excluded.last_used_at')
  return (keyId: string): void => {
    const now = clock.now()
    const last = written.get(keyId)
    if (last !== undefined && now - last < WRITE_EVERY_MS) return
    if (written.size >= MAX_TRACKED) written.clear()
    written.set(keyId, now)
    sqlite.transaction(() => upsert.run(keyId, now)).immediate()
  }
}
