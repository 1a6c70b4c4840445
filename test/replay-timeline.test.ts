/**
 * The replay timeline the agent's task file carries (src/agent/replay-timeline.ts): rrweb events (as the
 * recorder writes them: a Meta, a FullSnapshot of the page, incremental Mutations, mouse and input
 * events, and the widget's Custom events) turned into navigations, clicks with selectors, console errors,
 * failed requests and the report's moment; never an input value or a query string; bounded, keeping the
 * last moments; anything that is not a replay gives none.
 */
import { describe, expect, test } from 'bun:test'
import { gzipSync } from 'node:zlib'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { clockOf, decodeReplay, MAX_BYTES, MAX_LINES, replayTimeline, timelineUrl, type ReplayEvent } from '../src/agent/replay-timeline'
import { sanitizeText } from '../src/sanitize/sanitize'

const scrub = (s: string) => sanitizeText(s, {})
const T0 = 1_764_400_000_000

/** A small shop page as rrweb serializes it (ids as the recorder numbers them, depth first). */
function page(): ReplayEvent[] {
  const el = (id: number, tagName: string, attributes: Record<string, string>, childNodes: unknown[] = []) => ({ type: 2, id, tagName, attributes, childNodes })
  const text = (id: number, textContent: string) => ({ type: 3, id, textContent })
  return [
    { type: 4, data: { href: 'https://shop.example/cart?session=abc123&email=sam%40example.com#top', width: 1280, height: 720 }, timestamp: T0 },
    {
      type: 2,
      timestamp: T0 + 12,
      data: {
        node: {
          type: 0,
          id: 1,
          childNodes: [
            { type: 1, id: 2, name: 'html', publicId: '', systemId: '' },
            el(3, 'html', {}, [
              el(4, 'body', { class: 'page cart' }, [
                el(5, 'section', { id: 'checkout' }, [
                  el(6, 'button', { class: 'btn btn-primary wide' }, [text(7, 'Pay now')]),
                  el(8, 'input', { type: 'text', name: 'coupon', value: 'SECRET-COUPON-4242' }),
                  el(9, 'a', { 'aria-label': 'Remove item', href: '/cart/remove?id=9' }),
                ]),
                el(10, 'div', { class: 'summary' }, [el(11, 'span', { class: 'total' }, [text(12, 'NaN')])]),
              ]),
            ]),
          ],
        },
        initialOffset: { left: 0, top: 0 },
      },
    },
  ]
}

const click = (id: number, at: number): ReplayEvent => ({ type: 3, data: { source: 2, type: 2, id, x: 10, y: 10, pointerType: 0 }, timestamp: T0 + at })
const input = (id: number, text: string, at: number): ReplayEvent => ({ type: 3, data: { source: 5, text, isChecked: false, id }, timestamp: T0 + at })
const custom = (tag: string, payload: Record<string, unknown>, at: number): ReplayEvent => ({ type: 5, data: { tag, payload }, timestamp: T0 + at })

function recording(): ReplayEvent[] {
  return [
    ...page(),
    { type: 3, data: { source: 1, positions: [{ x: 1, y: 2, id: 6, timeOffset: 0 }] }, timestamp: T0 + 900 },
    input(8, 'SECRET-COUPON-4242', 1500),
    click(6, 3200),
    custom('fixloop.network', { method: 'post', url: 'https://shop.example/api/pay?card=4111111111111111', status: 500, durationMs: 231.6 }, 3450),
    custom('fixloop.network', { method: 'GET', url: '/api/cart?id=7', status: 200, durationMs: 12 }, 3460),
    custom('fixloop.console', { level: 'error', message: 'TypeError: cannot read properties of undefined (reading "price") for sam@example.com' }, 3470),
    custom('fixloop.console', { level: 'log', message: 'just a log line' }, 3480),
    // The page adds a dialog; the user clicks its button.
    { type: 3, data: { source: 0, texts: [], attributes: [], removes: [], adds: [{ parentId: 4, nextId: null, node: { type: 2, id: 20, tagName: 'div', attributes: { role: 'dialog', 'data-testid': 'pay-error' }, childNodes: [{ type: 2, id: 21, tagName: 'button', attributes: { class: 'close' }, childNodes: [] }] } }] }, timestamp: T0 + 3600 },
    click(21, 4100),
    click(9, 5000),
    custom('fixloop.network', { method: 'DELETE', url: 'https://shop.example/api/cart/9', status: 0, durationMs: 30000 }, 35_000),
    { type: 4, data: { href: 'https://shop.example/help', width: 1280, height: 720 }, timestamp: T0 + 61_500 },
    custom('fixloop.report', {}, 62_250),
    click(6, 63_000),
  ]
}

