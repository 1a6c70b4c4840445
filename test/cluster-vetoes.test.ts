/**
 * The vetoes and merge blocks (src/dedup/vetoes.ts) as scenario tables, on title pairs shaped like
 * public trackers' templated issues: one version, branch, verb or locale substituted; a scope on one
 * side; versions through the sanitizer; identifiers that contain digits. Written for these tests (the
 * held-out corpus the issue measures on stays unseen).
 */
import { describe, expect, test } from 'bun:test'
import { identifyingNumbers } from '../src/dedup/tokenize'
import { alikeApartFromNumbers, differentNumbers, differentTests, nameAddedOnOneSide, nameVariant, oneSlotSwapped, testIds, numbersVeto, redactedInTitles, scopeDifference, sharedNames, splitScope, templatedSiblings } from '../src/dedup/vetoes'
import { arrivalBar, arrivalCorroborates, confirmOnLead, corroboration, decide, decideOnScore, DEFAULT_THRESHOLDS, nearTitle, titleMatch } from '../src/dedup/decide'
import { featuresOf } from '../src/dedup/features'
import { ARRIVAL_CORROBORATES } from '../src/dedup/arrival-locality'
import { sanitizeText } from '../src/sanitize/sanitize'

const features = (id: string, text: string) => featuresOf({ id, text, url: null, componentTarget: null, consoleLogs: null, duplicateOfId: null })
/** The verdict on two reports as stored: sanitized first, as the pipeline does. */
const verdict = (a: string, b: string, score: number) => decide(features('a', sanitizeText(a, {})), features('b', sanitizeText(b, {})), score)

describe('templated siblings: one or few substituted tokens', () => {
  const SIBLINGS: [string, string][] = [
    ['S3A: get of an object larger than 5 GB fails', 'S3A: put of an object larger than 5 GB fails'],
    ['[en-US] Date picker shows week numbers', '[De] Date picker shows week numbers'],
    ['Backport HDFS-1234 to branch-3.2', 'Backport HDFS-1234 to branch-3.3'],
    ['Build fails on Centos 7', 'Build fails on Centos 8'],
    ['Add missing translations for the fr locale', 'Add missing translations for the it locale'],
    ['Tooltip flickers in Firefox', 'Tooltip flickers in Chrome'],
    ['cache build fails on main', 'cli build fails on main'],
  ]
  for (const [a, b] of SIBLINGS) test(`${a} / ${b}`, () => expect(templatedSiblings(a, b)).toBe(true))

  const NOT_SIBLINGS: [string, string][] = [
    ['Export crashes with grouped rows', 'Export crashed with grouped rows'], // inflection
    ['Search shows nothing', 'Search shows empty'], // synonym table
    ['Crash on save in the editor', 'Crash in save in the editor'], // glue words only
    ['Crash in the export', 'Freeze while scrolling the grid fast'], // unrelated
    ['The checkout button does nothing', 'Hi team, the checkout button does nothing'], // words added, none swapped
    ['NPE in BlockReader.read', 'NPE in BlockReader.read'], // one title twice
  ]
  for (const [a, b] of NOT_SIBLINGS) test(`not: ${a} / ${b}`, () => expect(templatedSiblings(a, b)).toBe(false))
})

describe('scopes', () => {
  test('a scope is split off the title; labels are no scope', () => {
    expect(splitScope('[en-US] Date picker shows week numbers')).toEqual({ scopes: ['en-us'], core: 'date picker shows week numbers' })
    expect(splitScope('core: Fix NPE in reader (Windows)')).toEqual({ scopes: ['core', 'windows'], core: 'fix npe in reader' })
    expect(splitScope('[Bug] Crash on save').scopes).toEqual([])
  })
  const CASES: [string, string, ReturnType<typeof scopeDifference>][] = [
    ['[en-US] Date picker shows week numbers', '[De] Date picker shows week numbers', 'sibling'],
    ['[Backport 2.x] Fix NPE in reader', 'Fix NPE in reader', 'one-sided'],
    ['Crash on save (iOS)', 'Crash on save', 'one-sided'],
    ['[Bug] Crash on save', 'Crash on save', null],
    ['Error: cannot open the settings page', 'cannot open the settings page', null],
    ['[core] Crash on save', '[core] Crash on save', null],
    ['[core] Crash on save', '[ui] Crash on load', null],
    ['[Backport 3.4] S3A: list is slow', 'S3A: list is slow', 'one-sided'],
    ['[Backport 3.4] S3A: list is slow', '[Backport 3.5] S3A: list is slow', 'sibling'],
  ]
  for (const [a, b, want] of CASES) test(`${a} / ${b} → ${want}`, () => expect(scopeDifference(a, b)).toBe(want))
})

