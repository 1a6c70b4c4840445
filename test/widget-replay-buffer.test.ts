/**
 * The session recorder's memory and packing rules (widget/src/replay/buffer.ts, pack.ts) on a fake clock:
 * segments dropped once the next one starts before the window, the hard cap (oldest segments first, a
 * fresh snapshot when one segment is over it, no recording when a snapshot alone is over it), the window
 * held at the report's moment, and the upload packing (custom events merged in order, oldest segments
 * dropped until the gzip fits).
 */
import { expect, test } from 'bun:test'
import { gunzipSync } from 'node:zlib'
import { ReplayBuffer, type TimedEvent } from '../widget/src/replay/buffer'
import { contextEvents, merge, pack } from '../widget/src/replay/pack'

const meta = (t: number): TimedEvent => ({ type: 4, timestamp: t, data: { href: 'x' } })
const full = (t: number, pad = 0): TimedEvent => ({ type: 2, timestamp: t, data: { node: 'x'.repeat(pad) } })
const change = (t: number, pad = 0): TimedEvent => ({ type: 3, timestamp: t, data: { source: 0, text: 'y'.repeat(pad) } })

/** A recorder stand-in: pushes a snapshot (Meta + FullSnapshot) into the buffer when asked for one. */
function harness(windowMs: number, cap: number, snapshotPad = 0) {
  let now = 0
  let checkouts = 0
  const buffer: ReplayBuffer = new ReplayBuffer(windowMs, cap, () => {
    checkouts++
    buffer.push(meta(now))
    buffer.push(full(now, snapshotPad))
  }, () => now)
  return {
    buffer,
    at: (t: number) => (now = t),
    checkouts: () => checkouts,
    snapshot: (t: number) => {
      now = t
      buffer.push(meta(t))
      buffer.push(full(t, snapshotPad))
    },
  }
}

test('a segment goes once the next one starts before the window; the window is held at the report moment', () => {
  const h = harness(10_000, 10 * 1024 * 1024)
  for (let t = 0; t <= 40_000; t += 1000) {
    if (t % 5000 === 0) h.snapshot(t)
    else h.buffer.push(change(h.at(t)))
  }
  // Window [30 s, 40 s]: the segment from 30 s covers its start; older ones are gone.
  expect(h.buffer.stats().oldest).toBe(30_000)
  expect(h.buffer.snapshot()[0][0].type).toBe(4)
  h.buffer.hold(40_000)
  for (let t = 41_000; t <= 60_000; t += 1000) {
    if (t % 5000 === 0) h.snapshot(t)
    else h.buffer.push(change(h.at(t)))
  }
  expect(h.buffer.stats().oldest).toBe(30_000) // the N seconds before the report stay while the dialog is open
  h.buffer.release()
  h.buffer.push(change(h.at(61_000)))
  expect(h.buffer.stats().oldest).toBe(50_000)
})

test('forget (Fixloop.resetUser): nothing recorded before stays; recording goes on from a fresh snapshot', () => {
  // Found by the web attack of attack-web: a single-page app's next user's report carried the previous
  // user's last N seconds of the page (their screen) in its replay.
  const h = harness(60_000, 10 * 1024 * 1024)
  h.snapshot(0)
  for (let t = 1000; t <= 9000; t += 1000) h.buffer.push(change(h.at(t), 10))
  h.buffer.hold(9000)
  h.at(10_000)
  h.buffer.forget()
  expect(h.checkouts()).toBe(1)
  expect(h.buffer.held).toBeUndefined()
  const kept = h.buffer.snapshot().flat()
  expect(kept.map((e) => [e.type, e.timestamp])).toEqual([
    [4, 10_000],
    [2, 10_000],
  ])
  h.buffer.push(change(h.at(11_000)))
  expect(h.buffer.stats()).toMatchObject({ segments: 1, events: 3, oldest: 10_000 })
})

