/**
 * A specific identifier both titles name corroborates an automatic merge (src/dedup/shared-identifier.ts):
 * a setting's key, a file, a path; not a class, a method or an exception; not a name many of the App's
 * reports hold; not when the titles name different exceptions or another place besides.
 */
import { describe, expect, test } from 'bun:test'
import { RARE_NAME_REPORTS, sharedIdentifier, specificName, wholeNameWord } from '../src/dedup/shared-identifier'
import { corroboration, decideOnScore, DEFAULT_THRESHOLDS } from '../src/dedup/decide'
import { featuresOf } from '../src/dedup/features'
import { withClusterApp } from './cluster-app'

const features = (id: string, text: string) => featuresOf({ id, text, url: null, componentTarget: null, consoleLogs: null, duplicateOfId: null })
const rare = (): number => 1
const everywhere = (): number => RARE_NAME_REPORTS + 1

describe('specificName', () => {
  test.each([
    ['browser.fixup.dns_first_for_single_words', true],
    ['extensions.pocket.enabled', true],
    ['browser/components/urlbar/tests/legacy/browser_urlbarDecode.js', true],
    // A web address is the page: many bugs share one.
    ['ci-staging.eclipse.org/releng', false],
    ['https://shop.example/cart/checkout', false],
    ['www.example.com/settings', false],
    ['module-info.java', true],
    ['AboutPrivateBrowsingHandler.jsm', true],
    // A class, a method, a type: a place many bugs happen in.
    ['OffsetCommitter.decode', false],
    ['FilterPanel.toggleRow', false],
    ['org.eclipse.jgit.lfs.BuiltinLFS', false],
    ['ClosedFileSystemException', false],
    ['addEngineWithDetails', false],
    // Too short to point anywhere; a version.
    ['app.theme', false],
    ['2019.12.4.1003', false],
  ])('%s → %p', (name, expected) => {
    expect(specificName(name)).toBe(expected)
  })

  test('the word the index keeps for a whole name is its longest token', () => {
    expect(wholeNameWord('browser.fixup.dns_first_for_single_words')).toBe('browser.fixup.dns_first_for_single_words')
    expect(wholeNameWord('browser/components/urlbar/browser_urlbarDecode.js')).toBe('browser_urlbardecode.js')
  })
})

describe('sharedIdentifier', () => {
  test('a setting both titles name, held by few of the App’s reports', () => {
    expect(sharedIdentifier('browser.fixup.dns_first_for_single_words breaks single word search', 'browser.fixup.dns_first_for_single_words preference no longer works properly', rare)).toBe(
      'browser.fixup.dns_first_for_single_words',
    )
  })

  test('not when many of the App’s reports hold it: it points at no one bug', () => {
    expect(sharedIdentifier('browser.fixup.dns_first_for_single_words breaks single word search', 'browser.fixup.dns_first_for_single_words preference no longer works properly', everywhere)).toBeNull()
  })

  test('not when the titles name different exceptions (one test failing two ways)', () => {
    const a = 'Intermittent org.example.tests/TextInputTest.java | TimeoutException waiting for the keyboard'
    const b = 'Intermittent org.example.tests/TextInputTest.java | java.lang.AssertionError: empty text'
    expect(sharedIdentifier(a, b, rare)).toBeNull()
    expect(sharedIdentifier(a, a.replace('waiting for the keyboard', 'after a rotation'), rare)).toBe('org.example.tests/TextInputTest.java')
  })

  test('not when one title names another place besides (a campaign over many places)', () => {
    expect(sharedIdentifier('Remove com.ibm.icu.text from org.eclipse.jdt.core.manipulation', 'Replace com.ibm.icu with com.ibm.icu.text in Eclipse 4 RCP template', rare)).toBeNull()
    // A longer or shorter form of one name is the same place.
    expect(
      sharedIdentifier(
        'JavaScript error: resource:///modules/aboutpages/AboutPrivateBrowsingHandler.jsm, line 26: this.pageListener is undefined',
        'Error this.pageListener is undefined in AboutPrivateBrowsingHandler.jsm',
        rare,
      ),
    ).toBe('this.pageListener')
  })
})

