/**
 * Options every fixloop PostgreSQL pool (postgres.js) is opened with.
 *
 * `backoff`: postgres.js counts connection errors pool-wide and waits `3^errors / 100` s (capped at 20 s)
 * before each reconnect. When a database restarts or a failover ends every connection at once, ten
 * errors make every connection of the pool wait up to 20 s: measured in Bun, a pool of 10 whose backends
 * were terminated answered again after 18 s (5.5 s in Node). fixloop's queries are short and a restart
 * should cost seconds, so the wait doubles from 50 ms and stops at 1 s. That alone does not settle it under
 * Bun: see the known gap in test/pg-driver.test.ts.
 */
export const PG_CLIENT_OPTIONS = {
  backoff: (errors: number) => Math.min(0.05 * 2 ** errors, 1),
  onnotice: () => {},
} as const
