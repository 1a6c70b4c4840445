/**
 * The explicit "new work was queued" signal: the lifecycle raises it whenever it enqueues a job, and the
 * worker listens, so it runs at once instead of at its next poll. Raising it inside a transaction is
 * safe: listeners run later (the worker schedules itself on a timer), after the commit.
 */
export function createWakeSignal() {
  const listeners = new Set<() => void>()
  return {
    /** Registers a listener; returns a function that removes it. */
    on(listener: () => void): () => void {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    raise(): void {
      for (const l of listeners) l()
    },
  }
}
export type WakeSignal = ReturnType<typeof createWakeSignal>
