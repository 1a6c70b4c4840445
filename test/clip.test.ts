/**
 * Cuts of text never split an emoji. A title cut in the middle of a surrogate pair went to a git host or a
 * tracker as JSON's "\ud83d" (half a character: strict parsers refuse it, the rest show U+FFFD). Each cut
 * below is given a text whose emoji straddles its bound; what comes out is well-formed and keeps the
 * emoji whole or drops it whole.
 */
import { describe, expect, test } from 'bun:test'
import { clip, clipEnd } from '../src/core/clip'
import { safeTheme } from '../src/core/safe-title'
import { prTitle } from '../src/agent/pr-text'
import { oneLine } from '../src/agent/task'
import { consolidate, CONSOLIDATED_MAX, themeOf, THEME_MAX } from '../src/dedup/consolidate'
import { BODY_TEXT_MAX, draftOf, titleOf, TITLE_MAX } from '../src/modules/trackers/draft'
import type { LeadForTracker } from '../src/modules/trackers/repo'
import { resolvedMessage, safeExcerpt, EXCERPT_MAX } from '../src/modules/mail/message'
import { detail } from '../src/trackers/saas-http'

const EMOJI = '\u{1F600}' // two UTF-16 code units
/** `n - 1` letters, then an emoji: a cut at `n` code units falls between its halves. */
const straddling = (n: number, letter = 'a') => letter.repeat(n - 1) + EMOJI + 'tail'

describe('clip and clipEnd', () => {
  test('cut where they are asked to, one unit short where that would split a pair', () => {
    expect(clip('abc', 5)).toBe('abc')
    expect(clip('abcdef', 3)).toBe('abc')
    expect(clip(`ab${EMOJI}c`, 3)).toBe('ab') // the pair's high half would end the cut
    expect(clip(`ab${EMOJI}c`, 4)).toBe(`ab${EMOJI}`)
    expect(clip(EMOJI, 1)).toBe('')
    expect(clip('abc', 0)).toBe('')
    expect(clipEnd('abcdef', 3)).toBe('def')
    expect(clipEnd(`a${EMOJI}bc`, 3)).toBe('bc') // the pair's low half would start the cut
    expect(clipEnd(`a${EMOJI}bc`, 4)).toBe(`${EMOJI}bc`)
    expect(clipEnd('abc', 9)).toBe('abc')
  })

  test('a lone surrogate already there is left as it is (only a cut is theirs to mend)', () => {
    expect(clip('ab\ud800cd', 3)).toBe('ab')
    expect(clip('ab\udc00cd', 3)).toBe('ab\udc00')
  })
})

describe('every bound on text that leaves fixloop keeps emoji whole', () => {
  const lead = (over: Partial<LeadForTracker>): LeadForTracker => ({
    id: 'f1', org_id: 'o1', app_id: 'a1', status: 'awaiting_manual', severity: null, theme: null, text: 'x', consolidated_text: null, attachments: null, duplicate_of_id: null, duplicate_count: 0, redactions: '{}', ...over,
  })
  const none = (s: string) => s
  const cases: [string, () => string | null][] = [
    ['a pull request title (safeTheme, 72)', () => safeTheme(straddling(71), '')],
    ['a pull request title through prTitle', () => prTitle(null, straddling(71), none)],
    ['a tracker issue title', () => titleOf(lead({ theme: straddling(TITLE_MAX - 1) }))],
    ['a tracker issue body', () => draftOf(lead({ consolidated_text: straddling(BODY_TEXT_MAX) }), undefined).body],
    ['a lead\'s theme', () => themeOf(straddling(THEME_MAX - 1, 'b'))],
    ['a lead\'s consolidated text, alone', () => consolidate(straddling(CONSOLIDATED_MAX), [])],
    ['a lead\'s consolidated text, with duplicates', () => consolidate(straddling(CONSOLIDATED_MAX), ['another sentence entirely'])],
    ['an agent task line', () => oneLine(straddling(50), 50)],
    ['a mail excerpt', () => safeExcerpt(straddling(EXCERPT_MAX, 'c'))],
    ['a mail subject', () => resolvedMessage({ appName: straddling(120), feedbackId: 'f1', createdAt: 0, quotable: null, prUrl: null, unsubscribeUrl: 'https://u.example/x', unsubscribeMailto: null }).subject],
    ['a tracker failure detail', () => detail(straddling(199), [])],
  ]
  for (const [name, cut] of cases) {
    test(name, () => {
      const out = cut()!
      expect(out.isWellFormed()).toBe(true)
      expect(out.replaceAll(EMOJI, '')).not.toMatch(/[\ud800-\udfff]/)
    })
  }

  test('the cases cut where an emoji straddles the bound (without clip each would hold half of one)', () => {
    // The bounds the cases assume: a change of a constant must move its case along, or it tests nothing.
    expect(safeTheme(straddling(71), '').endsWith('…')).toBe(true)
    expect(titleOf(lead({ theme: straddling(TITLE_MAX - 1) })).length).toBeLessThanOrEqual(TITLE_MAX)
    expect(consolidate(straddling(CONSOLIDATED_MAX), []).length).toBe(CONSOLIDATED_MAX - 1)
    expect(detail(straddling(199), []).endsWith('…')).toBe(true)
  })
})
