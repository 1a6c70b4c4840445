/**
 * src/nodes/peer-check.ts: a live peer is named as unheard only after a grace of three beats, only while
 * it stays silent longer than the silence window, and forgotten when it leaves.
 */
import { expect, test } from 'bun:test'
import { PeerCheck } from '../src/nodes/peer-check'

test.each([
  // [description, beats of [peers alive, now], heard (node → time), expected unheard after the last beat]
  ['a peer heard lately is fine', [[['a'], 0], [['a'], 1000], [['a'], 2000]], { a: 1900 }, []],
  ['a peer never heard is named after three beats', [[['a'], 0], [['a'], 1000], [['a'], 2000]], {}, ['a']],
  ['not before three beats (it may have just started)', [[['a'], 0], [['a'], 1000]], {}, []],
  ['a peer heard longer ago than the window is named', [[['a'], 0], [['a'], 1000], [['a'], 9000]], { a: 1000 }, ['a']],
  ['a peer that left is forgotten, and counts its beats anew when it is back', [[['a'], 0], [['a'], 1000], [[], 2000], [['a'], 3000]], {}, []],
  ['only the silent ones, sorted', [[['c', 'a', 'b'], 0], [['c', 'a', 'b'], 1000], [['c', 'a', 'b'], 2000]], { b: 1990 }, ['a', 'c']],
] as const)('%s', (_name, beats, heard, expected) => {
  const check = new PeerCheck(5000, (id) => (heard as Record<string, number>)[id])
  for (const [peers, now] of beats) check.observe(peers as readonly string[], now as number)
  expect(check.unheardPeers()).toEqual([...expected])
})
