/**
 * A merge signal many bugs share corroborates no merge (src/dedup/signal-spread.ts): an ad blocker's
 * console error on 40 % of an App's reports must not merge different bugs that read a little alike.
 */
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { GENERIC_CONSOLE_ERROR as BLOCKED, insertApp, insertReport, measureQuality, openBenchDb, REAL_CORPUS_PATH, TRACKER_CORPUS_PATH, withConstantFirstLine, withGenericError } from '../bench/cluster'
import { rmSync } from 'node:fs'
import { openSqliteStore } from '../src/db/sqlite/store'
import { sqliteStorage } from '../src/db/sqlite/storage'
import { systemClock } from '../src/core/clock'
import { createClusterService } from '../src/dedup/service'
import { summaryLine } from '../src/dedup/tokenize'
import { titleKey } from '../src/dedup/title-key'
import { AppIndex } from '../src/dedup/app-index'
import { featuresOf } from '../src/dedup/features'
import { corroboration, mergeBlock } from '../src/dedup/decide'
import { GENERIC_MIN_LEADS, genericNote, isGeneric, SignalSpread, signalKeys } from '../src/dedup/signal-spread'
import type { Corpus } from './fixtures/corpus'

/** A report whose console logged `errors` (oldest first), with a log line between them. */
const report = (id: string, text: string, ...errors: string[]) =>
  featuresOf({
    id,
    text,
    url: null,
    componentTarget: null,
    consoleLogs: errors.length ? JSON.stringify(errors.flatMap((message, ts) => [{ level: 'error', message, ts }, { level: 'log', message: 'rendered', ts }])) : null,
    duplicateOfId: null,
  })

describe('SignalSpread', () => {
  test('counts the leads carrying each signal', () => {
    const spread = new SignalSpread()
    const keys = signalKeys({ title: 'Pay fails', component: 'paybutton', errorFps: ['e1', 'e2'], stackFp: null })
    expect(keys).toEqual(['c:paybutton', 'e:e1', 'e:e2'])
    spread.add(keys, titleKey('Pay fails'))
    spread.add(['e:e1'], titleKey('PAY FAILS'))
    expect([spread.leads('e:e1'), spread.leads('e:e2'), spread.leads('c:paybutton'), spread.leads('s:x')]).toEqual([2, 1, 1, 0])
    expect([spread.leadsTitled('pay fails'), spread.leadsTitled('Pay fails twice')]).toEqual([2, 0])
    spread.remove(keys, titleKey('Pay fails'))
    spread.remove(['e:e1'], titleKey('pay fails'))
    spread.remove(['e:e1'], titleKey('pay fails'))
    expect([spread.leads('e:e1'), spread.leads('e:e2'), spread.leadsTitled('Pay fails')]).toEqual([0, 0, 0])
  })

  test('a bug reported forty times with one error keeps it specific: its duplicates do not count', () => {
    const index = new AppIndex()
    index.add(report('lead', 'Checkout total is wrong\nbody', 'TypeError: total is NaN'), null)
    for (let i = 0; i < 40; i++) index.add(report(`d${i}`, `Checkout total is wrong again ${i}\nbody`, 'TypeError: total is NaN'), 'lead')
    const next = report('q', 'Wrong checkout total\nbody', 'TypeError: total is NaN')
    expect(index.specificSignals(next)).toBe(next)
  })

  test('generic: more than 3 other leads, or more than 5 % of the App’s leads where that is more', () => {
    expect(isGeneric(GENERIC_MIN_LEADS, 10)).toBe(false)
    expect(isGeneric(GENERIC_MIN_LEADS + 1, 10)).toBe(true)
    expect(isGeneric(10, 200)).toBe(false)
    expect(isGeneric(11, 200)).toBe(true)
  })
})