describe('replay timeline', () => {
  test('navigations, clicks with selectors, failed requests, console errors and the report, in order, timed from the start', () => {
    const lines = replayTimeline(recording(), scrub)
    expect(lines).toEqual([
      '00:00.0  navigated to https://shop.example/cart?…#…',
      '00:03.2  clicked section#checkout button.btn.btn-primary',
      '00:03.4  request failed: POST https://shop.example/api/pay?… → 500 in 232 ms',
      '00:03.4  console error: TypeError: cannot read properties of undefined (reading "price") for [REDACTED:email]',
      '00:04.1  clicked div[data-testid="pay-error"] button.close',
      '00:05.0  clicked a[aria-label="Remove item"]',
      '00:35.0  request failed: DELETE https://shop.example/api/cart/9 → no response in 30000 ms',
      '01:01.5  navigated to https://shop.example/help',
      '01:02.2  the report was sent (the feedback form opened here)',
    ])
  })

  test('never an input value, a query value or the page text', () => {
    const all = replayTimeline(recording(), scrub).join('\n')
    for (const secret of ['SECRET-COUPON', 'abc123', 'sam%40example', 'sam@example.com', '4111111111111111', 'Pay now', 'NaN', 'id=7', 'id=9']) expect(all).not.toContain(secret)
  })

  test('warnings appear when few, and not when they would drown the errors', () => {
    const few = [...page(), custom('fixloop.console', { level: 'warn', message: 'deprecated API' }, 100)]
    expect(replayTimeline(few, scrub)).toContain('00:00.1  console warning: deprecated API')
    const many = [...page(), ...Array.from({ length: 11 }, (_, i) => custom('fixloop.console', { level: 'warn', message: `w${i}` }, 100 + i)), custom('fixloop.console', { level: 'error', message: 'boom' }, 200)]
    const lines = replayTimeline(many, scrub)
    expect(lines.some((l) => l.includes('warning'))).toBe(false)
    expect(lines).toContain('00:00.2  console error: boom')
  })

  test('rrweb console plugin events count like the widget’s', () => {
    const ev: ReplayEvent = { type: 6, data: { plugin: 'rrweb/console@1', payload: { level: 'error', payload: ['"Uncaught ReferenceError: cart is not defined"'], trace: [] } }, timestamp: T0 + 1000 }
    expect(replayTimeline([...page(), ev], scrub)).toContain('00:01.0  console error: "Uncaught ReferenceError: cart is not defined"')
  })

  test('a click on a node never seen, attribute mutations and a new FullSnapshot', () => {
    const events: ReplayEvent[] = [
      ...page(),
      click(999, 100),
      { type: 3, data: { source: 0, texts: [], removes: [], adds: [], attributes: [{ id: 11, attributes: { id: 'grand-total' } }] }, timestamp: T0 + 200 },
      click(11, 300),
      { type: 2, data: { node: { type: 0, id: 1, childNodes: [{ type: 2, id: 3, tagName: 'HTML', attributes: {}, childNodes: [{ type: 2, id: 6, tagName: 'MAIN', attributes: { class: 'x' }, childNodes: [] }] }] } }, timestamp: T0 + 400 },
      click(6, 500),
    ]
    expect(replayTimeline(events, scrub).slice(1)).toEqual(['00:00.1  clicked an element not in the recording', '00:00.3  clicked span#grand-total', '00:00.5  clicked main.x'])
  })

  test(`bounded to ${MAX_LINES} lines and ${MAX_BYTES} bytes, keeping the last moments before the report`, () => {
    const events: ReplayEvent[] = [...page()]
    for (let i = 0; i < 500; i++) events.push(custom('fixloop.console', { level: 'error', message: `error number ${i} ${'x'.repeat(150)}` }, 1000 + i * 10))
    events.push(custom('fixloop.report', {}, 9000))
    const lines = replayTimeline(events, scrub)
    expect(lines.length).toBeLessThanOrEqual(MAX_LINES)
    expect(Buffer.byteLength(lines.join('\n'))).toBeLessThanOrEqual(MAX_BYTES)
    expect(lines[0]).toMatch(/^… \d+ earlier moments left out$/)
    expect(lines.at(-1)).toBe('00:09.0  the report was sent (the feedback form opened here)')
    expect(lines.at(-2)).toContain('error number 499')
    // A long message is capped.
    for (const l of lines) expect(l.length).toBeLessThan(260)
  })

  test('mm:ss.s', () => {
    expect(clockOf(0)).toBe('00:00.0')
    expect(clockOf(3249)).toBe('00:03.2')
    expect(clockOf(61_500)).toBe('01:01.5')
    expect(clockOf(-5)).toBe('00:00.0')
  })

  test('URLs keep origin and path, lose query and fragment; credentials in the path are scrubbed', () => {
    expect(timelineUrl('https://u:p@shop.example/a/b?x=1', scrub)).toBe('https://shop.example/a/b?…')
    expect(timelineUrl('/api/x?token=1#f', scrub)).toBe('/api/x?…')
    expect(timelineUrl('javascript:alert(1)', scrub)).toBe('javascript:…')
    expect(timelineUrl('https://shop.example/users/sam@example.com/orders', scrub)).toBe('https://shop.example/users/[REDACTED:email]/orders')
  })
})

