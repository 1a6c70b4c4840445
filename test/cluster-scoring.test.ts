/**
 * The clustering's text rules on real-bug-report shapes: the title line, identifier splitting, the
 * stemmer, the title-only vetoes, the templated-sibling veto, the char n-gram blend and the per-App
 * threshold calibration.
 */
import { describe, expect, test } from 'bun:test'
import { openSqliteStore } from '../src/db/sqlite/store'
import { sqliteStorage } from '../src/db/sqlite/storage'
import { firstLine, words } from '../src/dedup/tokenize'
import { featuresOf, type ReportInput } from '../src/dedup/features'
import { decide, DEFAULT_THRESHOLDS, SHORT_REPORT_CEILING, templatedSiblings } from '../src/dedup/decide'
import { AppGrams, APP_GRAMS_MIN_DOCS, blend, charGrams, noteText } from '../src/dedup/rerank'
import { calibrate, CALIBRATION, ScoreHistory } from '../src/dedup/calibrate'
import { createClusterService, type ClusterService } from '../src/dedup/service'
import { systemClock } from '../src/core/clock'
import { rmSync } from 'node:fs'
import type { Database } from 'bun:sqlite'

const input = (id: string, text: string): ReportInput => ({ id, text, url: null, componentTarget: null, consoleLogs: null, duplicateOfId: null })

describe('title line', () => {
  test('a plain newline ends the title ("Title\\nBody" as submitted)', () => {
    expect(firstLine('NPE in BlockReader.read\nSteps to reproduce: open a file')).toBe('NPE in BlockReader.read')
    expect(firstLine('  Crash on save\r\nbody')).toBe('Crash on save')
  })
  test('without a newline the first sentence is the title, and a dotted name does not end it', () => {
    expect(firstLine('Checkout fails. It was fine yesterday.')).toBe('Checkout fails')
    expect(firstLine('FileSystem.open throws on 2.3.1 builds')).toBe('FileSystem.open throws on 2.3.1 builds')
  })
})

describe('words', () => {
  test('identifiers count whole and by their parts; versions and issue keys stay whole', () => {
    const w = words('NullPointerException in org.apache.fs.FileSystem.open, see HADOOP-1234 on v2.3.1 with max_retry_count')
    for (const t of ['nullpointerexception', 'null', 'pointer', 'org.apache.fs.filesystem.open', 'file', 'system', 'open', 'hadoop-1234', 'v2.3.1', 'max_retry_count', 'retri', 'count']) {
      expect(w).toContain(t)
    }
  })
  test('a Bugzilla reference is one word ("bug 1234567", "Bug #604822", "bug1234567"); a small count is not one', () => {
    expect(words('Regression from bug 1234567, see also Bug #604822 and bug1234567')).toEqual(expect.arrayContaining(['bug-1234567', 'bug-604822']))
    expect(words('Regression from bug 1234567').filter((w) => w === 'bug-1234567').length).toBe(1)
    expect(words('found 2 bugs, bug 2 is worse').some((w) => w.startsWith('bug-'))).toBe(false)
    // A body's bare number is dropped, the reference is kept.
    const f = featuresOf(input('a', 'Crash on startup\nThis regressed in bug 1234567 at 12:30'))
    expect(f.tf.has('bug-1234567')).toBe(true)
    expect(f.tf.has('1234567')).toBe(false)
  })
  test('the stemmer gives "address" and "addresses" one stem (and "connection"/"connections")', () => {
    expect(words('address')).toEqual(words('addresses'))
    expect(words('connection')).toEqual(words('connections'))
    expect(words('address')).not.toEqual(words('dress'))
  })
  test('bare numbers of a body (line numbers, timestamps, ports, durations) are no words; those of the title are', () => {
    const f = featuresOf(input('a', 'Error 502 on save\nat Reader.read(Reader.java:412) 12:30:45 after 30 ms, 502 again'))
    expect(f.tf.has('502')).toBe(true)
    for (const noise of ['412', '12', '30', '45']) expect(f.tf.has(noise)).toBe(false)
  })
  test('sublinear term weights: a class named forty times in a stack trace does not outweigh the title', () => {
    const trace = Array.from({ length: 40 }, (_, i) => `at BlockReader.read(BlockReader.java:${i})`).join('\n')
    const f = featuresOf(input('a', `Checkpoint upload hangs\n${trace}`))
    expect(f.tf.get('block')!).toBeLessThan(f.tf.get('checkpoint')! * 2)
    expect(f.tf.get('checkpoint')).toBe(3) // title words weigh ×3
  })
})