describe('the console errors compared', () => {
  test('the newest first, distinct, at most three; log lines and other levels skipped', () => {
    const f = report('a', 'Checkout fails\nbody', BLOCKED, 'TypeError: cart.items is undefined at line 12', BLOCKED, 'TypeError: cart.items is undefined at line 40', 'Uncaught RangeError: too deep', 'Error: 500 from /api/pay')
    expect(f.errorFps).toEqual(['error: N from /api/pay', 'uncaught rangeerror: too deep', 'typeerror: cart.items is undefined at line N'])
    expect(report('b', 'x\ny').errorFps).toEqual([])
  })

  test('a specific error logged after a generic one still corroborates; the generic one alone does not', () => {
    const index = new AppIndex()
    for (let i = 0; i < 7; i++) index.add(report(`r${i}`, `Bug number ${i} of its own kind\nbody ${i}`, BLOCKED), null)
    const mine = report('q', 'Checkout page stays blank after login\nbody', BLOCKED, 'TypeError: cart.items is undefined')
    const lead = report('l', 'Blank checkout page once logged in\nbody', 'TypeError: cart.items is undefined')
    const other = report('o', 'Profile page stays blank after login\nbody', BLOCKED)
    const signals = index.specificSignals(mine)
    expect(signals.errorFps).toEqual(['typeerror: cart.items is undefined'])
    expect(corroboration(signals, lead)).toEqual(['consoleError'])
    expect(corroboration(signals, other)).toEqual([])
    // Unfiltered, the ad blocker's error would have corroborated the other bug.
    expect(corroboration(mine, other)).toEqual(['consoleError'])
  })
})

describe('AppIndex.specificSignals', () => {
  test('a console error on many leads is dropped from what corroborates; merging those leads makes it specific again', () => {
    const index = new AppIndex()
    for (let i = 0; i < 7; i++) index.add(report(`r${i}`, `Bug number ${i} of its own kind\nbody ${i}`, BLOCKED), null)
    const query = report('q', 'Checkout page stays blank\nafter login', BLOCKED)
    expect(query.errorFps).toHaveLength(1)
    expect(index.specificSignals(query).errorFps).toEqual([])
    // Another signal of the same report is judged on its own.
    const withTrace = report('q2', 'Crash in [@ mozilla::dom::Foo::Bar]\nsteps', BLOCKED)
    expect(withTrace.stackFp).not.toBeNull()
    expect(index.specificSignals(withTrace).stackFp).toBe(withTrace.stackFp)
    // r1-r4 turn out to be duplicates of r0: 3 leads carry the error now, no more than GENERIC_MIN_LEADS.
    for (const id of ['r1', 'r2', 'r3', 'r4']) index.setLead(id, 'r0')
    expect(index.specificSignals(query).errorFps).toEqual(query.errorFps)
    // Unmerged again: generic again. Removed from the index: counted no more.
    index.setLead('r4', null)
    expect(index.specificSignals(query).errorFps).toEqual([])
    index.remove('r4')
    expect(index.specificSignals(query).errorFps).toEqual(query.errorFps)
  })

  test('an indexed report does not count its own lead', () => {
    const index = new AppIndex()
    for (let i = 0; i < 4; i++) index.add(report(`r${i}`, `Bug ${i} alone\nbody`, BLOCKED), null)
    const own = report('r0', 'Bug 0 alone\nbody', BLOCKED)
    // Four leads carry it; r0's own is not counted: three others, not generic.
    expect(index.specificSignals(own).errorFps).toEqual(own.errorFps)
    const stranger = report('x', 'Another bug\nbody', BLOCKED)
    expect(index.specificSignals(stranger).errorFps).toEqual([])
  })
})

test('a suggestion’s reason names a shared signal that was not counted, and only a shared one', () => {
  const full = { title: 'Pay fails', component: 'paybutton', errorFps: ['e-own', 'e-generic'], stackFp: null }
  const specific = { ...full, errorFps: ['e-own'] }
  expect(genericNote(full, specific, { title: 'x', component: 'paybutton', errorFps: ['e-generic'], stackFp: null })).toBe('; same console error, common to many bugs: not counted')
  // The specific error is shared too: it counts, nothing to say.
  expect(genericNote(full, specific, { title: 'x', component: null, errorFps: ['e-generic', 'e-own'], stackFp: null })).toBe('')
  expect(genericNote(full, specific, { title: 'x', component: null, errorFps: ['e-other'], stackFp: null })).toBe('')
  expect(genericNote(full, full, full)).toBe('')
  expect(genericNote(full, { ...full, genericTitle: true }, { ...full, title: 'PAY FAILS', errorFps: [] })).toBe('; same title, common to many bugs: not counted')
})

