/**
 * The age sweeps (report retention, spam folder) keep out of intake's way (src/modules/reporters/age-sweep.ts):
 * while intake commits, batches are sized to about BUSY_BATCH_MS from the cost per report measured so far,
 * and the sweep pauses between them so that it takes at most BUSY_SHARE of the thread; when intake is quiet,
 * whole batches follow each other. bench/retention-intake.ts measures the effect on intake p99.
 */
import { describe, expect, test } from 'bun:test'
import { BUSY_BATCH_MS, BUSY_SHARE, batchPacer, createAgeSweep } from '../src/modules/reporters/age-sweep'
import { IntakeCommitTimes } from '../src/db/intake-turns'
import { ManualClock } from '../src/core/clock'
import { Logger } from '../src/core/logger'

describe('batchPacer', () => {
  test('quiet intake: whole batches, no pause', () => {
    const intake = new IntakeCommitTimes()
    const pacer = batchPacer(200, intake)
    expect(pacer.next()).toBe(200)
    expect(pacer.done(200, 2.4)).toBe(0)
    expect(pacer.next()).toBe(200)
  })

  test('busy intake: small batches of about BUSY_BATCH_MS, pauses that leave intake the rest', () => {
    // Intake committed a moment ago, all along (a real IntakeCommitTimes would turn quiet if this test were
    // held up past BUSY_WINDOW_MS on a loaded machine: it once was, and the batch came back whole).
    const intake = { msSinceIntakeCommit: () => 0 }
    const pacer = batchPacer(200, intake)
    // Nothing measured yet: the smallest batch.
    const first = pacer.next()
    expect(first).toBeLessThan(20)
    // 0.05 ms per report measured: a batch of BUSY_BATCH_MS / 0.05 = 20 reports next.
    const pause = pacer.done(first, first * 0.05)
    expect(pacer.next()).toBe(Math.floor(BUSY_BATCH_MS / 0.05))
    // The pause is at least (1 - share) / share of the batch's time.
    expect(pause).toBeGreaterThanOrEqual((first * 0.05 * (1 - BUSY_SHARE)) / BUSY_SHARE)
    // Cheap reports: capped at the whole batch; dear ones: never below the smallest batch.
    for (let i = 0; i < 20; i++) pacer.done(100, 0.1)
    expect(pacer.next()).toBe(200)
    for (let i = 0; i < 20; i++) pacer.done(10, 50)
    expect(pacer.next()).toBe(first)
  })

  test('without commit times (a caller that has none): whole batches', () => {
    expect(batchPacer(50).next()).toBe(50)
  })
})

describe('an age sweep under intake', () => {
  function sweepOver(total: number, intake: Pick<IntakeCommitTimes, 'msSinceIntakeCommit'>, msPerReport: number) {
    let left = total
    const limits: number[] = []
    const sweep = createAgeSweep(
      {
        apps: async () => [{ id: 'app', orgId: 'org', days: 1 }],
        async deleteBatch(_app, _before, limit) {
          limits.push(limit)
          const n = Math.min(limit, left)
          left -= n
          // The batch's work holds the thread, as SQLite's statements do.
          const until = performance.now() + n * msPerReport
          while (performance.now() < until);
          return { deleted: n, uploadKeys: [] }
        },
        batch: 200,
        maxBatches: 50,
        auditAction: 'test.expired',
        logMessage: 'test',
      },
      { uploads: { discard: async () => 0 }, audit: { record: async () => undefined }, clock: new ManualClock(Date.now()), log: new Logger('silent'), intake },
    )
    return { sweep, limits }
  }

  test('while intake commits, no batch holds the thread much longer than BUSY_BATCH_MS, and the sweep still finishes', async () => {
    // Intake committed a moment ago, all along. Not a real IntakeCommitTimes fed by a 5 ms interval: on a
    // loaded machine the interval (or the sweep's own thread) stalled past BUSY_WINDOW_MS, intake looked quiet
    // for that moment, and a whole batch of 200 came, as it should for quiet intake (a CI-like run under load).
    const intake = { msSinceIntakeCommit: () => 0 }
    const { sweep, limits } = sweepOver(600, intake, 0.02)
    const started = performance.now()
    expect(await sweep.sweep()).toBe(600)
    const ms = performance.now() - started
    // 600 reports × 0.02 ms = 12 ms of work, spread to take at most BUSY_SHARE of the time.
    expect(ms).toBeGreaterThan(12 / BUSY_SHARE / 2)
    expect(Math.max(...limits.slice(1))).toBeLessThanOrEqual(Math.ceil((BUSY_BATCH_MS * 1.5) / 0.02))
    expect(limits.length).toBeGreaterThan(600 / 200)
  })

  test('when intake is quiet, whole batches back to back', async () => {
    const { sweep, limits } = sweepOver(1000, new IntakeCommitTimes(), 0.001)
    expect(await sweep.sweep()).toBe(1000)
    expect(limits).toEqual([200, 200, 200, 200, 200, 200])
  })

  test('at most maxBatches × batch reports per run; the rest at the next run', async () => {
    const { sweep } = sweepOver(10_500, new IntakeCommitTimes(), 0)
    expect(await sweep.sweep()).toBe(10_000)
    expect(await sweep.sweep()).toBe(500)
  })
})