describe('vetoes', () => {
  const pair = (a: string, b: string, score = 0.99) => decide(featuresOf(input('a', a)), featuresOf(input('b', b)), score)
  test('versions in the body (user agents, builds, CVE ids) no longer block identical reports', () => {
    const a = 'Grid freezes when pasting from Excel\nUser agent: Mozilla/5.0 Chrome/124.0.0.0 Safari/537.36. Build 31.0.0+4411. CVE-2024-1234 unrelated.'
    const b = 'Grid freezes when pasting from Excel\nUser agent: Mozilla/5.0 Firefox/125.0. Build 31.1.2+998.'
    expect(pair(a, b).attach).toBe(true)
  })
  test('different numbers in the titles still veto', () => {
    expect(pair('Upgrade Jackson to 2.16.1\nbody', 'Upgrade Jackson to 2.17.0\nbody').attach).toBe(false)
    expect(pair('App 2.3.1 crashes on upload', 'App 2.4.0 crashes on upload').reason).toContain('numbers')
  })
  test('templated siblings: one or two substituted name tokens in a ≥ 60 % identical title', () => {
    expect(templatedSiblings('Backport HDFS-123 to branch-3.2', 'Backport HDFS-123 to branch-3.3')).toBe(true)
    expect(templatedSiblings('Build fails on Centos 7', 'Build fails on Centos 8')).toBe(true)
    expect(templatedSiblings('hadoop-common build fails', 'hadoop-hdfs build fails')).toBe(true)
    expect(templatedSiblings('cache tests fail on the main branch', 'cli tests fail on the main branch')).toBe(true)
    expect(templatedSiblings('Tooltip flickers in Firefox', 'Tooltip flickers in Chrome')).toBe(true)
    expect(pair('hadoop-common build fails\nsame log', 'hadoop-hdfs build fails\nsame log').reason).toContain('sibling')
  })
  test('paraphrases and inflections are not siblings', () => {
    expect(templatedSiblings('The checkout button does nothing when I click it', 'Hi team, the checkout button does nothing when I click it')).toBe(false)
    expect(templatedSiblings('Export crashes with grouped rows', 'Export crashed with grouped rows')).toBe(false)
    expect(templatedSiblings('Search shows nothing', 'Search shows empty')).toBe(false)
    expect(templatedSiblings('Crash in the export', 'Freeze while scrolling the grid fast')).toBe(false)
  })
  test('the short-report rule still needs a higher score', () => {
    expect(pair('search broken', 'search broken', DEFAULT_THRESHOLDS.strong + 0.05).attach).toBe(false)
  })
  test('two identical short reports merge even where the bar is raised (a new App: 0.85 + 0.2 would be past 1)', () => {
    const raised = { ...DEFAULT_THRESHOLDS, strong: 0.85 }
    const short = (score: number) => decide(featuresOf(input('a', 'Export is broken')), featuresOf(input('b', 'Export is broken')), score, raised)
    expect(short(1).attach).toBe(true)
    expect(short(SHORT_REPORT_CEILING).attach).toBe(true)
    // Still more than a long report needs: near-identical only.
    expect(short(0.9)).toMatchObject({ attach: false, suggest: true, reason: expect.stringContaining(`merge bar ${SHORT_REPORT_CEILING.toFixed(2)}`) })
  })
})

