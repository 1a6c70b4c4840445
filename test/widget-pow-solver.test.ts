/**
 * The widget's own SHA-256 and ALTCHA search (widget/src/pow/): the digest matches node:crypto on the
 * block-boundary lengths and non-ASCII text, and the search finds the number an ALTCHA challenge was
 * made from (and only inside its range).
 */
import { expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { sha256Hex } from '../widget/src/pow/sha256'
import { searchRange } from '../widget/src/pow/solve'

const nodeSha = (s: string) => createHash('sha256').update(s).digest('hex')

test.each([
  ['empty', ''],
  ['abc', 'abc'],
  ['55 bytes (one block, length fits)', 'x'.repeat(55)],
  ['56 bytes (length spills into a second block)', 'x'.repeat(56)],
  ['64 bytes', 'x'.repeat(64)],
  ['119 bytes', 'y'.repeat(119)],
  ['multi-byte UTF-8', 'ü€😀'.repeat(30)],
  ['an ALTCHA salt with expiry and a number', 'c2d4e1f0a9b8?expires=1764050000&' + 123456],
])('sha256Hex(%s) equals node:crypto', (_name, text) => {
  expect(sha256Hex(text)).toBe(nodeSha(text))
})

test.each([
  ['the number 0', 0, 1000],
  ['a number in the middle', 4321, 10_000],
  ['the number maxnumber itself', 10_000, 10_000],
])('searchRange finds %s', (_name, secret, maxnumber) => {
  const salt = 'a1b2c3d4e5f6?expires=1764050000'
  const challenge = { salt, challenge: nodeSha(salt + secret), maxnumber }
  expect(searchRange(challenge, 0, maxnumber + 1)).toBe(secret)
  // Upper-case hex from a server is the same digest.
  expect(searchRange({ ...challenge, challenge: challenge.challenge.toUpperCase() }, 0, maxnumber + 1)).toBe(secret)
})

test.each([
  ['a salt shorter than a block', 'feed'],
  ['the server’s salt shape (a full block before the tail)', 'a1b2c3d4e5f6a1b2c3d4e5f6?expires=1764050000&app=0123456789abcdef01234567&max=100000&'],
  ['a salt of exactly one block', 's'.repeat(64)],
  ['a salt whose tail plus digits needs a second block', 't'.repeat(60)],
  ['a salt of two full blocks and a tail', 'u'.repeat(150)],
])('searchRange uses the salt midstate correctly: %s', (_name, salt) => {
  for (const secret of [7, 98_765]) expect(searchRange({ salt, challenge: nodeSha(salt + secret), maxnumber: 100_000 }, 0, 100_001)).toBe(secret)
})

test('a challenge that is not 64 hex digits is never "solved"', () => {
  expect(searchRange({ salt: 'x', challenge: 'zz', maxnumber: 10 }, 0, 11)).toBe(-1)
  expect(searchRange({ salt: 'x', challenge: nodeSha('x1').slice(0, 63), maxnumber: 10 }, 0, 11)).toBe(-1)
})

test('searchRange stays inside [from, to) and never past maxnumber', () => {
  const salt = 'feedface'
  const challenge = { salt, challenge: nodeSha(salt + 500), maxnumber: 499 }
  expect(searchRange(challenge, 0, 10_000)).toBe(-1) // 500 > maxnumber: not a valid answer
  expect(searchRange({ ...challenge, maxnumber: 1000 }, 0, 500)).toBe(-1)
  expect(searchRange({ ...challenge, maxnumber: 1000 }, 500, 501)).toBe(500)
})