describe('a name added on one title only', () => {
  const CASES: [string, string, boolean][] = [
    ['Tooltip flickers on hover', 'Tooltip flickers on hover in Firefox', true],
    ['Build fails', 'Build fails on Centos 7', true],
    ['Export drops the header row', 'Export drops the header row with ExcelWriter', true],
    ['The checkout button does nothing', 'Hi team, the checkout button does nothing', false], // no name added
    ['Export drops the header row', 'Export drops the header row again', false],
    ['Tooltip flickers on hover', 'Tooltip flickers on hover', false],
    ['Tooltip flickers on hover', 'Tooltip flickers in Firefox', false], // a swap, not an addition
  ]
  for (const [a, b, want] of CASES) test(`${a} / ${b} → ${want}`, () => expect(nameAddedOnOneSide(a, b)).toBe(want))
  test('blocks the merge, suggests the lead', () => {
    expect(decide(features('a', 'Tooltip flickers on hover\nbody'), features('b', 'Tooltip flickers on hover in Firefox\nbody'), 0.99)).toMatchObject({
      attach: false,
      suggest: true,
      reason: expect.stringContaining('a name on one title only'),
    })
  })
})

describe('one name written two ways: not a sibling, but no automatic merge', () => {
  const CASES: [string, string, boolean][] = [
    ['S3 listing is slow on large buckets', 'S3A listing is slow on large buckets', true],
    ['Upgrade log4j to 2.17.1', 'Upgrade log4j2 to 2.17.1', true],
    ['S3 listing is slow on large buckets', 'GCS listing is slow on large buckets', false],
  ]
  for (const [a, b, want] of CASES) {
    test(`${a} / ${b} → ${want}`, () => {
      expect(nameVariant(a, b)).toBe(want)
      expect(templatedSiblings(a, b)).toBe(!want)
    })
  }
  test('suggested, with the reason', () => {
    expect(decide(features('a', 'S3 listing is slow on large buckets\nbody'), features('b', 'S3A listing is slow on large buckets\nbody'), 0.99)).toMatchObject({
      attach: false,
      suggest: true,
      reason: expect.stringContaining('one name written two ways'),
    })
  })
})

