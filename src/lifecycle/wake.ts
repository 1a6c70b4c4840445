/**
 * The explicit "new work was queued" signal: the lifecycle raises it whenever it enqueues a job, and the
 * worker listens, so it runs at once instead of at its next poll. Raising it inside a transaction is
 * safe: listeners run later (the worker schedules itself on a timer), after the commit.
 */
import type { JobKind } from './jobs'

export function createWakeSignal() {
  const listeners = new Set<(kind: JobKind) => void>()
  return {
    /** Registers a listener; it learns the kind queued, so a worker that does not run it stays asleep. */
    on(listener: (kind: JobKind) => void): () => void {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    raise(kind: JobKind): void {
      for (const l of listeners) l(kind)
    },
  }
}
export type WakeSignal = ReturnType<typeof createWakeSignal>
