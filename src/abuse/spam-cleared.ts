/**
 * An App's reports declared "not spam" by hand lately (spam_learning.cleared): what a cluster's nodes need
 * to honour a "not spam" taken on another node. On the deciding node the decision drops the text, and
 * every held spam text it resembles, from the `like_spam` ring at once (SpamRing.remove); the other nodes,
 * and this one when it next loads the App's marks from the database (src/abuse/spam-share.ts), drop the
 * marks by hand that such a text resembles and that are not newer than it (SpamRing.replace).
 *
 * Ids and times only, JSON: `[{"id": …, "at": epoch ms}, …]`, oldest first, those of the last
 * SPAM_RING_WINDOW_MS (older marks leave the ring by themselves), at most SPAM_RING_SIZE.
 */
import { SPAM_RING_SIZE, SPAM_RING_WINDOW_MS } from './spam-ring'

export interface Cleared {
  id: string
  at: number
}

/** The list as stored; anything malformed reads as none (a lost "not spam" costs a like_spam, never a request). */
export function parseCleared(json: string | null | undefined): Cleared[] {
  try {
    const parsed: unknown = JSON.parse(json ?? '[]')
    if (!Array.isArray(parsed)) return []
    return parsed.filter((c): c is Cleared => typeof c === 'object' && c !== null && typeof c.id === 'string' && typeof c.at === 'number')
  } catch {
    return []
  }
}

/** The list to store after a decision at `now`: `notSpamId` added (a "not spam"), the stale ones dropped, bounded. */
export function clearedAfter(json: string | null | undefined, now: number, notSpamId?: string): string {
  const since = now - SPAM_RING_WINDOW_MS
  const kept = parseCleared(json).filter((c) => c.at > since && c.id !== notSpamId)
  if (notSpamId !== undefined) kept.push({ id: notSpamId, at: now })
  return JSON.stringify(kept.slice(-SPAM_RING_SIZE))
}