describe('different tests named: CI files one failure per test and parameter (a merge block)', () => {
  const GV = 'Intermittent org.mozilla.geckoview.test.TextInputDelegateTest#sendDummpyKeyboardEvent'
  test('test ids: the package dropped, the method and one parameter group kept; plain words are no test', () => {
    expect([...testIds(`${GV}[#input] | org.mozilla.geckoview.test.util.UiThreadUtils$TimeoutException: timed out`)]).toEqual(['textinputdelegatetest#senddummpykeyboardevent[#input]'])
    expect([...testIds('org.apache.hadoop.hdfs.TestDFSIO fails on trunk')]).toEqual(['testdfsio'])
    expect([...testIds('tests/test_api.py::test_login[py3] fails')]).toEqual(['test_api.py::test_login[py3]'])
    expect([...testIds('Intermittent dom/tests/browser/browser_foo.js | single tracking bug')]).toEqual(['browser_foo.js'])
    expect([...testIds('Intermittent Test timed out in the suite')]).toEqual([])
    expect([...testIds('Latest build breaks the contest page')]).toEqual([])
  })
  const CASES: [string, string, boolean][] = [
    [`${GV}[#input] | TimeoutException`, `${GV}[#textarea] | TimeoutException`, true],
    [`${GV}[#input] | TimeoutException`, 'Intermittent org.mozilla.geckoview.test.TextInputDelegateTest#inputConnection_deleteSurroundingText[#input] | AssertionError', true],
    ['TestFoo#testRead fails on Windows', 'TestBar#testRead fails on Windows', true],
    [`${GV}[#input] | TimeoutException`, `${GV}[#input] | TimeoutException after 30000 ms`, false],
    ['TestDFSIO fails on trunk', 'TestDFSIO#testWrite fails on trunk', false],
    ['TestDFSIO fails on trunk', 'Upload of large files times out', false],
    ['Crash when saving a draft', 'Crash on save of a draft', false],
  ]
  for (const [a, b, want] of CASES) test(`${a.slice(0, 60)} / ${b.slice(0, 60)} → ${want}`, () => expect(differentTests(a, b)).toBe(want))
  test('a score high enough to merge only suggests the lead, and says why', () => {
    // More than one token apart, so no templated-sibling veto: only the test ids tell them apart.
    const a = `${GV}[#input] | org.mozilla.geckoview.test.util.UiThreadUtils$TimeoutException: Timed out after 30000ms\nbody`
    const b = 'Intermittent org.mozilla.geckoview.test.TextInputDelegateTest#inputConnection_deleteSurroundingText[#designmode] | java.lang.AssertionError: Can delete empty text\nbody'
    expect(decide(features('a', a), features('b', b), 0.99)).toMatchObject({
      attach: false,
      suggest: true,
      reason: expect.stringContaining('different tests named'),
    })
  })
})

describe('one template, another word in its slot (a merge block)', () => {
  const TOUR = 'Should add the single search tour in the onBoarding overlay'
  const CASES: [string, string, boolean][] = [
    // A family of tasks from one template: the slot holds plain words, so no templated-sibling veto.
    [TOUR, 'Should add the Add-on tour in the onBoarding overlay', true],
    [TOUR, 'Should add the Customize Firefox tour in the onBoarding overlay', true],
    // A reordered paraphrase is not one template.
    ['NPE after reading Parquet files produced by parquet-mr 1.8', 'Reading Parquet files produced by parquet-mr 1.8 fails with NPE', false],
    // Glue words, inflections and synonyms fill no other slot.
    ['AttributeError while a 404 from the index for a single project page', 'AttributeError after a 404 from the index for a single project page', false],
    ['The sync job crashes when the laptop wakes from sleep at night', 'The sync job crashed when the laptop wakes from sleep at night', false],
    // Too little around the slot to call it a template; three words in the slot are no longer a slot.
    ['Export fails on save', 'Import fails on save', false],
    [TOUR, 'Should add the brand new privacy tour in the onBoarding overlay', false],
  ]
  for (const [a, b, want] of CASES) test(`${a} / ${b} → ${want}`, () => expect(oneSlotSwapped(a, b)).toBe(want))
  test('a score high enough to merge only suggests the lead, and says why', () => {
    expect(decide(features('a', `${TOUR}\nbody`), features('b', 'Should add the Add-on tour in the onBoarding overlay\nbody'), 0.99)).toMatchObject({
      attach: false,
      suggest: true,
      reason: expect.stringContaining('one template, another word in it'),
    })
  })
})

describe('numbers: identifiers are names, not numbers', () => {
  const CASES: [string, string[]][] = [
    ['S3A committer fails on s3 buckets', []],
    ['log4j2 over http2 with utf8 on x86_64', []],
    ['Upgrade jackson-databind to 2.9.10.2', ['2.9.10.2']],
    ['Error 502 on #4411 (e1234)', ['502', '#4411', 'e1234']],
    ['Fails on v2 and v10.1', ['2', '10.1']],
    ['Upload over 2GB takes 500ms', ['2gb', '500ms']],
    ['Cannot reach [REDACTED:ipv4]', []],
  ]
  for (const [line, want] of CASES) test(line, () => expect(identifyingNumbers(line)).toEqual(want))
  test('"s3" and "s3a" no longer veto a true pair; different versions still do', () => {
    expect(numbersVeto(identifyingNumbers('S3A listing is slow'), identifyingNumbers('Listing s3 buckets is slow'))).toBe(false)
    expect(numbersVeto(identifyingNumbers('Upgrade X to 2.9.10.2'), identifyingNumbers('Upgrade X to 2.9.10.3'))).toBe(true)
  })
})

