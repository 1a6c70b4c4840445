/**
 * Resource ids: 24 lowercase hex characters laid out like a MongoDB ObjectId — 4 bytes of unix seconds,
 * 5 random bytes fixed per process, 3 bytes of a counter. They sort by creation time, so "newest first"
 * is `ORDER BY id DESC` and a cursor is simply `id < ?`.
 */
import { randomBytes } from 'node:crypto'
import type { Clock } from './clock'
import { systemClock } from './clock'

const processRandom = randomBytes(5).toString('hex')
let counter = randomBytes(3).readUIntBE(0, 3)

export const ID_PATTERN = '^[0-9a-f]{24}$'

/** The id's first 18 characters (seconds + process random) for the last second seen: ids are made per request. */
let prefixSecond = -1
let prefix = ''

export function newId(clock: Clock = systemClock): string {
  counter = (counter + 1) & 0xffffff
  const seconds = Math.floor(clock.now() / 1000) >>> 0
  if (seconds !== prefixSecond) {
    prefixSecond = seconds
    prefix = seconds.toString(16).padStart(8, '0') + processRandom
  }
  // 0x1000000 + counter is 7 hex digits; dropping the leading 1 zero-pads the counter to 6.
  return prefix + (0x1000000 + counter).toString(16).slice(1)
}