describe('an ad blocker’s console error on 40 % of the reports (evaluation corpus, two orders)', () => {
  const corpus = (noisy: boolean): Corpus => {
    const c = JSON.parse(readFileSync(REAL_CORPUS_PATH, 'utf8')) as Corpus
    return noisy ? withGenericError(c, 0.4) : c
  }
  test('order 1: merges nothing wrong, and the same right merges as without it (it merged a report into another bug\'s lead before)', () => {
    const clean = measureQuality(corpus(false), undefined, 1)
    const noisy = measureQuality(corpus(true), undefined, 1)
    expect(clean.fp).toBe(0)
    expect(noisy.fp).toBe(0)
    expect(noisy.wrongAttach).toBe(0)
    // The specific signals still corroborate: the merges made are those made without the noise.
    expect(noisy.tp).toBe(clean.tp)
  })
  test('order 2: merges nothing wrong', () => {
    const noisy = measureQuality(corpus(true), undefined, 2)
    expect(noisy.fp).toBe(0)
    expect(noisy.wrongAttach).toBe(0)
  })
})

describe('a first line many leads share (an integration that puts its own line first)', () => {
  test('is no title: it corroborates nothing, and two reports with it are suggested, not merged', () => {
    const index = new AppIndex()
    const line = 'New message from the contact form on our website'
    for (let i = 0; i < 5; i++) index.add(report(`r${i}`, `${line}\nBug ${i} of its own kind, body ${i}`), null)
    const query = index.specificSignals(report('q', `${line}\nThe export to PDF hangs`))
    const lead = report('l', `${line}\nPDF export hangs forever`)
    expect(query.genericTitle).toBe(true)
    expect(corroboration(query, lead)).toEqual([])
    expect(mergeBlock(query, lead)).toBe('a title many reports share')
    // A title of its own is judged as before.
    const own = index.specificSignals(report('o', 'The export to PDF hangs after the first page\nbody'))
    expect(own.genericTitle).toBeFalsy()
    expect(mergeBlock(own, report('p', 'The export to PDF hangs after the first page\nother body'))).toBeNull()
  })

  test('a title more than 3 other reports have is no evidence, even in one cluster; it blocks a merge only when many leads have it', () => {
    const index = new AppIndex()
    const title = 'The export to PDF hangs after the first page'
    index.add(report('l', `${title}\nbody 0`), null)
    for (let i = 1; i <= 2; i++) index.add(report(`d${i}`, `${title}\nbody ${i}`), 'l')
    const q = report('q', `${title}\nanother body`)
    // Three other reports have it (one lead): still evidence.
    expect(corroboration(index.specificSignals(q), report('c', `${title}\nx`))).toEqual(['title'])
    index.add(report('d3', `${title}\nbody 3`), 'l')
    // Four: no evidence (wrong merges under a line put first would otherwise keep it looking specific),
    const signals = index.specificSignals(q)
    expect(signals.commonTitle).toBe(true)
    expect(corroboration(signals, report('c', `${title}\nx`))).toEqual([])
    // …but one lead has it: no merge block (the bug's next report merges on its score and its cluster).
    expect(signals.genericTitle).toBe(false)
    expect(mergeBlock(signals, report('c', `${title}\nx`))).toBeNull()
    // Removed from the index, counted no more.
    index.remove('d3')
    expect(index.specificSignals(q).commonTitle).toBeFalsy()
  })

  test('the evaluation corpus with one line put first: 0.3 % of reports attached to another bug at most (37 % before)', () => {
    const corpus = withConstantFirstLine(JSON.parse(readFileSync(REAL_CORPUS_PATH, 'utf8')) as Corpus)
    const q = measureQuality(corpus, undefined, 1)
    expect(q.wrongAttach).toBeLessThanOrEqual(0.003)
    // Suggestions still find the duplicates: a person decides.
    expect(q.suggestionHit).toBeGreaterThanOrEqual(0.55)
  })

  test('the tracker corpus (Apps of 30-55 reports) with one line put first: 2 % on average (50 % before: the first reports of an App cannot tell), and merges as without it', () => {
    const plain = JSON.parse(readFileSync(TRACKER_CORPUS_PATH, 'utf8')) as Corpus
    const corpus = withConstantFirstLine(plain)
    const seeds = [1, 2, 3]
    const runs = seeds.map((seed) => measureQuality(corpus, undefined, seed))
    const mean = (f: (q: (typeof runs)[number]) => number) => runs.reduce((a, q) => a + f(q), 0) / runs.length
    // The wrong ones are among an App's first 4 reports, before the line is known to be everybody's.
    expect(mean((q) => q.wrongAttach)).toBeLessThanOrEqual(0.02)
    for (const q of runs) expect(q.wrongAttach).toBeLessThanOrEqual(0.035)
    // Once it is known, each report's next line is its title: it merges as it does without the line
    // (recall 0.01 when the line stayed every report's title).
    const plainRecall = seeds.reduce((a, seed) => a + measureQuality(plain, undefined, seed).recall, 0) / seeds.length
    expect(mean((q) => q.recall)).toBeGreaterThanOrEqual(0.9 * plainRecall)
  })
})

