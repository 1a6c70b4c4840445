/**
 * The spam score (src/abuse/spam-score.ts), its learning (spam-learn.ts) and the repeated-text tracker, as
 * tables. The guarantee the spec's clients rely on: content alone (links, stack traces, a phrase) never
 * makes a report spam, whatever the App learned.
 */
import { describe, expect, test } from 'bun:test'
import { contentReasons, CONTENT_CAP, spamScore, SPAM_THRESHOLD, type SpamSignals } from '../src/abuse/spam-score'
import { FACTOR_MAX, FACTOR_MIN, learnFrom, parseFactors } from '../src/abuse/spam-learn'
import { RepeatTracker } from '../src/abuse/repeat-tracker'
import { ManualClock } from '../src/core/clock'

const base: SpamSignals = { addressPerMinute: 1, repeatAddresses: 1, powRaised: false, text: 'The save button does nothing on the settings page.' }

const LONG_BUG_REPORT = `Checkout fails with a 500 after the address step.
Steps: open https://shop.example.com/cart, click "Checkout", fill the address, press Continue.
Expected the payment page, got "Something went wrong". Same on https://shop.example.com/checkout?step=2 and
https://staging.shop.example.com/checkout. Docs say it should work: https://docs.example.com/checkout#address
and the status page https://status.example.com shows nothing. Console:
TypeError: Cannot read properties of undefined (reading 'zip')
    at validateAddress (https://shop.example.com/assets/app.3f2a1.js:1:48213)
    at HTMLFormElement.onSubmit (https://shop.example.com/assets/app.3f2a1.js:1:50122)
    at https://cdn.example.net/vendor/react-dom.production.min.js:7:1234
Happens in Firefox 128 and Chrome 126, every time since yesterday's release. Click here to reproduce: https://shop.example.com/cart?debug=1`

const LINK_LIST = Array.from({ length: 30 }, (_, i) => `https://example.com/page/${i}`).join(' ')

describe('spamScore', () => {
  test.each([
    ['an ordinary report', base, false, []],
    ['honeypot filled', { ...base, honeypot: 'http://spam.example' }, true, ['honeypot']],
    ['honeypot of spaces only: empty', { ...base, honeypot: '   ' }, false, []],
    ['submitted 400 ms after opening', { ...base, formMs: 400 }, true, ['too_fast']],
    ['submitted after 1.5 s', { ...base, formMs: 1500 }, false, []],
    ['an address flooding, alone', { ...base, addressPerMinute: 30 }, false, ['address_flood']],
    ['the same text from many addresses, alone', { ...base, repeatAddresses: 5 }, false, ['repeated_text']],
    ['flooding with the same text', { ...base, addressPerMinute: 30, repeatAddresses: 5 }, true, ['address_flood', 'repeated_text']],
    ['a long bug report with many links and a stack trace', { ...base, text: LONG_BUG_REPORT }, false, null],
    ['nothing but links', { ...base, text: LINK_LIST }, false, ['link_density']],
    ['spam phrases and links, by content alone', { ...base, text: `Buy now cheap viagra online casino ${LINK_LIST}` }, false, ['spam_phrases', 'link_density']],
    ['spam content with a raised proof of work', { ...base, powRaised: true, text: `Buy now cheap viagra online casino ${LINK_LIST}` }, false, null],
    ['spam content from a flooding address', { ...base, addressPerMinute: 30, text: `Buy now cheap viagra ${LINK_LIST}` }, true, null],
  ] as [string, SpamSignals, boolean, string[] | null][])('%s', (_name, signals, spam, reasons) => {
    const v = spamScore(signals)
    expect(v.spam).toBe(spam)
    expect(v.score).toBeGreaterThanOrEqual(0)
    expect(v.score).toBeLessThanOrEqual(1)
    if (reasons) expect(v.reasons).toEqual(reasons as never)
  })

  test('content alone stays under the threshold even with every content factor at its maximum', () => {
    const v = spamScore({ ...base, powRaised: true, text: `Buy now cheap viagra casino seo services backlinks ${LINK_LIST}` }, { spam_phrases: FACTOR_MAX, link_density: FACTOR_MAX, pow_raised: 1 })
    expect(v.score).toBeLessThan(SPAM_THRESHOLD)
    expect(CONTENT_CAP + 0.15).toBeLessThan(SPAM_THRESHOLD)
  })

  test('learned factors weigh a reason less: "not spam" twice on too_fast keeps a fast typist out of the folder', () => {
    let f = learnFrom({}, ['too_fast'], 'not_spam')
    f = learnFrom(f, ['too_fast'], 'not_spam')
    expect(f.too_fast).toBe(0.64)
    expect(spamScore({ ...base, formMs: 800 }, f).spam).toBe(false)
    expect(spamScore({ ...base, formMs: 800 }).spam).toBe(true)
  })

  test('contentReasons: phrases on word boundaries only', () => {
    expect(contentReasons('The casino page crashes').phrases).toBe(1)
    expect(contentReasons('occasional crash in escortview').phrases).toBe(0)
    expect(contentReasons(LONG_BUG_REPORT).linkDensity).toBe(false)
  })
})

describe('learning', () => {
  test('bounded both ways; unknown reasons ignored', () => {
    let f = {}
    for (let i = 0; i < 50; i++) f = learnFrom(f, ['honeypot', 'nonsense', 'marked_by_hand'], 'not_spam')
    expect(f).toEqual({ honeypot: FACTOR_MIN })
    for (let i = 0; i < 50; i++) f = learnFrom(f, ['honeypot'], 'spam')
    expect(f).toEqual({ honeypot: FACTOR_MAX })
  })

  test.each([
    ['', {}],
    ['not json', {}],
    ['[1,2]', {}],
    ['{"honeypot": 9, "too_fast": "x", "evil": 0.1}', { honeypot: FACTOR_MAX }],
    ['{"link_density": -5}', { link_density: FACTOR_MIN }],
  ])('parseFactors(%p)', (json, want) => {
    expect(parseFactors(json)).toEqual(want)
  })
})

describe('RepeatTracker', () => {
  test('distinct addresses per App and text, within the window, short texts ignored', () => {
    const clock = new ManualClock(1_000_000)
    const t = new RepeatTracker(clock, 100)
    const text = 'Win a free iPhone now at our great website today'
    expect(t.note('a', '1.1.1.1', text)).toBe(1)
    expect(t.note('a', '1.1.1.1', text)).toBe(1)
    expect(t.note('a', '2.2.2.2', text.toUpperCase() + '!!!')).toBe(2) // normalized alike
    expect(t.note('b', '3.3.3.3', text)).toBe(1) // another App
    expect(t.note('a', '4.4.4.4', 'it does not work')).toBe(1) // too short to compare
    clock.advance(11 * 60_000)
    expect(t.note('a', '5.5.5.5', text)).toBe(1)
    for (let i = 0; i < 500; i++) t.note('a', `9.9.9.${i % 250}`, `distinct text number ${i} with enough characters`)
  })
})