test('the hard cap: oldest segments first, a fresh snapshot for one segment over it, never above the cap', () => {
  const h = harness(300_000, 20_000, 1000)
  h.snapshot(0)
  let most = 0
  for (let t = 1; t <= 5000; t++) {
    h.buffer.push(change(h.at(t), 200))
    most = Math.max(most, h.buffer.stats().bytes)
    if (t % 1000 === 0) h.snapshot(t)
  }
  expect(most).toBeLessThanOrEqual(20_000)
  expect(h.checkouts()).toBeGreaterThan(0) // one segment over the cap asked for a new snapshot
  const kept = h.buffer.snapshot()
  expect(kept[0][0].type).toBe(4)
  expect(kept[0][1].type).toBe(2)
  expect(h.buffer.stats().overflow).toBe(false)
})

test('a snapshot alone over the cap: nothing is kept, recording stops', () => {
  const h = harness(60_000, 5_000, 10_000)
  h.snapshot(0)
  expect(h.buffer.stats()).toMatchObject({ bytes: 0, segments: 0, overflow: true })
  h.buffer.push(change(h.at(1), 10))
  expect(h.buffer.stats().events).toBe(0)
})

test('pack: custom events merged in time order within the recording; oldest segments dropped until the gzip fits', async () => {
  const segments = [
    [meta(1000), full(1000, 50_000), change(1500)],
    [meta(2000), full(2000, 10), change(2500), change(3000)],
  ]
  const context = (start: number) =>
    contextEvents(start, 4000, [{ level: 'error', message: 'boom', ts: 2600 }, { level: 'log', message: 'no', ts: 2700 }, { level: 'warn', message: 'old', ts: 10 }], [{ method: 'GET', url: 'https://a/x', status: 500, ms: 12, ts: 2500 }], 2800)
  const all = JSON.parse(gunzipSync(Buffer.from(await (await pack(segments, context))!.arrayBuffer())).toString())
  expect(all.v).toBe(1)
  expect(all.events.map((e: TimedEvent) => e.timestamp)).toEqual([1000, 1000, 1500, 2000, 2000, 2500, 2500, 2600, 2800, 3000])
  expect(all.events.filter((e: TimedEvent) => e.type === 5).map((e: TimedEvent) => e.data)).toEqual([
    { tag: 'fixloop.network', payload: { method: 'GET', url: 'https://a/x', status: 500, durationMs: 12 } },
    { tag: 'fixloop.console', payload: { level: 'error', message: 'boom' } },
    { tag: 'fixloop.report', payload: {} },
  ])
  // A limit an incompressible oldest segment cannot fit in: only the newest segment is sent.
  const small = await pack([[meta(1000), full(1000, 0), { type: 3, timestamp: 1500, data: crypto.getRandomValues(new Uint8Array(4000)).join(',') }], segments[1]], context, 2000)
  const kept = JSON.parse(gunzipSync(Buffer.from(await small!.arrayBuffer())).toString())
  expect(kept.events[0].timestamp).toBe(2000)
  expect(await pack([[meta(1), full(1, 0), { type: 3, timestamp: 2, data: crypto.getRandomValues(new Uint8Array(4000)).join(',') }]], context, 100)).toBeUndefined()
  expect(merge([], [change(1)])).toHaveLength(1)
})

test('pack on a page with Prototype.js 1.6 (Array.prototype.toJSON returns a string): the events stay an array', async () => {
  const proto = Array.prototype as unknown as { toJSON?: () => string }
  proto.toJSON = function (this: unknown[]) {
    return '[' + this.map((x) => JSON.stringify(x)).join(', ') + ']'
  }
  try {
    const blob = await pack([[meta(1000), full(1000, 10), change(1500)]], () => [])
    const all = JSON.parse(gunzipSync(Buffer.from(await blob!.arrayBuffer())).toString())
    expect(Array.isArray(all.events)).toBe(true)
    expect(all.events.map((e: TimedEvent) => e.timestamp)).toEqual([1000, 1000, 1500])
  } finally {
    delete proto.toJSON
  }
})
