/**
 * Work of one process taken one piece at a time, in call order: each piece starts once the previous one
 * has settled (a failure is the caller's to see and does not stop the pieces after it).
 */
export interface Turns {
  <T>(work: () => Promise<T>): Promise<T>
  /** Settles once every piece taken so far has (the same promise until another piece is taken). */
  readonly tail: Promise<unknown>
}

export function createTurns(): Turns {
  let last: Promise<unknown> = Promise.resolve()
  const take = <T>(work: () => Promise<T>): Promise<T> => {
    const run = last.then(work)
    last = run.catch(() => {})
    return run
  }
  return Object.defineProperty(take, 'tail', { get: () => last }) as Turns
}
