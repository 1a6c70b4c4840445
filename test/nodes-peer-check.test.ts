/**
 * src/nodes/peer-check.ts: a live peer is named as unheard only after a grace of three beats, only while
 * it stays silent longer than the silence window (its own lease when longer; since first seen when never
 * heard), and forgotten when it leaves.
 */
import { expect, test } from 'bun:test'
import { PeerCheck } from '../src/nodes/peer-check'

test.each([
  // [description, beats of [peers alive, now], heard (node → time), expected unheard after the last beat]
  ['a peer heard lately is fine', [[['a'], 0], [['a'], 1000], [['a'], 2000]], { a: 1900 }, []],
  ['a peer never heard is named after three beats, once silent longer than the window since first seen', [[['a'], 0], [['a'], 1000], [['a'], 6000]], {}, ['a']],
  ['never heard but seen for less than the window: not yet (its first announcement may be on its way)', [[['a'], 0], [['a'], 1000], [['a'], 2000]], {}, []],
  ['not before three beats (it may have just started)', [[['a'], 0], [['a'], 1000]], {}, []],
  ['a peer heard longer ago than the window is named', [[['a'], 0], [['a'], 1000], [['a'], 9000]], { a: 1000 }, ['a']],
  ['a peer that left is forgotten, and counts its beats anew when it is back', [[['a'], 0], [['a'], 1000], [[], 2000], [['a'], 3000]], {}, []],
  ['only the silent ones, sorted', [[['c', 'a', 'b'], 0], [['c', 'a', 'b'], 1000], [['c', 'a', 'b'], 6000]], { b: 5990 }, ['a', 'c']],
] as const)('%s', (_name, beats, heard, expected) => {
  const check = new PeerCheck(5000, (id) => (heard as Record<string, number>)[id])
  for (const [peers, now] of beats) check.observe(peers as readonly string[], now as number)
  expect(check.unheardPeers()).toEqual([...expected])
})

test('a peer with a longer lease than this node\'s announces at its own beats: silent up to its lease, it is not named; longer, it is', () => {
  // This node: 5 s. The peer: 60 s, a beat (and an announcement) every 20 s.
  const heard: Record<string, number> = { long: 0, old: 0 }
  const check = new PeerCheck(5000, (id) => heard[id])
  const peers = [{ id: 'long', leaseMs: 60_000 }, { id: 'old', leaseMs: null }]
  for (const now of [1000, 2000, 3000, 18_000]) check.observe(peers, now)
  // 18 s since its last announcement: within its 60 s; a peer that recorded no lease is judged by this node's 5 s.
  expect(check.unheardPeers()).toEqual(['old'])
  check.observe(peers, 61_000)
  expect(check.unheardPeers()).toEqual(['long', 'old'])

  // Just started, not heard yet (its first announcement comes at its second beat, 20 s on): not named before its lease.
  const fresh = new PeerCheck(5000, () => undefined)
  for (const now of [100_000, 101_700, 103_400, 105_100, 118_000]) fresh.observe([{ id: 'long', leaseMs: 60_000 }], now)
  expect(fresh.unheardPeers()).toEqual([])
  fresh.observe([{ id: 'long', leaseMs: 60_000 }], 161_000)
  expect(fresh.unheardPeers()).toEqual(['long'])
})
