/**
 * How much of one report's title the other says anywhere (src/dedup/title-containment.ts), for /similar's
 * order: the share of the title's words, weighed by their IDF, that the other report holds in its title or
 * body (AppIndex.holds for an indexed report, heldIn for any text).
 */
import { describe, expect, test } from 'bun:test'
import { AppIndex } from '../src/dedup/app-index'
import { featuresOf } from '../src/dedup/features'
import { containment, heldIn } from '../src/dedup/title-containment'
import { titleWords } from '../src/dedup/title-cosine'

const features = (id: string, text: string) => featuresOf({ id, text, url: null, componentTarget: null, consoleLogs: null, duplicateOfId: null })

describe('containment', () => {
  test('the IDF-weighted share of the title words held: rare words count more; none held or no words is 0', () => {
    const idf = (w: string) => (w === 'rare' ? 3 : 1)
    expect(containment(['rare', 'common'], [true, false], idf)).toBeCloseTo(0.75, 10)
    expect(containment(['rare', 'common'], [false, true], idf)).toBeCloseTo(0.25, 10)
    expect(containment(['rare', 'common'], [true, true], idf)).toBe(1)
    expect(containment(['rare'], [false], idf)).toBe(0)
    expect(containment([], [], idf)).toBe(0)
  })
})

describe('which title words another report holds', () => {
  test('an indexed report: its title and body words count, stemmed as the index stores them; a report not indexed is undefined', () => {
    const index = new AppIndex()
    index.add(features('a', 'Cannot pay\nWhen I apply a coupon, the checkout buttons freeze.'), null)
    // "frozen" and "freeze" are one word to the index (tokenize.ts SYNONYMS), as are "coupons" and "coupon".
    const title = titleWords('Checkout button frozen after applying coupons on Safari')
    const held = index.holds('a', title)!
    expect(title.filter((w, i) => !held[i])).toEqual(['safari'])
    expect(index.holds('missing', title)).toBeUndefined()
  })

  test('heldIn reads a text the same way the index does', () => {
    const index = new AppIndex()
    const text = 'Search box\nTyping in the search field moves the cursor to the end on Android keyboards.'
    index.add(features('s', text), null)
    const title = titleWords('Cursor jumps to end while typing in search on Android')
    expect(heldIn(text, title)).toEqual(index.holds('s', title)!)
    expect(heldIn(text, title).filter(Boolean).length).toBeGreaterThanOrEqual(4)
  })
})
