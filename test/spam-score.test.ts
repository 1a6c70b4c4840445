/**
 * The spam score (src/abuse/spam-score.ts), its learning (spam-learn.ts) and the repeated-text tracker, as
 * tables. The guarantee the spec's clients rely on: content alone (links, stack traces, a phrase) never
 * makes a report spam, whatever the App learned.
 */
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { contentReasons, CONTENT_CAP, LIKE_SPAM_SIMILARITY, LINK_FLOOD_ADDRESSES, linkedSites, spamScore, SPAM_REASONS, SPAM_THRESHOLD, SPAM_WEIGHTS, templateOf, type SpamSignals } from '../src/abuse/spam-score'
import { FACTOR_MAX, FACTOR_MIN, learnFrom, parseFactors } from '../src/abuse/spam-learn'
import { RepeatTracker } from '../src/abuse/repeat-tracker'
import { SPAM_RING_WINDOW_MS, SpamRing } from '../src/abuse/spam-ring'
import { clearedAfter, parseCleared } from '../src/abuse/spam-cleared'
import { trigramCosines, trigramVector, trigramVectorCosine } from '../src/dedup/rerank'
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
    ['no widget signals on an App with proof of work, alone', { ...base, noWidgetSignals: true }, false, ['no_widget_signals']],
    ['a script (no widget signals) with spam content at a raised proof of work', { ...base, noWidgetSignals: true, powRaised: true, text: `Buy now cheap viagra online casino ${LINK_LIST}` }, true, ['pow_raised', 'no_widget_signals', 'spam_phrases', 'link_density']],
    ['a backend script sending a real long report during a flood', { ...base, noWidgetSignals: true, powRaised: true, text: LONG_BUG_REPORT }, false, null],
    ['links to a site many addresses link to, alone', { ...base, linkFloodAddresses: 8 }, false, ['link_flood']],
    ['links to that site from a script with spam content', { ...base, linkFloodAddresses: 12, noWidgetSignals: true, text: `Buy now cheap viagra ${LINK_LIST}` }, true, null],
    ['seven addresses linking one site: not yet a flood', { ...base, linkFloodAddresses: 7 }, false, []],
    ['like a held spam text, alone', { ...base, likeSpam: 0.8 }, false, ['like_spam']],
    ['like a held spam text, with a spam phrase', { ...base, likeSpam: 0.6, text: 'Our SEO services put your site first' }, true, ['like_spam', 'spam_phrases']],
    ['like a held spam text, from a flooding address', { ...base, likeSpam: 0.6, addressPerMinute: 30 }, true, ['address_flood', 'like_spam']],
    ['like a held spam text, at a raised proof of work: not enough', { ...base, likeSpam: 0.9, powRaised: true }, false, ['pow_raised', 'like_spam']],
    ['just under the likeness bar', { ...base, likeSpam: LIKE_SPAM_SIMILARITY - 0.01, addressPerMinute: 30 }, false, ['address_flood']],
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
    // The widget on an App with proof of work sends signals: a person's report never has no_widget_signals.
    expect(spamScore({ ...base, formMs: 20_000, honeypot: '', powRaised: true, text: `Buy now cheap viagra ${LINK_LIST}` }).spam).toBe(false)
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

  // Everyday words of a shop's or an app's own bug reports: none is a spam phrase (src/abuse/spam-score.ts).
  const EVERYDAY_REPORTS = [
    'Buy now does nothing: the checkout freezes after I press Pay',
    'The "Click here to track your order" link in the email is broken',
    'The limited time offer banner covers the cart button on mobile',
    'The page says I earn $5 in points per order, but my balance stays at 0',
    'I work from home and the VPN blocks your login page',
    'The weight loss shakes category shows an empty page',
    'Support says to write to WhatsApp +49 151 0000000 but the number is wrong',
  ]
  test.each(EVERYDAY_REPORTS)('an everyday report is no spam phrase: %s', (text) => {
    expect(contentReasons(text).phrases).toBe(0)
  })

  test('no report of the three real corpora (test/fixtures) says a spam phrase', () => {
    const texts: string[] = []
    const walk = (x: unknown): void => {
      if (typeof x === 'string') texts.push(x)
      else if (Array.isArray(x)) x.forEach(walk)
      else if (x && typeof x === 'object') Object.values(x).forEach(walk)
    }
    for (const f of ['dedup-corpus.json', 'real-corpus.json', 'tracker-corpus.json']) walk(JSON.parse(readFileSync(join(import.meta.dir, 'fixtures', f), 'utf8')))
    expect(texts.length).toBeGreaterThan(1000)
    expect(texts.filter((t) => contentReasons(t).phrases > 0)).toEqual([])
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
  test('templates: the same text with other numbers counts as the same; other words do not', () => {
    const t = new RepeatTracker(new ManualClock(1_000_000), 100)
    expect(t.note('a', '1.1.1.1', 'Get 50% off today at https://deals.example/?ref=6864 only $19')).toBe(1)
    expect(t.note('a', '2.2.2.2', 'Get 70% off today at https://deals.example/?ref=12 only $9')).toBe(2)
    expect(t.note('a', '3.3.3.3', 'Get 70% off tomorrow at https://deals.example/?ref=12 only $9')).toBe(1)
    expect(templateOf('Error 500 on page 3 of 12')).toBe('error 0 on page 0 of 0')
  })

  test('links: distinct addresses per linked site, the App\'s own sites never counted', () => {
    const t = new RepeatTracker(new ManualClock(1_000_000), 100)
    const own = new Set(['shop.example.com'])
    for (let i = 1; i <= 9; i++) {
      const n = t.noteLinks('a', `10.0.0.${i}`, `see https://www.Spam-Site.example/p/${i} and https://shop.example.com/cart`, own)
      expect(n).toBe(Math.min(i, LINK_FLOOD_ADDRESSES + 1))
    }
    // Only the App's own site: nothing counted however many people link it.
    for (let i = 1; i <= 20; i++) expect(t.noteLinks('a', `10.1.0.${i}`, 'broken: https://shop.example.com/checkout', own)).toBe(0)
    expect(linkedSites('a http://A.example/x www.b.example/y https://c.example. and mailto:x@d.example')).toEqual(['a.example', 'b.example', 'c.example'])
  })

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

const SPAM_PITCH = 'Boost your website traffic today! Our SEO services put your site on the first page of Google. Visit https://rank-boost.example/offer?ref=6864 for a free audit.'
const APP = 'app_1'

describe('SpamRing (like_spam)', () => {
  const ringWith = (...texts: string[]) => {
    const clock = new ManualClock(1_000_000)
    const ring = new SpamRing(clock, 200, 10)
    for (const t of texts) ring.add(APP, t)
    return { clock, ring }
  }

  test.each([
    ['the same pitch, reworded, other link', 'Want more visitors to your website? Our SEO service will get your site onto Google first page. Free audit at https://seo-kings.example/free today!', true],
    ['the same pitch, reordered', 'Free audit: our SEO services put your website on the first page of Google and boost your traffic. Visit https://top-rank.example now', true],
    ['the pitch verbatim with other numbers', SPAM_PITCH.replace('6864', '12'), true],
    ['a genuine report sharing "checkout" and "page"', 'The checkout page shows a blank screen after I click Pay, on Firefox 121. Console says TypeError: cart is undefined', false],
    ['a genuine report about the website', 'Your website search does not find products by their SKU, only by name', false],
    ['a genuine report about Google sign-in on the first page', 'Login with Google fails with an error on the first page after sign in', false],
  ])('%s', (_name, text, fires) => {
    const { ring } = ringWith(SPAM_PITCH, 'Hello admin, I noticed your checkout page could convert much better. Our agency builds high converting pages, see https://conv-pros.example/case for examples.')
    const like = ring.likeness(APP, text)!
    expect(like.best >= LIKE_SPAM_SIMILARITY).toBe(fires)
    expect(spamScore({ ...base, text, likeSpam: like.best }).reasons.includes('like_spam')).toBe(fires)
  })

  test('like_spam alone stays under the threshold whatever the App learned (the intake skips it then)', () => {
    expect(SPAM_WEIGHTS.like_spam * FACTOR_MAX).toBeLessThan(SPAM_THRESHOLD)
    expect(spamScore({ ...base, likeSpam: 1 }, { like_spam: FACTOR_MAX }).spam).toBe(false)
  })

  test('trigramCosines gives trigramVectorCosine\'s figures, one query against many', () => {
    const texts = [SPAM_PITCH, 'The checkout page is blank', '', 'Ünïcödé façade — naïve café', LONG_BUG_REPORT, SPAM_PITCH.toUpperCase()]
    const vectors = texts.map((t) => trigramVector(t))
    for (const q of vectors) expect([...trigramCosines(q, vectors)]).toEqual(vectors.map((v) => trigramVectorCosine(q, v)))
  })

  test('an App holding no spam computes nothing; another App\'s spam does not count', () => {
    const { ring } = ringWith(SPAM_PITCH)
    expect(ring.likeness('app_2', SPAM_PITCH)).toBeNull()
    expect(ring.likeness(APP, SPAM_PITCH)!.best).toBeCloseTo(1, 6)
  })

  test('bounded: the last texts per App, near copies refresh one slot, Apps fed longest ago dropped', () => {
    const clock = new ManualClock(1_000_000)
    const ring = new SpamRing(clock, 5, 3)
    for (let i = 0; i < 8; i++) ring.add(APP, `distinct pitch number ${'abcdefghij'[i]} ${'xyz'.repeat(i)} for ${['casino', 'pills', 'loans', 'watches', 'followers', 'essays', 'forex', 'crypto'][i]}`)
    expect(ring.count(APP)).toBe(5)
    // The first texts were pushed out: the oldest is no longer held as itself.
    expect(ring.likeness(APP, 'distinct pitch number a  for casino')!.best).toBeLessThan(0.99)
    const before = ring.count(APP)
    for (let i = 0; i < 10; i++) ring.add(APP, SPAM_PITCH.replace('6864', String(i)))
    expect(ring.count(APP)).toBe(before) // a full ring: still 5, the copies took one slot
    expect(ring.likeness(APP, 'distinct pitch number h xyzxyzxyzxyzxyzxyzxyz for crypto')!.best).toBeCloseTo(1, 6)
    ring.add('b', SPAM_PITCH)
    ring.add('c', SPAM_PITCH)
    ring.add('d', SPAM_PITCH) // a fourth App: the one fed longest ago (APP) goes
    expect(ring.count(APP)).toBe(0)
    expect(ring.count('d')).toBe(1)
  })

  test('replace (a cluster node loading the App\'s marks from the database): what it held goes, marks older than the window are skipped, near copies share a slot, the size holds', () => {
    const { clock, ring } = ringWith('Earn money from home with our crypto trading bot, 300% returns guaranteed. Join now at https://coin-rocket.example/join')
    const now = clock.now()
    ring.replace(APP, [
      { at: now - SPAM_RING_WINDOW_MS - 1, text: 'Cheap watches and handbags, replica quality, free shipping worldwide at https://bags.example' },
      { at: now - 2_000, text: SPAM_PITCH },
      { at: now - 1_000, text: SPAM_PITCH.replace('6864', '7') },
    ])
    // The crypto text held before is gone ("not spam" on another node); the stale one never came in.
    expect(ring.likeness(APP, 'Earn money from home with our crypto trading bot, 300% returns guaranteed')!.best).toBeLessThan(LIKE_SPAM_SIMILARITY)
    expect(ring.likeness(APP, 'Cheap watches and handbags, replica quality, free shipping worldwide')!.best).toBeLessThan(LIKE_SPAM_SIMILARITY)
    // The two copies of the pitch took one slot (the newer one).
    expect(ring.count(APP)).toBe(1)
    expect(ring.likeness(APP, SPAM_PITCH.replace('6864', '7'))!.best).toBeCloseTo(1, 6)
    // An hour after its mark (not after the load) it counts no more.
    clock.advance(SPAM_RING_WINDOW_MS - 500)
    expect(ring.count(APP)).toBe(0)
    // No marks: the App holds nothing. Within the size: the newest are kept.
    ring.replace(APP, [])
    expect(ring.likeness(APP, SPAM_PITCH)).toBeNull()
    const small = new SpamRing(clock, 2, 10)
    const texts = ['casino', 'pills', 'loans'].map((w, i) => ({ at: clock.now() - 3_000 + i, text: `distinct pitch about ${w} ${'q'.repeat(i * 5)} number ${i}` }))
    small.replace(APP, texts)
    expect(small.count(APP)).toBe(2)
    expect(small.likeness(APP, texts[0].text)!.best).toBeLessThan(0.99)
    expect(small.likeness(APP, texts[2].text)!.best).toBeCloseTo(1, 6)
  })

  test('replace with the App\'s "not spam" texts: a mark one resembles goes unless marked after it, as remove at the decision did', () => {
    const { clock, ring } = ringWith()
    const now = clock.now()
    const reworded = 'Want more visitors to your website? Our SEO services will get your site onto Google first page. Free audit at https://seo-kings.example/free today!'
    const other = 'Earn money from home with our crypto trading bot, 300% returns guaranteed. Join now at https://coin-rocket.example/join'
    // The pitch marked at -3 s, the rewording declared "not spam" at -2 s: the pitch goes, the unrelated mark stays.
    ring.replace(APP, [{ at: now - 3_000, text: SPAM_PITCH }, { at: now - 2_500, text: other }], [{ at: now - 2_000, text: reworded }])
    expect(ring.count(APP)).toBe(1)
    expect(ring.likeness(APP, reworded)!.best).toBeLessThan(LIKE_SPAM_SIMILARITY)
    expect(ring.likeness(APP, other)!.best).toBeCloseTo(1, 6)
    // The pitch marked again after the "not spam": a newer decision by hand, held.
    ring.replace(APP, [{ at: now - 1_000, text: SPAM_PITCH }], [{ at: now - 2_000, text: reworded }])
    expect(ring.likeness(APP, reworded)!.best).toBeGreaterThanOrEqual(LIKE_SPAM_SIMILARITY)
  })

  test('the "not spam" list kept with the lesson: added, refreshed, older than the window dropped, bounded, junk read as none', () => {
    const now = 10 * SPAM_RING_WINDOW_MS
    let json = clearedAfter(undefined, now - SPAM_RING_WINDOW_MS, 'old')
    json = clearedAfter(json, now - 1_000, 'a')
    json = clearedAfter(json, now, 'b')
    expect(parseCleared(json)).toEqual([{ id: 'a', at: now - 1_000 }, { id: 'b', at: now }])
    // A "spam" decision (no id) keeps the list; the same id again moves to the end with its new time.
    expect(parseCleared(clearedAfter(json, now + 5, 'a'))).toEqual([{ id: 'b', at: now }, { id: 'a', at: now + 5 }])
    expect(parseCleared(clearedAfter(json, now + 5))).toEqual(parseCleared(json))
    for (let i = 0; i < 300; i++) json = clearedAfter(json, now + i, `r${i}`)
    expect(parseCleared(json)).toHaveLength(200)
    expect(parseCleared(json).at(-1)).toEqual({ id: 'r299', at: now + 299 })
    for (const junk of ['', 'null', '{"id":"x"}', '[1,{"id":2,"at":3},{"id":"ok","at":"3"}]', '[{"id":"ok","at":3}']) expect(parseCleared(junk)).toEqual([])
  })

  test('expiry: an hour after it was held, a text counts no more', () => {
    const { clock, ring } = ringWith(SPAM_PITCH)
    clock.advance(SPAM_RING_WINDOW_MS / 2)
    ring.add(APP, 'Earn money from home with our crypto trading bot, 300% returns guaranteed. Join now at https://coin-rocket.example/join')
    clock.advance(SPAM_RING_WINDOW_MS / 2)
    expect(ring.count(APP)).toBe(1)
    expect(ring.likeness(APP, SPAM_PITCH)!.best).toBeLessThan(LIKE_SPAM_SIMILARITY)
    clock.advance(SPAM_RING_WINDOW_MS / 2)
    expect(ring.count(APP)).toBe(0)
    expect(ring.likeness(APP, SPAM_PITCH)).toBeNull()
  })

  test('"not spam" takes the text (and its near copies) out, and only those', () => {
    const genuine = 'The pay button on the checkout page stays grey after I enter my card, on Firefox 128.'
    // Held twice (a genuine report caught by an autofilled honeypot, and the same bug from another person).
    const { ring } = ringWith(SPAM_PITCH, genuine, 'Since the update the pay button on the checkout page stays grey once I enter my card details (Chrome 126).')
    expect(ring.count(APP)).toBe(3)
    expect(ring.likeness(APP, genuine)!.best).toBeCloseTo(1, 6)
    expect(ring.remove(APP, genuine)).toBe(2)
    expect(ring.likeness(APP, genuine)!.best).toBeLessThan(LIKE_SPAM_SIMILARITY)
    expect(ring.likeness(APP, SPAM_PITCH)!.best).toBeCloseTo(1, 6)
    expect(ring.remove(APP, SPAM_PITCH)).toBe(1)
    expect(ring.likeness(APP, SPAM_PITCH)).toBeNull()
    expect(ring.remove('nobody', SPAM_PITCH)).toBe(0)
  })
})

describe('the reasons as documented', () => {
  const doc = (name: string) => readFileSync(join(import.meta.dir, '..', 'docs', name), 'utf8')
  const names = (text: string) => [...text.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]).sort()

  test("docs/api.md's list of spam.reasons is every reason the score gives, plus marked_by_hand, and no other", () => {
    const api = doc('api.md')
    const at = api.indexOf('name the signals that fired')
    expect(at).toBeGreaterThan(0)
    const list = api.slice(api.indexOf(':\n', at) + 2, api.indexOf('\n\n', at))
    expect(names(list)).toEqual([...SPAM_REASONS, 'marked_by_hand'].sort())
  })

  test("docs/widget.md's table of the score has one row per reason", () => {
    const widget = doc('widget.md')
    const section = widget.slice(widget.indexOf('## Abuse defence: the server side'))
    const rows = [...section.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]).sort()
    expect(rows).toEqual([...SPAM_REASONS].sort())
  })
})