describe('the next line is the title when the first is an integration’s', () => {
  const LINE = 'New message from the contact form on our website'

  test('summaryLine skips the lines it is told are boilerplate, two at most, never down to nothing', () => {
    const text = `${LINE}\nPage: /checkout\nThe pay button does nothing\nbody`
    expect(summaryLine(text)).toBe(LINE)
    expect(summaryLine(text, (l) => l === LINE)).toBe('Page: /checkout')
    expect(summaryLine(text, (l) => l === LINE || l.startsWith('Page:'))).toBe('The pay button does nothing')
    expect(summaryLine(text, () => true)).toBe('The pay button does nothing')
    expect(summaryLine(LINE, () => true)).toBe(LINE)
    // A sentence end cuts a line as a line break does.
    expect(summaryLine('Hello. The pay button does nothing. It spins.', (l) => l === 'Hello')).toBe('The pay button does nothing')
  })

  test('a line is boilerplate when 4 other reports have it and they are different bugs, not one popular bug', () => {
    const index = new AppIndex()
    for (let i = 0; i < 3; i++) index.add(report(`r${i}`, `${LINE}\nBug ${i} of its own kind`), null)
    expect(index.isBoilerplate(LINE)).toBe(false)
    index.add(report('r3', `${LINE}\nBug 3 of its own kind`), null)
    expect(index.isBoilerplate(LINE)).toBe(true)
    // One of the four asks: three others.
    expect(index.isBoilerplate(LINE, 'r3')).toBe(false)
    expect(index.isBoilerplate('Bug 3 of its own kind')).toBe(false)
    // One bug reported with one title six times: a popular title, not an integration's line.
    const popular = new AppIndex()
    const title = 'Checkout button does nothing after adding items'
    popular.add(report('lead', `${title}\nattempt 1`), null)
    for (let i = 0; i < 5; i++) popular.add(report(`d${i}`, `${title}\nattempt ${i + 2}`), 'lead')
    expect(popular.isBoilerplate(title)).toBe(false)
    // Two leads among twelve reports: still mostly one bug.
    popular.add(report('lead2', `${title}\nattempt 7`), null)
    for (let i = 5; i < 10; i++) popular.add(report(`d${i}`, `${title}\nattempt ${i + 2}`), 'lead')
    expect(popular.isBoilerplate(title)).toBe(false)
  })

  test('through the service: the title rules read the next line, for the first reports with the line too', async () => {
    const { sqlite, dir } = openBenchDb()
    try {
      const app = 'b'.repeat(24)
      insertApp(sqlite, app)
      const cluster = createClusterService(openSqliteStore(sqliteStorage(sqlite), systemClock).sides, systemClock)
      let n = 0
      const send = (body: string) => {
        const id = (++n).toString(16).padStart(24, '0')
        insertReport(sqlite, app, id, { text: `${LINE}\n${body}` }, n)
        return { id, ...cluster.clusterReport(id) }
      }
      // The App's first reports: the line is their title until four of them have it.
      const centos7 = send('Tests hang on Centos 7\nTests hang on Centos 7 with OpenJDK 11. Error: cannot find -lsnappy. Steps: run the native tests.')
      send('Exported invoices lose their VAT line\nThe PDF export of an invoice drops the VAT line for EU customers.')
      send('Search ignores accented letters\nSearching for cafe does not find café in the product list.')
      send('Avatar upload rejects PNG files\nUploading a PNG avatar fails with unsupported format.')
      // Another Centos, the same text: the numbers of the titles (the next lines) tell them apart.
      const centos8 = send('Tests hang on Centos 8\nTests hang on Centos 8 with OpenJDK 11. Error: cannot find -lsnappy. Steps: run the native tests.')
      expect(centos8.leadId).toBeNull()
      expect(centos8.reason).toContain('different numbers in titles')
      expect(cluster.similar(centos8.id, 5)[0].id).toBe(centos7.id)
      // Two reports of one bug, each with the line first: their own titles meet.
      send('Dark mode resets after every login on the settings page\nI switch dark mode on and after logging in again it is off.')
      const again = send('Dark mode resets after every login on the settings page\nEach time I log in the theme is light again, dark mode was on before.')
      expect(again.leadId).not.toBeNull()
      expect(again.reason).toContain('same title')
    } finally {
      sqlite.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
