/**
 * `AppIndex.nearest` (src/dedup/app-index.ts): a removed report is never a candidate, before or after the
 * score accumulator grows past it, and the heap of partial matches keeps the best ones when most offers
 * fall below it.
 */
import { describe, expect, test } from 'bun:test'
import { AppIndex } from '../src/dedup/app-index'
import { featuresOf } from '../src/dedup/features'

const features = (id: string, text: string) => featuresOf({ id, text, url: null, componentTarget: null, consoleLogs: null, duplicateOfId: null })

describe('AppIndex.nearest', () => {
  test('a removed report is never returned, whether it was removed before or after the accumulator grew', () => {
    const index = new AppIndex()
    const shared = 'checkout button frozen after coupon applied on mobile safari'
    // Removed while the App is small (its slot is inside the first accumulator).
    index.add(features('early', `${shared} early`), null)
    // Queried once so the accumulator exists at its first size.
    expect(index.nearest(features('q0', shared), 5).map((s) => s.id)).toEqual(['early'])
    index.remove('early')
    // Enough reports to grow the accumulator past its first 1,024 slots, then a removal beyond them.
    for (let i = 0; i < 3000; i++) index.add(features(`filler-${i}`, `unrelated report number ${i} about invoices and exports`), null)
    index.add(features('late', `${shared} late`), null)
    index.add(features('kept', `${shared} kept`), null)
    // The accumulator grows to hold every slot here; 'late' is removed after that, inside it.
    expect(index.nearest(features('q-grow', shared), 10).map((s) => s.id)).toContain('late')
    index.remove('late')
    for (let round = 0; round < 3; round++) {
      const ids = index.nearest(features(`q${round + 1}`, shared), 10).map((s) => s.id)
      expect(ids).toContain('kept')
      expect(ids).not.toContain('early')
      expect(ids).not.toContain('late')
    }
    // A report indexed again (clustered anew) moves to a new slot: only the new one counts, once.
    index.add(features('kept', `${shared} kept`), null)
    const again = index.nearest(features('q9', shared), 10).map((s) => s.id)
    expect(again.filter((id) => id === 'kept')).toHaveLength(1)
  })

  test('with thousands of partial matches, the ones holding the most retrieval words are kept', () => {
    const index = new AppIndex()
    // 2,000 reports sharing one word with the query, 3 sharing all of its rare words.
    for (let i = 0; i < 2000; i++) index.add(features(`common-${i}`, `printer queue stalls ${i}`), null)
    const query = 'printer queue stalls with zebra label firmware watermark'
    for (const id of ['best-1', 'best-2', 'best-3']) index.add(features(id, `${query} ${id}`), null)
    const ids = index.nearest(features('q', query), 3).map((s) => s.id)
    expect(ids.sort()).toEqual(['best-1', 'best-2', 'best-3'])
  })
})