describe('decoding a replay attachment', () => {
  const events = recording()
  test('gzip {"v":1,"events"}, plain JSON, a bare array', () => {
    expect(decodeReplay(gzipSync(JSON.stringify({ v: 1, events })))).toEqual(events)
    expect(decodeReplay(new TextEncoder().encode(JSON.stringify({ v: 1, events })))).toEqual(events)
    expect(decodeReplay(gzipSync(JSON.stringify(events)))).toEqual(events)
  })

  test('anything else is no replay (never a throw)', () => {
    for (const junk of [
      new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0, 0]),
      new Uint8Array([0x1f, 0x8b, 1, 2, 3]),
      new TextEncoder().encode('{"v":2,"events":[]}'),
      new TextEncoder().encode('{"events":[]}'),
      new TextEncoder().encode('"just a string"'),
      new TextEncoder().encode('['.repeat(100_000)),
      new Uint8Array([0xff, 0xfe, 0x00]),
      new Uint8Array(0),
    ])
      expect(decodeReplay(junk)).toBeNull()
  })

  test('a gzip bomb stops at the bound', () => {
    const bomb = gzipSync(Buffer.alloc(80 * 1024 * 1024, 0x20))
    expect(bomb.length).toBeLessThan(200 * 1024)
    expect(decodeReplay(bomb)).toBeNull()
  })

  test('events that are not events are skipped; junk data never throws', () => {
    const decoded = decodeReplay(new TextEncoder().encode(JSON.stringify([{ type: 4, data: { href: 'https://a.example/' }, timestamp: T0 }, { type: 'x' }, null, 5, { type: 3, timestamp: T0 + 1, data: null }, { type: 2, timestamp: T0 + 2, data: { node: 'no' } }, { type: 3, timestamp: T0 + 3, data: { source: 2, type: 2, id: 'x' } }])))!
    expect(decoded).toHaveLength(4)
    expect(replayTimeline(decoded, scrub)).toEqual(['00:00.0  navigated to https://a.example/', '00:00.0  clicked an element not in the recording'])
  })

  test('a very deep page resolves without overflowing the stack', () => {
    let node: Record<string, unknown> = { type: 2, id: 100_000, tagName: 'button', attributes: { id: 'deep' }, childNodes: [] }
    for (let i = 99_999; i > 10; i--) node = { type: 2, id: i, tagName: 'div', attributes: {}, childNodes: [node] }
    const events: ReplayEvent[] = [{ type: 2, data: { node: { type: 0, id: 1, childNodes: [node] } }, timestamp: T0 }, click(100_000, 100)]
    expect(replayTimeline(events, scrub)).toEqual(['00:00.1  clicked button#deep'])
  })
})

describe('a real recording (rrweb 2.0.0-alpha.4 in Chromium, test/fixtures/replays)', () => {
  // Made by recording a small shop page with rrweb's `record` (maskAllInputs) and the widget's Custom
  // events, driven by playwright: typing a coupon and an email, a click on "Pay now" (a fetch answered 500,
  // a console error, a dialog the page adds), a click on the dialog's button, a click on "Remove item".
  const bytes = new Uint8Array(readFileSync(join(import.meta.dir, 'fixtures', 'replays', 'rrweb-2.0.0-alpha.4-cart.json.gz')))

  test('gives the timeline of what was done, with selectors from the real serialized DOM', () => {
    const events = decodeReplay(bytes)!
    expect(events.length).toBeGreaterThan(20)
    const lines = replayTimeline(events, scrub).map((l) => l.replace(/^\d\d:\d\d\.\d {2}/, ''))
    expect(lines).toEqual([
      'navigated to http://shop.example/cart?…',
      'clicked section#checkout button.btn.btn-primary',
      'request failed: POST /api/pay?… → 500 in ' + /in (\d+) ms/.exec(lines[2]!)![1] + ' ms',
      'console error: TypeError: cannot read properties of undefined (reading "price") [REDACTED:email]',
      'clicked div[data-testid="pay-error"] button.close',
      'clicked a[aria-label="Remove item"]',
      'the report was sent (the feedback form opened here)',
    ])
    const all = replayTimeline(events, scrub).join('\n')
    for (const secret of ['SECRET-COUPON', 'sam@example.com', 'abc123', '4111111111111111', 'Pay now']) expect(all).not.toContain(secret)
    // Timed from the start, in order.
    const times = replayTimeline(events, scrub).map((l) => l.slice(0, 7))
    expect([...times].sort()).toEqual(times)
    expect(times[0]! < '00:01.0').toBe(true) // the recording starts with DomContentLoaded, then the Meta
  })
})
