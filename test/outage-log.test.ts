/**
 * Background loops' failures (src/db/outage-log.ts): the database being away is logged at warn once per
 * message per window, with the repeats counted on the next line; any other failure every time, at its
 * level. A PostgreSQL outage of ten minutes was thousands of error lines on every node before.
 */
import { expect, test } from 'bun:test'
import { Logger } from '../src/core/logger'
import { failureLog } from '../src/db/outage-log'

function capture() {
  const lines: Record<string, unknown>[] = []
  const log = new Logger('info', (text) => {
    for (const l of text.split('\n')) if (l) lines.push(JSON.parse(l))
  })
  return { log, lines, flushed: () => new Promise((r) => setImmediate(r)) }
}

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })

test('the database away: one warn line per message per window, the repeats counted on the next one', async () => {
  const { log, lines, flushed } = capture()
  let now = 0
  const failed = failureLog(log, 30_000, () => now)
  for (let i = 0; i < 100; i++) {
    failed('error', 'worker tick failed', refused())
    failed('warn', 'a processing partition lease could not be renewed', refused(), { partition: i % 16 })
    now += 100
  }
  await flushed()
  expect(lines.map((l) => [l.level, l.msg, l.databaseUnavailable])).toEqual([
    ['warn', 'worker tick failed', true],
    ['warn', 'a processing partition lease could not be renewed', true],
  ])
  now += 30_000
  failed('error', 'worker tick failed', refused())
  await flushed()
  expect(lines.length).toBe(3)
  expect(lines[2]).toMatchObject({ level: 'warn', msg: 'worker tick failed', notLoggedSinceLastLine: 99, error: 'connect ECONNREFUSED 127.0.0.1:5432' })
})

test('any other failure is logged every time at the level asked for', async () => {
  const { log, lines, flushed } = capture()
  const failed = failureLog(log, 30_000, () => 0)
  for (let i = 0; i < 3; i++) failed('error', 'webhook dispatch failed', new TypeError("Cannot read properties of undefined (reading 'id')"))
  await flushed()
  expect(lines.map((l) => [l.level, l.msg, l.error])).toEqual(Array(3).fill(['error', 'webhook dispatch failed', "Cannot read properties of undefined (reading 'id')"]))
})
