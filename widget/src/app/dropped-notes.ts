/**
 * Private mode: what the widget tells a user whose queued report was dropped while they were away. A
 * report waits for its owner (QueuedReport.owner); one whose owner has not been back for HELD_MAX_AGE_MS
 * is dropped by another user's page load, so it no longer holds one of the 30 queue slots for good, and
 * a note of it stays here: whose it was and when it was written, nothing of its content. The owner's next
 * opening of the dialog says so, once. Notes go after NOTE_MAX_AGE_MS, at most NOTE_MAX are kept.
 * localStorage: small, synchronous; where a page cannot use it the report is still dropped, untold.
 */
import { stringify } from '../json'

/** How long a private-mode report may wait for its owner (or for anyone, when it has none). */
export const HELD_MAX_AGE_MS = 7 * 24 * 60 * 60 * 1000
const NOTE_MAX_AGE_MS = 90 * 24 * 60 * 60 * 1000
const NOTE_MAX = 30
const STORE_KEY = 'fixloop:dropped'
/**
 * The longest stored value read: NOTE_MAX notes of generous size (an endpoint URL, a sub of up to 256
 * characters, an Idempotency-Key). Nothing this widget writes comes near it; a longer value is corrupt or
 * hostile (anything on the page's origin can write it), and parsing and filtering it cost the page its
 * time at every load and dialog opening: it is removed, unread.
 */
const STORE_MAX_CHARS = NOTE_MAX * 4096

export interface DroppedNote {
  /** The report's Idempotency-Key: two tabs dropping the same report leave one note. */
  key: string
  endpoint: string
  publicKey: string
  owner: string
  /** When the report was written (QueuedReport.createdAt). */
  writtenAt: number
  droppedAt: number
}

function read(): DroppedNote[] {
  try {
    const stored = localStorage.getItem(STORE_KEY) ?? '[]'
    if (stored.length > STORE_MAX_CHARS) {
      localStorage.removeItem(STORE_KEY)
      return []
    }
    const list = JSON.parse(stored)
    if (!Array.isArray(list)) return []
    const now = Date.now()
    // As many as a write keeps (the latest): a longer list was not written by this widget.
    return list.slice(-NOTE_MAX).filter((n) => n && typeof n.owner === 'string' && typeof n.writtenAt === 'number' && typeof n.droppedAt === 'number' && now - n.droppedAt <= NOTE_MAX_AGE_MS)
  } catch {
    return []
  }
}

function write(list: DroppedNote[]): void {
  try {
    if (list.length === 0) localStorage.removeItem(STORE_KEY)
    else localStorage.setItem(STORE_KEY, stringify(list.slice(-NOTE_MAX)))
  } catch {
    // storage unavailable or full: the user is not told, nothing else depends on it
  }
}

/** Remembers that `owner`'s report written at `writtenAt` was dropped unsent. */
export function noteDropped(note: Omit<DroppedNote, 'droppedAt'>): void {
  const all = read()
  if (!all.some((n) => n.key === note.key)) write([...all, { ...note, droppedAt: Date.now() }])
}

/** True when notes of this App wait for someone (so the dialog asks for the user's token to find theirs). */
export function hasDroppedNotes(endpoint: string, publicKey: string): boolean {
  return read().some((n) => n.endpoint === endpoint && n.publicKey === publicKey)
}

/** The write times of `owner`'s dropped reports of this App, oldest first; their notes are removed (told once). */
export function takeDroppedNotes(endpoint: string, publicKey: string, owner: string): number[] {
  const all = read()
  const mine = (n: DroppedNote) => n.endpoint === endpoint && n.publicKey === publicKey && n.owner === owner
  const taken = all.filter(mine)
  if (taken.length > 0) write(all.filter((n) => !mine(n)))
  return taken.map((n) => n.writtenAt).sort((a, b) => a - b)
}
