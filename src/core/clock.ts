/** Time is injected so token expiry, batch windows, leases and retries are tested without sleeping. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private ms = Date.now()) {}
  now(): number {
    return this.ms
  }
  advance(ms: number): void {
    this.ms += ms
  }
  set(ms: number): void {
    this.ms = ms
  }
}

export const isoUtc = (ms: number): string => new Date(ms).toISOString()
