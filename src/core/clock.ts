/** Time is injected so token expiry, batch windows, leases and retries are tested without sleeping. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/**
 * A node's clock set to another clock (cluster mode: the database's, src/db/pg/db-clock.ts): `now()` is
 * this machine's time plus the offset last measured by `observe`. The times a node writes for later
 * (a retry's `run_after`, a delivery's next attempt, an expiry) are then the database's now plus a delay,
 * whatever this machine's clock says; the comparisons that decide leases are made in SQL anyway.
 */
export class OffsetClock implements Clock {
  private offset = 0
  private measured = false
  now(): number {
    return Date.now() + this.offset
  }
  /** The other clock read `remote` between this machine's `before` and `after` (its midpoint taken as the moment). */
  observe(remote: number, before: number, after: number): void {
    // A slow round trip gives a poor measure: kept only when there is no better one.
    if (this.measured && after - before > 1_000) return
    this.offset = remote - Math.round((before + after) / 2)
    this.measured = true
  }
  /** How far this machine's clock is behind the other (ms; negative: ahead). */
  get offsetMs(): number {
    return this.offset
  }
}

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
