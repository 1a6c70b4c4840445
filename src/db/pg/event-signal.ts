/**
 * Tells this process when a PostgreSQL transaction that appended events has committed: the live fan-out's
 * wake (the hub reads the outbox at once instead of at its next poll, and in cluster mode the other nodes
 * are told through Redis pub/sub, src/nodes/wake-bus.ts). The appends mark the connection they ran on;
 * the two places that commit (withTransaction, the group committer) announce a marked connection's commit.
 * A mark left by a rolled-back transaction is cleared at the connection's next BEGIN; a false wake costs one
 * cheap read, a missed one at most the safety poll.
 */
import type { Pool, PoolClient } from 'pg'

const marked = new WeakSet<object>()
const listeners = new Set<() => void>()

/** An append of events ran on `q`: announced when its transaction commits (at once outside one). */
export function noteEventsAppended(q: Pool | PoolClient): void {
  // A checked-out client runs a transaction here; the pool itself runs each statement on its own.
  if ('release' in q) marked.add(q)
  else announce()
}

/** A transaction starts on `client`: whatever it marked before is gone (rolled back, or announced). */
export function eventsBegin(client: object): void {
  marked.delete(client)
}

/** `client` committed: tells the listeners when its transaction appended events. */
export function eventsCommitted(client: object): void {
  if (marked.delete(client)) announce()
}

/** Listens for commits that appended events (any Org); returns the unsubscribe function. */
export function onEventsCommitted(listener: () => void): () => void {
  listeners.add(listener)
  return () => listeners.delete(listener)
}

function announce(): void {
  for (const l of listeners) l()
}
