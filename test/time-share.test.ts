/**
 * Each App's share of the worker's call time (src/core/time-share.ts; tracker and git-host calls): past its budget in
 * a window, its calls wait for the next window; other Apps are not affected; a quiet App's entry goes.
 */
import { expect, test } from 'bun:test'
import { createAppTimeShare, createTimeShare } from '../src/core/time-share'

test('an App past its budget waits for its window to start again; another App does not', () => {
  let now = 1_000_000
  const budget = createTimeShare(() => now, 10_000, 60_000)
  expect(budget.waitMs('a')).toBe(0)
  budget.spend('a', 4_000)
  now += 1_000
  expect(budget.waitMs('a')).toBe(0)
  // One slow call takes it past the budget: the rest of the window is the wait.
  budget.spend('a', 15_000)
  expect(budget.waitMs('a')).toBe(59_000)
  expect(budget.waitMs('b')).toBe(0)
  now += 58_999
  expect(budget.waitMs('a')).toBe(1)
  now += 1
  expect(budget.waitMs('a')).toBe(0)
  // A new window counts from nothing.
  budget.spend('a', 9_999)
  expect(budget.waitMs('a')).toBe(0)
})

test('a clock stepped back does not hold an App past its budget for the length of the step', () => {
  // The worker's clock is the wall clock (or, in cluster mode, the database's through a measured offset):
  // an NTP step or a new offset can move it back. The window began "in the future" then, and the App's
  // pushes were deferred until the clock caught up with it, plus a minute: an hour's step, an hour.
  let now = 10_000_000
  const budget = createTimeShare(() => now, 10_000, 60_000)
  budget.spend('a', 15_000)
  expect(budget.waitMs('a')).toBe(60_000)
  now -= 3_600_000
  expect(budget.waitMs('a')).toBeLessThanOrEqual(60_000)
  // The window starts again from the stepped clock: the App's calls count from nothing.
  expect(budget.waitMs('a')).toBe(0)
  budget.spend('a', 10_000)
  expect(budget.waitMs('a')).toBe(60_000)
})

test("an Org's Apps together: past the Org's share every App of it waits, another Org's does not", () => {
  let now = 1_000_000
  const share = createAppTimeShare(() => now, 10_000, 20_000, 60_000)
  // Each App under its own share, the Org past its own after two slow calls.
  share.spend('a1', 'org', 15_000)
  expect(share.waitMs('a2', 'org')).toBe(0)
  share.spend('a2', 'org', 15_000)
  expect(share.waitMs('a3', 'org')).toBe(60_000)
  expect(share.waitMs('b1', 'other')).toBe(0)
  now += 60_000
  expect(share.waitMs('a3', 'org')).toBe(0)
})