describe('different numbers veto titles that otherwise say the same (differentNumbers)', () => {
  const titled = (title: string) => ({ title, firstNumbers: identifyingNumbers(title) })
  test('one template, another number: vetoed', () => {
    expect(alikeApartFromNumbers('Tests hang on Centos 7', 'Tests hang on Centos 8 with Temurin 21')).toBeCloseTo(4 / 6)
    expect(differentNumbers(titled('Tests hang on Centos 7'), titled('Tests hang on Centos 8 with Temurin 21'))).toBe(true)
    expect(differentNumbers(titled('Error 502 at checkout'), titled('Error 404 at checkout'))).toBe(true)
    expect(differentNumbers(titled('Backport DFLOW-1289 to branch-3.4'), titled('Backport DFLOW-3727 to branch-3.3'))).toBe(true)
  })
  test('two titles that say different things: their numbers veto nothing (real duplicates, Eclipse and Firefox)', () => {
    expect(differentNumbers(titled('[1.8][inference] inferencing issue when building project reactor-core'), titled('[1.8][inference] regression since the fix for Bug 502350'))).toBe(false)
    expect(differentNumbers(titled('SSH connections with RSA keys fail for servers not supporting rsa-sha2'), titled('JGit refuses ssh login after update to 2021-03'))).toBe(false)
    expect(differentNumbers(titled('Mozilla Firefox Nightly 62.0a1 (2018-05-10) always starts in windowed mode'), titled("Firefox 62.0a1 doesn't stay maximized when closed and reopened"))).toBe(false)
    // The same numbers, or numbers on one side only: never a veto, alike or not.
    expect(differentNumbers(titled('Tests hang on Centos 7'), titled('Tests hang on Centos'))).toBe(false)
  })
  test('through decide: alike titles with other numbers are refused, unlike ones are scored', () => {
    expect(verdict('Error 502 at checkout\nThe checkout page answers with an error after paying.', 'Error 404 at checkout\nThe checkout page answers with an error after paying.', 0.95)).toMatchObject({ attach: false, reason: 'veto: different numbers in titles' })
    expect(verdict('Checkout answers error 502 after paying\nThe checkout page fails after paying.', 'Paying fails with code 500 on the last step\nThe checkout page fails after paying.', 0.95)).toMatchObject({ attach: true })
  })
})