describe('char n-gram blend', () => {
  test('charGrams counts 3-, 4- and 5-grams', () => {
    // " abc " has 3 trigrams, 2 four-grams, 1 five-gram
    const v = charGrams('abc')
    expect(v.counts.reduce((a, b) => a + b, 0)).toBe(6)
    expect(v.keys.length).toBe(6)
    for (let i = 1; i < v.keys.length; i++) expect(v.keys[i]).toBeGreaterThan(v.keys[i - 1])
  })
  test('a paraphrase of the query outranks a report that only shares boilerplate', () => {
    const query = 'ShuffleHandler throws IOException while shuffling with SSL\nOS: Ubuntu 22.04\nOpenJDK 17.0.10'
    const dup = { text: 'Shuffle with ssl.enabled=true fails: IOException in ShuffleHandler\nOS: CentOS 7', wordScore: 0.4 }
    const other = { text: 'Audit log rotation fails at midnight\nOS: Ubuntu 22.04\nOpenJDK 17.0.10', wordScore: 0.4 }
    const [d, o] = blend(query, [dup, other])
    expect(d.score).toBeGreaterThan(o.score)
    for (const s of [d, o]) expect(s.score).toBeGreaterThanOrEqual(0)
  })
})

describe('per-App calibration', () => {
  const base = DEFAULT_THRESHOLDS
  test('an App without history gets conservative thresholds', () => {
    const t = calibrate(base, new ScoreHistory())
    expect(t.strong).toBeCloseTo(base.strong + CALIBRATION.learningRaise)
  })
  test('an App whose unrelated reports already look alike gets a higher threshold, capped; none goes below the base', () => {
    const quiet = new ScoreHistory()
    const noisy = new ScoreHistory()
    const extreme = new ScoreHistory()
    for (let i = 0; i < 100; i++) {
      quiet.add(0.02 + (i % 10) / 100)
      noisy.add(0.5 + (i % 10) / 100)
      extreme.add(0.95)
    }
    const q = calibrate(base, quiet)
    const n = calibrate(base, noisy)
    // Short end-user notes (low background) keep the base bar: it is never lowered by calibration.
    expect(q.strong).toBeCloseTo(base.strong)
    expect(n.strong).toBeCloseTo(noisy.median() + CALIBRATION.margin)
    expect(n.strong).toBeGreaterThan(q.strong)
    expect(calibrate(base, extreme).strong).toBeCloseTo(base.strong + CALIBRATION.maxRaise)
    // The corroborated threshold moves by a share of the raise only.
    expect(n.moderate - base.moderate).toBeCloseTo((n.strong - base.strong) * CALIBRATION.corroboratedShare)
  })
  test('the suggestion floor follows the background (median + margin), never below the base nor above the corroborated bar', () => {
    const quiet = new ScoreHistory()
    const noisy = new ScoreHistory()
    for (let i = 0; i < 100; i++) {
      quiet.add(0.1)
      noisy.add(0.5)
    }
    expect(calibrate(base, quiet).suggest).toBeCloseTo(base.suggest)
    expect(calibrate(base, noisy).suggest).toBeCloseTo(0.5 + CALIBRATION.suggestMargin)
    const t = calibrate(base, noisy)
    expect(t.suggest).toBeLessThanOrEqual(t.moderate)
    expect(t.suggest).toBeLessThan(t.strong)
  })
  test('a report scored again (a batch handed back, a verdict redone) counts once: its new score replaces its first', () => {
    const h = new ScoreHistory()
    h.add(0.9, 'a')
    h.add(0.1, 'b')
    h.add(0.2, 'c')
    expect(h.median()).toBeCloseTo(0.2)
    h.add(0.05, 'a')
    h.add(0.05, 'a')
    expect(h.count).toBe(3)
    expect(h.median()).toBeCloseTo(0.1)
    // An index build's seed scores carry no report: each counts.
    h.add(0.3)
    h.add(0.3)
    expect(h.count).toBe(5)
  })
  test('the ring and its median match a plain model over thousands of adds, reports scored again included', () => {
    const h = new ScoreHistory()
    // The model: entries in the order they took a slot; the ring is the newest HISTORY of them.
    const entries: { id: string; score: number }[] = []
    let seed = 7
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)
    for (let i = 0; i < 3000; i++) {
      const id = `r${Math.floor(rand() * 900)}`
      const score = Math.fround(Math.round(rand() * 1000) / 1000)
      h.add(score, id)
      const ring = entries.slice(-512)
      const held = ring.find((e) => e.id === id)
      if (held) held.score = score
      else entries.push({ id, score })
      const now = entries.slice(-512).map((e) => e.score).sort((a, b) => a - b)
      expect(h.count).toBe(now.length)
      expect(h.median()).toBe(now[now.length >> 1])
    }
  })
  test('the bars are conservative: an automatic merge needs ≥ 0.75 in every App, ≥ 0.85 in a new one', () => {
    expect(base.strong).toBeGreaterThanOrEqual(0.75)
    expect(calibrate(base, new ScoreHistory()).strong).toBeGreaterThanOrEqual(0.85)
  })
})

