/**
 * Tells this process when a PostgreSQL transaction that appended events has committed, and for which Orgs:
 * the live fan-out's wake (the hub marks those Orgs as having news without reading the outbox, and in
 * cluster mode the other nodes are told through Redis pub/sub, src/nodes/wake-bus.ts). The appends mark
 * the connection they ran on with each Org's new `event_counters.last_seq` (their statements return it);
 * the two places that commit (withTransaction, the group committer) announce a marked connection's commit.
 * A mark left by a rolled-back transaction is cleared at the connection's next BEGIN, and one left by a
 * write undone with ROLLBACK TO SAVEPOINT is restored to what it was at the SAVEPOINT: an announced seq is
 * always a committed one, which the hubs rely on to skip reading the counters (modules/events/repo.ts
 * `advance`). An append that does not say its Orgs makes the commit announce "some Orgs" (`null`): the
 * hubs then read the counters. A false wake costs one cheap read, a missed one at most the safety poll.
 */
import type { Pool, PoolClient } from 'pg'

/** Orgs that got events, each with its last seq after them (a committed value: seqs only ever rise). */
export type EventNews = ReadonlyMap<string, number>

/** Per connection in a transaction: what it appended so far (null: some Orgs, unknown which). */
const marked = new WeakMap<object, Map<string, number> | null>()
/** Per connection: its mark when the current SAVEPOINT was taken (absent: none then). */
const atSavepoint = new WeakMap<object, { mark: Map<string, number> | null | undefined }>()
const listeners = new Set<(news: EventNews | null) => void>()

/**
 * An append of events ran on `q`: announced when its transaction commits (at once outside one). `news`:
 * the Orgs it appended for and each one's last seq after it; without it the commit announces `null`.
 */
export function noteEventsAppended(q: Pool | PoolClient, news?: Iterable<readonly [string, number]>): void {
  // A checked-out client runs a transaction here; the pool itself runs each statement on its own.
  if (!('release' in q)) return announce(news ? merge(new Map(), news) : null)
  const prev = marked.get(q)
  marked.set(q, prev === null || !news ? null : merge(prev ?? new Map(), news))
}

function merge(into: Map<string, number>, news: Iterable<readonly [string, number]>): Map<string, number> {
  for (const [org, seq] of news) if (seq > (into.get(org) ?? 0)) into.set(org, seq)
  return into
}

/** A transaction starts on `client`: whatever it marked before is gone (rolled back, or announced). */
export function eventsBegin(client: object): void {
  marked.delete(client)
  atSavepoint.delete(client)
}

/** `client` takes a SAVEPOINT: a ROLLBACK TO it takes the mark back to this point. */
export function eventsSavepoint(client: object): void {
  const mark = marked.get(client)
  atSavepoint.set(client, { mark: mark ? new Map(mark) : mark })
}

/** `client` rolled back to its SAVEPOINT: the appends since are undone, so is their mark. */
export function eventsRolledBackToSavepoint(client: object): void {
  const saved = atSavepoint.get(client)
  if (!saved || saved.mark === undefined) marked.delete(client)
  else marked.set(client, saved.mark && new Map(saved.mark))
}

/** `client` committed: tells the listeners when its transaction appended events. */
export function eventsCommitted(client: object): void {
  atSavepoint.delete(client)
  if (!marked.has(client)) return
  const news = marked.get(client)!
  marked.delete(client)
  announce(news)
}

/** Listens for commits that appended events: their news, or null when some append did not name its Orgs. */
export function onEventsCommitted(listener: (news: EventNews | null) => void): () => void {
  listeners.add(listener)
  return () => listeners.delete(listener)
}

function announce(news: EventNews | null): void {
  for (const l of listeners) {
    // Called right after a COMMIT, inside the committer: a listener's throw must not make a committed
    // transaction look failed to its callers.
    try {
      l(news)
    } catch {
      // the safety poll carries what this listener missed
    }
  }
}