describe('versions through the sanitizer', () => {
  test('two versions of a package stay different values, one version stays equal', () => {
    const a = 'Upgrade jackson-databind to 2.9.10.2\nFixes CVE-2020-1234. Same template body as every upgrade.'
    const b = 'Upgrade jackson-databind to 2.9.10.3\nFixes CVE-2020-5678. Same template body as every upgrade.'
    expect(verdict(a, b, 0.99)).toMatchObject({ attach: false, reason: expect.stringContaining('veto') })
    expect(verdict(a, a.replace('CVE-2020-1234', 'the CVE'), 0.99).attach).toBe(true)
  })
  test("an artifact's four-part version and Gecko's rv: survive the sanitizer, so releases stay apart", () => {
    const ua = 'Mozilla/5.0 (Windows; U; Windows NT 5.1; en-US; rv:1.8.1.12) Gecko/20080201 SeaMonkey/1.1.8'
    const a = `NameNode fails to restart on hadoop-0.20.203.0 after upgrade\nThe edits log cannot be read.\n${ua}`
    const b = `NameNode fails to restart on hadoop-0.20.205.0 after upgrade\nThe edits log cannot be read.\n${ua}`
    expect(sanitizeText(a, {})).toBe(a)
    expect(verdict(a, b, 0.99)).toMatchObject({ attach: false, reason: expect.stringMatching(/^veto: different (numbers|versions) in titles$/) })
    expect(verdict(a, a.replace('cannot be read', 'is unreadable'), 0.99).attach).toBe(true)
  })
  test('a quad the sanitizer redacts cannot be compared: never merged, only suggested', () => {
    const a = 'Requests to 81.24.111.5 time out\nlong body'
    const b = 'Requests to 81.24.111.6 time out\nlong body'
    expect(sanitizeText(a, {})).toContain('[REDACTED:ipv4]')
    expect(redactedInTitles(sanitizeText(a, {}), 'plain')).toBe(true)
    expect(verdict(a, b, 0.99)).toMatchObject({ attach: false, suggest: true, reason: expect.stringContaining('redacted') })
  })
  test("a person's contact details in a title are whoever wrote it, not the bug: they do not block a merge", () => {
    const a = 'Password reset mail never arrives for ada.lovelace@example.com\nI asked three times since Monday.'
    const b = 'Password reset mail never arrives for grace.hopper@example.org\nI asked three times since Monday.'
    expect(sanitizeText(a, {})).toContain('[REDACTED:email]')
    expect(redactedInTitles(sanitizeText(a, {}), sanitizeText(b, {}))).toBe(false)
    expect(verdict(a, b, 0.99).attach).toBe(true)
    // Beside a value that could tell two bugs apart, the block stays.
    expect(redactedInTitles(sanitizeText('Reset mail for ada@example.com bounces at 81.24.111.5', {}), 'plain')).toBe(true)
  })
})

describe('verdicts: vetoes are neither merged nor suggested; merge blocks are suggested', () => {
  const CASES: { a: string; b: string; attach: boolean; suggest: boolean | undefined; reason: string }[] = [
    { a: 'S3A: get fails on large objects', b: 'S3A: put fails on large objects', attach: false, suggest: undefined, reason: 'veto: templated sibling' },
    { a: '[en-US] Date picker shows week numbers', b: '[De] Date picker shows week numbers', attach: false, suggest: undefined, reason: 'veto' },
    { a: '[Backport 2.x] Fix NPE in BlockReader', b: 'Fix NPE in BlockReader', attach: false, suggest: true, reason: 'scope on one title only' },
    { a: 'NPE in BlockReader.read on HDFS-1234', b: 'NPE in BlockReader.read on HDFS-1234', attach: true, suggest: undefined, reason: 'same title' },
    { a: 'NPE in BlockReader.read when closing', b: 'BlockReader.read throws NPE after close', attach: true, suggest: undefined, reason: 'titles share' },
  ]
  for (const c of CASES) {
    test(`${c.a} / ${c.b}`, () => {
      const v = decide(features('a', c.a + '\nbody text here'), features('b', c.b + '\nbody text here'), 0.99)
      expect(v.attach).toBe(c.attach)
      expect('suggest' in v ? v.suggest : undefined).toBe(c.suggest)
      expect(v.reason).toContain(c.reason)
    })
  }
  test('below the merge bar, at or above the suggestion floor: suggested, with the score and the bar', () => {
    const a = features('a', 'NPE in BlockReader.read when closing\nbody')
    const b = features('b', 'BlockReader.read throws NPE after close\nbody')
    const v = decide(a, b, DEFAULT_THRESHOLDS.suggest + 0.01)
    expect(v).toMatchObject({ attach: false, suggest: true })
    expect(v.reason).toContain(DEFAULT_THRESHOLDS.strong.toFixed(2))
    expect(decide(a, b, DEFAULT_THRESHOLDS.suggest - 0.01)).toMatchObject({ attach: false, reason: expect.stringContaining('too low') })
  })
  test('shared names for the reason', () => {
    expect(sharedNames('NPE in BlockReader.read on HDFS-1234', 'HDFS-1234: BlockReader.read NPE')).toEqual(['NPE', 'BlockReader.read', 'HDFS-1234'])
  })
})