/** The real cluster service on a throw-away SQLite file with one App (`app`), removed afterwards. */
async function withClusterService(app: string, fn: (cluster: ClusterService, sqlite: Database, insertReport: (id: string, text: string, at: number) => void) => Promise<void>): Promise<void> {
  const bench = await import('../bench/cluster')
  const { sqlite, dir } = bench.openBenchDb()
  try {
    const cluster = createClusterService(openSqliteStore(sqliteStorage(sqlite), systemClock).sides, systemClock)
    bench.insertApp(sqlite, app)
    await fn(cluster, sqlite, (id, text, at) => bench.insertReport(sqlite, app, id, { text }, at))
  } finally {
    sqlite.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

const hexId = (i: number) => i.toString(16).padStart(24, '0')

describe('calibration through the service', () => {
  test('an App starts conservative, calibrates from its own reports, and keeps it across a restart', async () => {
    const app = 'a'.repeat(24)
    await withClusterService(app, async (cluster, _sqlite, insertReport) => {
      expect(cluster.thresholdsFor(app).strong).toBeCloseTo(DEFAULT_THRESHOLDS.strong + CALIBRATION.learningRaise)
      // Templated CI reports: different bugs whose texts look alike, as in a busy tracker.
      const parts = ['cache', 'resolver', 'installer', 'lockfile', 'cli', 'index', 'build', 'docs']
      for (let i = 0; i < 60; i++) {
        insertReport(hexId(i + 1), `Nightly job ${i} for ${parts[i % 8]}-${i} reports a failure on the build agent\nThe ${parts[(i * 3) % 8]} step of run ${i} exited with status 1 on the build agent, the nightly job for ${parts[i % 8]} reports a failure.`, i)
        cluster.clusterReport(hexId(i + 1))
      }
      const calibrated = cluster.thresholdsFor(app).strong
      expect(calibrated).toBeGreaterThan(DEFAULT_THRESHOLDS.strong)
      expect(calibrated).not.toBeCloseTo(DEFAULT_THRESHOLDS.strong + CALIBRATION.learningRaise)
      cluster.forget(app) // as after a restart: the index is rebuilt from the database
      expect(Math.abs(cluster.thresholdsFor(app).strong - calibrated)).toBeLessThan(0.05)
    })
  })

  test('a report planned again (its batch handed back) is scored once in the stored calibration', async () => {
    const app = 'b'.repeat(24)
    await withClusterService(app, async (cluster, sqlite, insertReport) => {
      await cluster.prepare(app)
      const ids = [1, 2, 3, 4, 5].map(hexId)
      ids.forEach((id, i) => insertReport(id, `Export ${i} of the ${['ledger', 'invoice', 'report', 'payroll', 'budget'][i]} hangs\nThe spinner never stops after step ${i}.`, i))
      cluster.withPlans(() => {
        // First try: every report planned, then the batch is handed back before anything is written.
        for (const id of ids) cluster.plan(id)
        // The retry plans them again and writes them.
        const verdicts = ids.map((id) => cluster.plan(id)!)
        ids.forEach((id, i) => cluster.applyPlan(id, app, verdicts[i]))
      })
      expect(sqlite.query('SELECT scored FROM app_calibration WHERE app_id = ?').get(app)).toEqual({ scored: 5 })
    })
  })
})

describe("the App's n-gram frequencies (/similar's order)", () => {
  test('AppGrams counts each report once per gram; an unseen gram counts nothing', () => {
    const grams = new AppGrams()
    const v = charGrams('zeta frobnicator overflow')
    for (let i = 0; i < 7; i++) grams.note(v)
    expect(grams.docs).toBe(7)
    for (const k of v.keys) expect(grams.df(k)).toBe(7)
    const other = charGrams('qqqxj wwwvk')
    expect(other.keys.filter((k) => grams.df(k) > 0).length).toBeLessThan(other.keys.length / 10)
    expect(grams.bytes).toBeLessThanOrEqual(256 * 1024)
  })

  test("a rare shared name outranks shared common words once the App's counts say which is rare", () => {
    const grams = new AppGrams()
    // The App's usual vocabulary: checkout page complaints; one name, FrobnicatorWidget, is rare.
    for (let i = 0; i < 200; i++) noteText(grams, `The checkout page is slow and the payment button does not respond ${i % 7}`)
    noteText(grams, 'FrobnicatorWidget overflow in the sidebar')
    const query = 'FrobnicatorWidget overflow on the checkout page'
    const candidates = [
      { id: 'common', text: 'The checkout page is slow and the payment button does not respond', wordScore: 0.3 },
      { id: 'rare', text: 'FrobnicatorWidget overflow in the sidebar', wordScore: 0.3 },
    ]
    const [common, rare] = blend(query, candidates, undefined, grams)
    expect(rare.rankScore).toBeGreaterThan(common.rankScore)
    // The blended score (what the merge rules compare) is the one computed without the App's counts.
    const [commonPlain, rarePlain] = blend(query, candidates)
    expect(common.score).toBe(commonPlain.score)
    expect(rare.score).toBe(rarePlain.score)
    // The App's IDF widens the gap well beyond what the shortlist's IDF sees.
    expect(rare.rankScore - common.rankScore).toBeGreaterThan(2 * (rarePlain.score - commonPlain.score))
  })

  test(`below ${APP_GRAMS_MIN_DOCS} reports the order is the blended score`, () => {
    const grams = new AppGrams()
    for (let i = 0; i < APP_GRAMS_MIN_DOCS - 1; i++) noteText(grams, `report ${i} about the login form`)
    const [c] = blend('login form broken', [{ text: 'the login form is broken', wordScore: 0.5 }], undefined, grams)
    expect(c.rankScore).toBe(c.score)
  })
})

describe('an exact twin in a flood of one template', () => {
  test('a report sent again finds its twin among 64 that differ by one digit or two (retrieval ties go to the same title)', async () => {
    const app = 'e'.repeat(24)
    await withClusterService(app, async (cluster, _sqlite, insertReport) => {
      // The same words in every report but the number: "2" and "7" are no words (too short), so for
      // retrieval the reports with a one-digit number are all alike, and more than 40 of them tie.
      const body = (i: number) => `The checkout button does nothing when I click it after adding items (report ${i}). The spinner keeps turning and the order never goes through.`
      const first = new Map<number, string>()
      let n = 0
      for (let round = 0; round < 2; round++) {
        for (let i = 1; i <= 64; i++) {
          const id = hexId(++n)
          insertReport(id, body(i), n)
          const verdict = cluster.clusterReport(id)
          if (round === 0) first.set(i, verdict.leadId ?? id)
          // The second round: every report joins its own twin's cluster, never another number's.
          else expect({ i, lead: verdict.leadId }).toEqual({ i, lead: first.get(i)! })
        }
      }
    })
  })
})