describe('as a corroboration', () => {
  const a = features('a', 'extensions.pocket.enabled=false does not disable the context menus\nThe Save to Pocket entries stay in the menu.')
  const b = features('b', 'Setting extensions.pocket.enabled to false leaves Save Page to Pocket in the menu\nTurning Pocket off in about:config keeps its entries.')

  test('only where the App’s counts are given; the reason names it', () => {
    expect(corroboration(a, b)).toEqual([])
    expect(corroboration(a, b, rare)).toEqual(['identifier'])
    const v = decideOnScore(a, b, 0.6, DEFAULT_THRESHOLDS, { reportsHolding: rare })
    expect(v).toEqual({ attach: true, reason: 'similarity 0.60 ≥ 0.55 with same identifier; titles share extensions.pocket.enabled; no veto' })
    // Below the corroborated bar it is a suggestion, as any corroboration.
    expect(decideOnScore(a, b, 0.5, DEFAULT_THRESHOLDS, { reportsHolding: rare }).attach).toBe(false)
    // A merge block still holds (here the caller's: a bug last reported long ago).
    expect(decideOnScore(a, b, 0.6, DEFAULT_THRESHOLDS, { block: 'its bug was last reported long ago', reportsHolding: rare })).toMatchObject({ attach: false, suggest: true })
  })

  test('a method both titles name does not corroborate', () => {
    const x = features('x', 'OffsetCommitter.decode() fails: ArrayIndexOutOfBoundsException\nThe consumer stops after a rebalance.')
    const y = features('y', 'OffsetCommitter.decode() fails: ArrayIndexOutOfBoundsException\nA topic with an empty partition makes the job exit.')
    expect(corroboration(x, y, rare)).toEqual([])
  })
})

describe('through the cluster service (a real SQLite file)', () => {
  function verdictOf(pair: [string, string]): Promise<{ merged: boolean; reason: string }> {
    return withClusterApp(({ add }) => {
      const topics = ['invoice', 'upload', 'calendar', 'search', 'avatar', 'export', 'login', 'payment', 'sidebar', 'printing', 'webhook', 'billing']
      for (let i = 0; i < 24; i++) add(`The ${topics[i % 12]} page ${i} shows the wrong ${topics[(i * 5) % 12]} total\nOpening the ${topics[i % 12]} view number ${i} lists ${topics[(i * 7) % 12]} entries twice after a reload.`)
      const first = add(pair[0])
      const v = add(pair[1]).verdict
      return { merged: v.leadId === first.id, reason: v.leadId ? v.reason : (v.suggestion?.reason ?? v.reason) }
    })
  }
  const SETTING: [string, string] = [
    'Setting editor.autosave_interval_seconds to 0 is ignored\nWith editor.autosave_interval_seconds set to 0 in the settings file the editor still saves the draft every few seconds, which floods the history.',
    'editor.autosave_interval_seconds has no effect any more\nSince the last update the draft keeps saving every few seconds whatever editor.autosave_interval_seconds says; turning it off does nothing.',
  ]

  test('two paraphrases naming one setting merge, and the reason says so', async () => {
    const v = await verdictOf(SETTING)
    expect(v.merged).toBe(true)
    expect(v.reason).toMatch(/with same identifier; titles share editor\.autosave_interval_seconds; no veto$/)
  })

  test('the same pair naming a method is suggested, not merged', async () => {
    const method = SETTING.map((t) => t.replaceAll('editor.autosave_interval_seconds', 'AutosaveTimer.schedule')) as [string, string]
    const byMethod = await verdictOf(method)
    expect(byMethod.merged).toBe(false)
    expect(byMethod.reason).toMatch(/< merge bar .*; titles share AutosaveTimer\.schedule$/)
  })

  test('the index counts the reports holding a name, as they come and go (what “rare” is read from)', async () => {
    const { AppIndex } = await import('../src/dedup/app-index')
    const index = new AppIndex()
    const word = wholeNameWord('editor.autosave_interval_seconds')!
    expect(index.reportsHolding(word)).toBe(0)
    for (let i = 0; i < RARE_NAME_REPORTS + 1; i++) index.add(features(`r${i}`, `Report ${i} about editor.autosave_interval_seconds\nDetails ${i}.`), null)
    index.add(features('other', 'Unrelated export bug\nThe CSV has no header.'), null)
    expect(index.reportsHolding(word)).toBe(RARE_NAME_REPORTS + 1)
    index.remove('r0')
    expect(index.reportsHolding(word)).toBe(RARE_NAME_REPORTS)
  })
})