describe('through a duplicate, held against its lead', () => {
  const q = features('q', 'S3A: get requests are not retried on SlowDown\nbody')
  const member = features('m', 'S3A get requests are not retried on SlowDown errors\nbody')
  test('a veto on the lead refuses the merge and the suggestion a member would give', () => {
    const lead = features('l', 'S3A: put requests are not retried on SlowDown\nbody')
    expect(confirmOnLead(q, lead, decideOnScore(q, member, 0.99), 0.99)).toMatchObject({ attach: false, reason: expect.stringContaining('veto') })
    expect(confirmOnLead(q, lead, decideOnScore(q, member, DEFAULT_THRESHOLDS.suggest + 0.01), 0.31).attach).toBe(false)
    expect(confirmOnLead(q, lead, decideOnScore(q, member, DEFAULT_THRESHOLDS.suggest + 0.01), 0.31)).not.toHaveProperty('suggest', true)
  })
  test('a merge block on the lead suggests instead, with the score that was reached', () => {
    const lead = features('l', '[Backport 3.4] S3A: get requests are not retried on SlowDown\nbody')
    expect(confirmOnLead(q, lead, decideOnScore(q, member, 0.93), 0.93)).toMatchObject({ attach: false, suggest: true, reason: expect.stringMatching(/^similarity 0\.93; .*scope on one title only/) })
  })
  test('a lead without veto or block keeps the member\'s verdict', () => {
    const lead = features('l', 'S3A: get requests are not retried on SlowDown\nother body')
    expect(confirmOnLead(q, lead, decideOnScore(q, member, 0.99), 0.99).attach).toBe(true)
  })
})

describe('a title match corroborates like a component does', () => {
  const CASES: [string, string, boolean][] = [
    ['The checkout button does nothing after adding two items to the cart', 'The checkout button does nothing after adding two items to the cart', true],
    ['the checkout button does nothing after adding two items to the cart', 'The checkout button does nothing after adding two items to the cart', true],
    // A class, a verb and an exception: what every bug of that component says.
    ['OffsetCommitter.decode() fails: ArrayIndexOutOfBoundsException', 'OffsetCommitter.decode() fails: ArrayIndexOutOfBoundsException', false],
    ['Build fails', 'Build fails', false],
    ['Requests to [REDACTED:ipv4] time out after five whole minutes', 'Requests to [REDACTED:ipv4] time out after five whole minutes', false],
    ['The checkout button does nothing after adding two items to the cart', 'The checkout button does nothing after adding three items to the cart', false],
  ]
  for (const [a, b, want] of CASES) test(`${a} / ${b} → ${want}`, () => expect(titleMatch(features('a', a + '\nbody'), features('b', b + '\nother'))).toBe(want))
  test('between the corroborated bar and the merge bar, a title match merges; a paraphrased title is suggested', () => {
    const a = features('a', 'The checkout button does nothing after adding two items to the cart\nThe spinner keeps turning.')
    const same = features('b', 'The checkout button does nothing after adding two items to the cart\nTried twice on Firefox.')
    const other = features('c', 'Checkout button dead after two items are in the cart\nSeen on Firefox.')
    const score = (DEFAULT_THRESHOLDS.moderate + DEFAULT_THRESHOLDS.strong) / 2
    expect(corroboration(a, same)).toEqual(['title'])
    expect(decide(a, same, score)).toMatchObject({ attach: true, reason: expect.stringContaining('with same title') })
    expect(decide(a, other, score)).toMatchObject({ attach: false, suggest: true })
  })
})

