/**
 * /similar's title agreement (src/dedup/title-cosine.ts): two titles in the same words count on their
 * own, each word weighed by how rare it is in the App. Its effect on /similar's order, on both dialects:
 * test/repos/similar-order.test.ts.
 */
import { describe, expect, test } from 'bun:test'
import { titleCosine, titleWords } from '../src/dedup/title-cosine'

const flat = (): number => 1

describe('titleCosine', () => {
  test('the same words in another order and inflection: 1; no word in common: 0; a title without words: 0', () => {
    expect(titleCosine(titleWords('Export button hangs on large invoices'), titleWords('Large invoice: the export button hangs'), flat)).toBeCloseTo(1, 12)
    expect(titleCosine(titleWords('Export button hangs'), titleWords('Login page is blank'), flat)).toBe(0)
    expect(titleCosine(titleWords('!!!'), titleWords('Export button hangs'), flat)).toBe(0)
  })

  test('a rare word in common counts for more than a common one', () => {
    const idf = (w: string): number => (w === 'crash' ? 0.2 : 3)
    const q = titleWords('Crash when exporting ledger')
    const sharesRare = titleCosine(q, titleWords('Ledger cannot be opened'), idf)
    const sharesCommon = titleCosine(q, titleWords('Crash on start'), idf)
    expect(sharesRare).toBeGreaterThan(sharesCommon)
    expect(sharesCommon).toBeGreaterThan(0)
  })

  test('symmetric, and between 0 and 1', () => {
    const idf = (w: string): number => 1 + w.length / 10
    const a = titleWords('Sync of bookmarks fails after the update')
    const b = titleWords('Bookmarks are not synced any more since updating')
    expect(titleCosine(a, b, idf)).toBeCloseTo(titleCosine(b, a, idf), 12)
    expect(titleCosine(a, b, idf)).toBeGreaterThan(0)
    expect(titleCosine(a, b, idf)).toBeLessThan(1)
  })
})