describe('near-identical titles corroborate a merge at the corroborated bar', () => {
  const f = (id: string, title: string) => featuresOf({ id, text: `${title}\nSteps: open the workspace, then the file; it happens every time since this morning.`, url: null, componentTarget: null, consoleLogs: null, duplicateOfId: null })

  test('one summary typed twice, nearly: corroborated, and the merge reason says so', () => {
    const a = f('a', 'Eclipse hangs when opening a large XML file in the editor')
    const b = f('b', 'Eclipse hangs on opening large XML files in the editor')
    expect(nearTitle(a, b)).toBe(true)
    expect(corroboration(a, b)).toEqual(['near title'])
    const v = decideOnScore(a, b, 0.6, DEFAULT_THRESHOLDS)
    expect(v.attach).toBe(true)
    expect(v.reason).toContain('with same near title')
    // Below the corroborated bar it stays a suggestion.
    expect(decideOnScore(a, b, 0.5, DEFAULT_THRESHOLDS).attach).toBe(false)
  })

  test('not for generic identical titles (an identifier and a verb), short titles or titles sharing less', () => {
    const generic = f('c', 'OffsetCommitter.decode() fails: ArrayIndexOutOfBoundsException')
    expect(nearTitle(generic, f('d', 'OffsetCommitter.decode() fails: ArrayIndexOutOfBoundsException'))).toBe(false)
    expect(nearTitle(f('e', 'Editor hangs on save'), f('g', 'Editor hangs on saving'))).toBe(false)
    expect(nearTitle(f('h', 'Eclipse hangs when opening a large XML file in the editor'), f('i', 'Eclipse crashes when closing a small JSON file in the outline'))).toBe(false)
    expect(nearTitle(f('j', 'Eclipse hangs when opening a large [REDACTED:email] file in the editor'), f('k', 'Eclipse hangs on opening large [REDACTED:email] files in the editor'))).toBe(false)
  })
})

describe('arrival corroborates a merge at the arrival bar (halfway to the merge bar)', () => {
  const a = features('a', 'Checkout button dead after two items are in the cart\nSeen on Firefox, the spinner keeps turning.')
  const b = features('b', 'Paying for a full basket does nothing\nThe button to pay ignores my clicks once two items are in it.')
  const t = DEFAULT_THRESHOLDS
  const bar = arrivalBar(t.moderate, t.strong)

  test('the bar lies halfway between the corroborated bar and the merge bar', () => {
    expect(bar).toBeCloseTo((t.moderate + t.strong) / 2, 12)
    expect(bar).toBeGreaterThan(t.moderate)
    expect(bar).toBeLessThan(t.strong)
  })

  test('at the bar, a lead that arrived close merges, and the reason names the bar and the arrival bonus', () => {
    expect(corroboration(a, b)).toEqual([])
    const v = decideOnScore(a, b, bar, t, { arrival: ARRIVAL_CORROBORATES })
    expect(v).toMatchObject({ attach: true })
    expect(v.reason).toBe(`similarity ${bar.toFixed(2)} ≥ ${bar.toFixed(2)}, arrived close to it (+${ARRIVAL_CORROBORATES.toFixed(2)}); alike texts; no veto`)
  })

  test('not under the bar, not with a smaller bonus, not where arrival says nothing', () => {
    expect(decideOnScore(a, b, bar - 0.01, t, { arrival: 0.2 })).toMatchObject({ attach: false, suggest: true })
    expect(decideOnScore(a, b, bar, t, { arrival: ARRIVAL_CORROBORATES - 0.001 })).toMatchObject({ attach: false, suggest: true })
    expect(decideOnScore(a, b, bar, t, {})).toMatchObject({ attach: false, suggest: true })
    expect(arrivalCorroborates(bar, t.moderate, t.strong, ARRIVAL_CORROBORATES)).toBe(true)
    expect(arrivalCorroborates(bar - 0.001, t.moderate, t.strong, 1)).toBe(false)
  })

  test('a merge block (a bug last reported long ago) still turns it into a suggestion', () => {
    const v = decideOnScore(a, b, bar, t, { arrival: 0.1, block: 'its bug was last reported long ago (60 % of the App’s reports back)' })
    expect(v).toMatchObject({ attach: false, suggest: true, reason: expect.stringContaining('not merged: its bug was last reported long ago') })
  })

  test('a short report still needs its higher bar', () => {
    const short = features('s', 'Checkout dead')
    const shortToo = features('u', 'Checkout dead')
    expect(decideOnScore(short, shortToo, t.strong - 0.01, t, { arrival: 0.2 }).attach).toBe(false)
  })
})
