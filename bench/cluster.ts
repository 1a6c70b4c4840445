/**
 * Clustering benchmark: quality on the three labelled corpora (test/fixtures/dedup-corpus.json, the
 * tuning corpus of short end-user reports; test/fixtures/real-corpus.json, the evaluation corpus of
 * long technical reports; test/fixtures/tracker-corpus.json, tracker conventions, evaluation only) and
 * cost per report as an App grows (1k, 10k, 100k sanitized reports), through the real cluster service
 * on a real SQLite file. Corpus texts are sanitized first, as production stores them.
 *
 *   bun bench/cluster.ts            # quality + scale (1k, 10k, 100k)
 *   bun bench/cluster.ts --quality  # quality only
 *   bun bench/cluster.ts --dump     # how often the best non-vetoed lead is right, per score band (choosing the bars)
 *   bun bench/cluster.ts --quality --real-only   # the real development corpora only (below)
 *   bun bench/cluster.ts --quality --generic-error=0.4   # 40 % of every App's reports carry one console error, whatever their bug
 *   bun bench/cluster.ts --quality --constant-first-line # every report starts with the same line (an integration's prefix)
 *   bun bench/cluster.ts --quality --user-agent-lines    # every report carries a Bugzilla form's user-agent lines (src/dedup/user-agent.ts)
 *   bun bench/cluster.ts --quality --log-lines           # every body starts with three timestamped log lines (rerank.ts gramText)
 *
 * Real development corpora (issue 41): public duplicate-labelled bug reports, one corpus App per project,
 * built by bench/dup-corpora/build.ts (not kept in the repository: see bench/dup-corpora/SOURCE.md).
 * Read from `--corpus=PATH`, else FIXLOOP_DUP_CORPUS, else bench/out/dup-corpora.json; when the file is
 * missing the bench says so and measures the synthetic corpora only. Each project is measured on its
 * own, with the same measurement as the synthetic corpora.
 *
 * Prints wrong-attach % (reports attached to another bug's lead), pairwise precision/recall of the
 * automatic merges, the suggestion hit rate (reports with an earlier true duplicate whose merge or
 * suggestion is one), suggestions per report and their share right, each App's bars, R@1/R@5/R@10 of
 * /similar, ms per report and index build time.
 */
import { Database } from 'bun:sqlite'
import { openSqliteStore } from '../src/db/sqlite/store'
import { sqliteStorage } from '../src/db/sqlite/storage'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { applyMigrations } from '../src/db/sqlite/migrate'
import { createClusterService } from '../src/dedup/service'
import { DEFAULT_THRESHOLDS, type Thresholds } from '../src/dedup/decide'
import { systemClock } from '../src/core/clock'
import { prng } from '../test/sanitize-fixtures'
import type { Corpus, CorpusReport } from '../test/fixtures/corpus'
import { sanitizeText } from '../src/sanitize/sanitize'
import { LIMITS } from '../src/core/limits'
import { builtCorpusPath } from './dup-corpora/build'
import type { Suggestion } from '../src/dedup/clusterer'

type Report = CorpusReport

export const CORPUS_PATH = join(import.meta.dir, '..', 'test', 'fixtures', 'dedup-corpus.json')

/** A deterministic PRNG so every run clusters the same order (the tests' mulberry32). */
export { prng }

function hexId(n: number): string {
  return n.toString(16).padStart(24, '0')
}

export function openBenchDb(): { sqlite: Database; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'fixloop-cluster-'))
  const sqlite = new Database(join(dir, 'fixloop.db'), { create: true, strict: true })
  sqlite.run('PRAGMA journal_mode = WAL')
  sqlite.run('PRAGMA synchronous = NORMAL')
  applyMigrations(sqlite)
  sqlite.run("INSERT INTO orgs (id, name, created_at) VALUES ('000000000000000000000001', 'bench', 0)")
  return { sqlite, dir }
}

export function insertApp(sqlite: Database, appId: string): void {
  sqlite
    .query("INSERT INTO apps (id, org_id, slug, name, public_key, signing_secret_enc, created_at, updated_at) VALUES (?, '000000000000000000000001', ?, ?, ?, 'x', 0, 0)")
    .run(appId, appId, appId, 'pub_' + appId)
}

export function insertReport(sqlite: Database, appId: string, id: string, r: Pick<Report, 'text' | 'url' | 'component' | 'consoleError' | 'earlierErrors'>, createdAt: number): void {
  const errors = [...(r.earlierErrors ?? []), ...(r.consoleError ? [r.consoleError] : [])]
  sqlite
    .query(
      // A sanitized row carries its redaction counts (the similarity index holds sanitized rows only).
      `INSERT INTO feedback (id, org_id, app_id, status, text, url, component_target, console_logs, submitted_mode, created_at, updated_at, redactions)
       VALUES (?, '000000000000000000000001', ?, 'sanitized', ?, ?, ?, ?, 'public', ?, ?, '{}')`,
    )
    .run(
      id,
      appId,
      r.text,
      r.url ?? null,
      r.component ? JSON.stringify({ name: r.component }) : null,
      errors.length > 0 ? JSON.stringify(errors.map((message, ts) => ({ level: 'error', message, ts }))) : null,
      createdAt,
      createdAt,
    )
}

export interface QualityResult {
  precision: number
  recall: number
  recallAt1: number
  recallAt5: number
  recallAt10: number
  /** Share of all reports attached automatically to a lead of another bug. */
  wrongAttach: number
  /**
   * Of the reports with an earlier true duplicate (one of their group arrived before them): the share
   * whose automatic merge or single suggested lead is a true duplicate.
   */
  suggestionHit: number
  /** Suggestions made per clustered report (at most one each). */
  suggestionsPerReport: number
  /** Of the suggestions made: the share whose lead is a true duplicate. */
  suggestionPrecision: number
  /** Each report's best verdict score and whether its lead was right (bench --dump; choosing the bars). */
  decisions: { score: number; right: boolean; merged: boolean }[]
  /** Each App's calibrated bars once all its reports are in. */
  bars: Thresholds[]
  tp: number
  fp: number
  fn: number
  reports: number
  /** The first and second half of each App's arrivals; with `triager`, what the App learned too. */
  halves?: HalfStats[]
  learned?: { merge: number; suggest: number; suggestRaisedTo: number | null; provenBar: number | null }[]
}

/** One half of an App's arrivals when a person answers every suggestion (`measureQuality`'s `triager`). */
export interface HalfStats {
  /** Reports with an earlier true duplicate, and those whose merge or suggestion was one. */
  withEarlier: number
  hit: number
  suggested: number
  suggestedRight: number
  autoMerged: number
  autoMergedRight: number
}

/**
 * How a corpus's reports arrive: `shuffled` (a seeded order: whatever arrives first leads), or `filing`,
 * the order their trackers numbered them in (the real corpora's ids are Bugzilla ids, which grow with
 * filing time), as an App receives reports while its users meet the bugs: duplicates come in bursts.
 */
export type Arrival = 'shuffled' | 'filing'

/** Reports in the order of the number in their ids (`eclipse-518095`): their filing order. */
export function inFilingOrder<T extends { id: string }>(reports: readonly T[]): T[] {
  const numberOf = (r: T): number => Number(r.id.replace(/\D/g, ''))
  return [...reports].sort((a, b) => numberOf(a) - numberOf(b))
}

/**
 * Feeds each App's reports through clustering in a shuffled order (or `arrival`); scores pairs against the labels.
 * `triager`: a person answers every suggestion as the labels say (a merge into the suggested lead when it
 * is the same bug, a rejection when not), as the dashboard's buttons do: the App learns from it (learn.ts).
 */
export function measureQuality(corpus: Corpus, thresholds: Thresholds = DEFAULT_THRESHOLDS, seed = 7, triager = false, arrival: Arrival = 'shuffled'): QualityResult {
  const { sqlite, dir } = openBenchDb()
  const cluster = createClusterService(openSqliteStore(sqliteStorage(sqlite), systemClock).sides, systemClock, thresholds)
  const rand = prng(seed)
  let n = 1
  let tp = 0
  let fp = 0
  let fn = 0
  const hits = { 1: 0, 5: 0, 10: 0 }
  let wrong = 0
  let eligible = 0
  let reports = 0
  let withEarlier = 0
  let hit = 0
  let suggested = 0
  let suggestedRight = 0
  const decisions: QualityResult['decisions'] = []
  const bars: Thresholds[] = []
  const emptyHalf = (): HalfStats => ({ withEarlier: 0, hit: 0, suggested: 0, suggestedRight: 0, autoMerged: 0, autoMergedRight: 0 })
  const halves = [emptyHalf(), emptyHalf()]
  const learned: NonNullable<QualityResult['learned']> = []
  for (const app of corpus.apps) {
    const appId = hexId(0xa00000 + n++)
    insertApp(sqlite, appId)
    const order = arrival === 'filing' ? inFilingOrder(app.reports) : [...app.reports].sort(() => rand() - 0.5)
    const idOf = new Map<string, string>()
    const groupById = new Map<string, string>()
    const seenGroups = new Set<string>()
    for (const [at, r] of order.entries()) {
      const id = hexId(n++)
      idOf.set(r.id, id)
      groupById.set(id, r.group)
      // As production stores it: sanitized (versions that look like IPv4 addresses included).
      insertReport(sqlite, appId, id, { ...r, text: sanitizeText(r.text, {}) }, n)
      // The verdict as the clusterer made it (its suggestion included).
      const v = cluster.clusterReport(id) as { leadId: string | null; score?: number; suggestion?: Suggestion | null }
      reports++
      const lead = v.leadId ?? v.suggestion?.leadId ?? null
      const right = lead !== null && groupById.get(lead) === r.group
      if (seenGroups.has(r.group)) {
        withEarlier++
        if (right) hit++
      }
      if (v.suggestion) {
        suggested++
        if (right) suggestedRight++
      }
      if (lead !== null) decisions.push({ score: v.leadId ? (v.score ?? 0) : v.suggestion!.score, right, merged: v.leadId !== null })
      const half = halves[at < order.length / 2 ? 0 : 1]
      if (seenGroups.has(r.group)) {
        half.withEarlier++
        if (right) half.hit++
      }
      if (v.suggestion) {
        half.suggested++
        if (right) half.suggestedRight++
      }
      if (v.leadId) {
        half.autoMerged++
        if (right) half.autoMergedRight++
      }
      if (triager && v.suggestion && !v.leadId) {
        if (right) cluster.merge(id, v.suggestion.leadId)
        else cluster.rejectSuggestion(id)
      }
      seenGroups.add(r.group)
    }
    bars.push(cluster.thresholdsFor(appId))
    if (triager) {
      const state = cluster.triageState(appId)
      learned.push({ merge: state.bars.merge, suggest: state.bars.suggest, suggestRaisedTo: state.learned.suggestRaisedTo, provenBar: state.learned.provenBar })
    }
    const root = new Map<string, string>()
    const groupOfId = new Map(app.reports.map((r) => [idOf.get(r.id)!, r.group]))
    for (const row of sqlite.query('SELECT id, duplicate_of_id FROM feedback WHERE app_id = ?').all(appId) as { id: string; duplicate_of_id: string | null }[]) {
      root.set(row.id, row.duplicate_of_id ?? row.id)
      if (row.duplicate_of_id && groupOfId.get(row.duplicate_of_id) !== groupOfId.get(row.id)) wrong++
    }
    const list = app.reports
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length; j++) {
        const same = list[i].group === list[j].group
        const merged = root.get(idOf.get(list[i].id)!) === root.get(idOf.get(list[j].id)!)
        if (merged && same) tp++
        else if (merged && !same) fp++
        else if (!merged && same) fn++
      }
    }
    const groupOf = new Map(list.map((r) => [idOf.get(r.id)!, r.group]))
    for (const r of list) {
      const others = list.filter((o) => o.group === r.group && o.id !== r.id).length
      if (others === 0) continue
      eligible++
      const top = cluster.similar(idOf.get(r.id)!, 10)
      const at = top.findIndex((c) => groupOf.get(c.id) === r.group)
      for (const k of [1, 5, 10] as const) if (at !== -1 && at < k) hits[k]++
    }
  }
  sqlite.close()
  rmSync(dir, { recursive: true, force: true })
  const rAt = (k: 1 | 5 | 10) => (eligible === 0 ? 1 : hits[k] / eligible)
  return {
    precision: tp + fp === 0 ? 1 : tp / (tp + fp),
    recall: tp + fn === 0 ? 1 : tp / (tp + fn),
    recallAt1: rAt(1),
    recallAt5: rAt(5),
    recallAt10: rAt(10),
    wrongAttach: reports === 0 ? 0 : wrong / reports,
    suggestionHit: withEarlier === 0 ? 1 : hit / withEarlier,
    suggestionsPerReport: reports === 0 ? 0 : suggested / reports,
    suggestionPrecision: suggested === 0 ? 1 : suggestedRight / suggested,
    decisions,
    bars,
    tp,
    fp,
    fn,
    halves,
    ...(triager ? { learned } : {}),
    reports,
  }
}

/**
 * Synthetic background reports whose words follow a Zipf law (as natural language does): the corpus
 * vocabulary ranked by frequency, then a long tail of product names, SKUs and other rare tokens.
 * A uniform draw from a small vocabulary would make every word common, which no real App sees.
 */
function zipfSampler(rand: () => number, vocab: string[], s = 1.07): () => string {
  const weights = vocab.map((_, i) => 1 / Math.pow(i + 1, s))
  const cumulative: number[] = []
  let total = 0
  for (const w of weights) cumulative.push((total += w))
  return () => {
    const x = rand() * total
    let lo = 0
    let hi = cumulative.length - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (cumulative[mid] < x) lo = mid + 1
      else hi = mid
    }
    return vocab[lo]
  }
}

function syntheticVocab(corpus: Corpus, rand: () => number): string[] {
  const freq = new Map<string, number>()
  for (const r of corpus.apps.flatMap((a) => a.reports)) {
    for (const w of r.text.toLowerCase().split(/[^a-zäöüéèàçñ0-9]+/)) if (w.length > 2) freq.set(w, (freq.get(w) ?? 0) + 1)
  }
  const ranked = [...freq.entries()].sort((a, b) => b[1] - a[1]).map(([w]) => w)
  const syllables = ['ka', 'lo', 'mi', 'ten', 'var', 'os', 'qui', 'ber', 'dan', 'zel', 'pro', 'max', 'lux', 'neo']
  for (let i = 0; i < 30_000; i++) {
    const n = 2 + Math.floor(rand() * 3)
    let w = ''
    for (let k = 0; k < n; k++) w += syllables[Math.floor(rand() * syllables.length)]
    ranked.push(rand() < 0.2 ? `${w}${Math.floor(rand() * 1000)}` : w)
  }
  return ranked
}

function syntheticText(rand: () => number, next: () => string): string {
  const len = 8 + Math.floor(rand() * 30)
  const parts: string[] = []
  for (let i = 0; i < len; i++) parts.push(next())
  if (rand() < 0.3) parts.push(`v${1 + Math.floor(rand() * 5)}.${Math.floor(rand() * 20)}.${Math.floor(rand() * 10)}`)
  if (rand() < 0.3) parts.push(`order ${Math.floor(rand() * 1e6)}`)
  return parts.join(' ') + '.'
}

/** Average ms to cluster one new report in an App that already holds `size` sanitized reports. */
export function measureCost(corpus: Corpus, size: number, probes = 300): { size: number; msPerReport: number; cpuMsPerReport: number; buildMs: number; msPerSimilar: number; msPerSimilarWarm: number; indexMb: number } {
  const { sqlite, dir } = openBenchDb()
  const cluster = createClusterService(openSqliteStore(sqliteStorage(sqlite), systemClock).sides, systemClock)
  const appId = hexId(0xb00000)
  insertApp(sqlite, appId)
  const rand = prng(size)
  const next = zipfSampler(rand, syntheticVocab(corpus, rand))
  const paths = ['/checkout', '/cart', '/account', '/orders', '/search', '/settings', '/billing', '/docs/api', '/login']
  const insert = sqlite.transaction(() => {
    for (let i = 0; i < size; i++) {
      insertReport(sqlite, appId, hexId(0x100000 + i), { text: syntheticText(rand, next), url: `https://app.example${paths[i % paths.length]}` }, i)
    }
  })
  insert()
  const held = () => (Bun.gc(true), process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers)
  const before = held()
  const t0 = performance.now()
  cluster.indexSize(appId) // builds the index once, as the first report after a restart would
  const buildMs = performance.now() - t0
  // The index and the text cache it fills (the App's n-gram counts: 256 KB of it).
  const indexMb = (held() - before) / 2 ** 20
  const samples = corpus.apps.flatMap((a) => a.reports)
  const t1 = performance.now()
  const cpu1 = process.cpuUsage()
  for (let i = 0; i < probes; i++) {
    const id = hexId(0x900000 + i)
    const r = samples[i % samples.length]
    insertReport(sqlite, appId, id, r, size + i)
    cluster.clusterReport(id)
  }
  const msPerReport = (performance.now() - t1) / probes
  // The process's CPU time (user + system) over the same loop: steadier than wall time on a shared VM,
  // where another tenant's load stretches the wall clock but not the work done.
  const cpu = process.cpuUsage(cpu1)
  const cpuMsPerReport = (cpu.user + cpu.system) / 1000 / probes
  // GET /similar?limit=10 on the probes (a wider shortlist than a verdict's, the App's n-gram IDF).
  const t2 = performance.now()
  for (let i = 0; i < probes; i++) cluster.similar(hexId(0x900000 + i), 10)
  const msPerSimilar = (performance.now() - t2) / probes
  // Again: the candidates' neighbourhood densities are known now (src/dedup/neighbourhood.ts), as for a
  // report opened twice or one whose candidates other lists ranked.
  const t3 = performance.now()
  for (let i = 0; i < probes; i++) cluster.similar(hexId(0x900000 + i), 10)
  const msPerSimilarWarm = (performance.now() - t3) / probes
  sqlite.close()
  rmSync(dir, { recursive: true, force: true })
  return { size, msPerReport, cpuMsPerReport, buildMs, msPerSimilar, msPerSimilarWarm, indexMb }
}

export const REAL_CORPUS_PATH = join(import.meta.dir, '..', 'test', 'fixtures', 'real-corpus.json')
/** The third corpus (test/fixtures/make-tracker-corpus.ts): evaluation only, never tuned against. */
export const TRACKER_CORPUS_PATH = join(import.meta.dir, '..', 'test', 'fixtures', 'tracker-corpus.json')

/** Quality over several arrival orders (clustering is order-dependent: who arrives first leads). */
export function qualityOverOrders(corpus: Corpus, seeds = [1, 2, 3, 4, 5, 6], thresholds: Thresholds = DEFAULT_THRESHOLDS, arrival: Arrival = 'shuffled') {
  const runs = seeds.map((seed) => measureQuality(corpus, thresholds, seed, false, arrival))
  const min = (f: (r: QualityResult) => number) => Math.min(...runs.map(f))
  const max = (f: (r: QualityResult) => number) => Math.max(...runs.map(f))
  const avg = (f: (r: QualityResult) => number) => runs.reduce((a, r) => a + f(r), 0) / runs.length
  return { runs, min, max, avg }
}

/** One line per corpus for the summary table printed last (the bench README's baseline table). */
const summary: string[] = []

/**
 * The console error of an ad blocker, logged before anything else in `share` of each App's reports
 * whatever their bug (`--generic-error=SHARE`): a signal many bugs share, which must corroborate no merge,
 * while the report's own error still does (signal-spread.ts).
 */
export const GENERIC_CONSOLE_ERROR = 'Failed to load resource: net::ERR_BLOCKED_BY_CLIENT https://www.googletagmanager.com/gtag/js?id=G-12345'
export function withGenericError(corpus: Corpus, share: number, seed = 99): Corpus {
  const rand = prng(seed)
  return { ...corpus, apps: corpus.apps.map((app) => ({ ...app, reports: app.reports.map((r) => (rand() < share ? { ...r, earlierErrors: [GENERIC_CONSOLE_ERROR] } : r)) })) }
}
/**
 * Every report with one line put first, the same for all (`--constant-first-line`): what an integration
 * that prefixes its own line to the user's text sends. The title rules read the first line.
 */
export const CONSTANT_FIRST_LINE = 'New message from the contact form on our website'
export function withConstantFirstLine(corpus: Corpus): Corpus {
  return { ...corpus, apps: corpus.apps.map((app) => ({ ...app, reports: app.reports.map((r) => ({ ...r, text: `${CONSTANT_FIRST_LINE}\n${r.text}` })) })) }
}
/**
 * Every report as a Bugzilla guided form files it (`--user-agent-lines`): the reporter's browser on a
 * `User-Agent:` and a `Build Identifier:` line after the title, and `Reproducible: Always` at the end.
 * The browser's version follows the filing order (a release every 1/40th of the reports, as release
 * trains go) and its platform is drawn at random, so reports filed in the same weeks share version and
 * build tokens whatever their bug: what raw tracker text holds and the development corpora's flattened
 * bodies lost (bench/dup-corpora/SOURCE.md).
 */
const PLATFORMS = ['Windows NT 10.0; Win64; x64', 'Windows NT 6.1; WOW64', 'Macintosh; Intel Mac OS X 10.15', 'X11; Linux x86_64', 'X11; Ubuntu; Linux x86_64']
export function withUserAgentLines(corpus: Corpus, seed = 3): Corpus {
  const rand = prng(seed)
  return rewrittenInFilingOrder(corpus, (text, filed) => {
    const release = 50 + Math.floor(40 * filed)
    const ua = `Mozilla/5.0 (${PLATFORMS[Math.floor(rand() * PLATFORMS.length)]}; rv:${release}.0) Gecko/20100101 Firefox/${release}.0`
    const cut = text.indexOf('\n')
    const [title, body] = cut === -1 ? [text, ''] : [text.slice(0, cut), text.slice(cut + 1)]
    return `${title}\nUser-Agent:       ${ua}\nBuild Identifier: ${ua}\n\n${body}\n\nReproducible: Always`
  })
}
/**
 * Every report with three log lines pasted at the start of its body (`--log-lines`): a timestamp of the
 * report's month, as the filing order runs (five years over the corpus), a level and a step number. Raw
 * tracker text holds such logs; the development corpora's flattened bodies lost their digits.
 */
export function withLogLines(corpus: Corpus, seed = 11): Corpus {
  const rand = prng(seed)
  const pad = (n: number, width = 2) => String(n).padStart(width, '0')
  const at = (max: number) => Math.floor(rand() * max)
  return rewrittenInFilingOrder(corpus, (text, filed) => {
    const month = Math.floor(60 * filed)
    const day = `${2017 + Math.floor(month / 12)}-${pad(1 + (month % 12))}-${pad(1 + at(28))}`
    const lines = [0, 1, 2].map(() => `${day} ${pad(at(24))}:${pad(at(60))}:${pad(at(60))},${pad(at(1000), 3)} ${['INFO', 'WARN', 'ERROR'][at(3)]} main: step ${at(100)}`)
    const cut = text.indexOf('\n')
    return cut === -1 ? text : `${text.slice(0, cut)}\n${lines.join('\n')}\n${text.slice(cut + 1)}`
  })
}
/**
 * Each App's reports with their text rewritten, knowing where each falls in filing order (0 first, towards
 * 1 last), cut to the API's limit as the corpus builder cuts them (bench/cluster-e2e.ts submits them).
 */
function rewrittenInFilingOrder(corpus: Corpus, rewrite: (text: string, filed: number) => string): Corpus {
  return {
    ...corpus,
    apps: corpus.apps.map((app) => {
      const rankOf = new Map(inFilingOrder(app.reports).map((r, i) => [r.id, i]))
      return { ...app, reports: app.reports.map((r) => ({ ...r, text: rewrite(r.text, rankOf.get(r.id)! / app.reports.length).slice(0, LIMITS.textMax) })) }
    }),
  }
}
const logLines = process.argv.includes('--log-lines')
const userAgentLines = process.argv.includes('--user-agent-lines')
const constantFirstLine = process.argv.includes('--constant-first-line')
const genericShare = Number(process.argv.find((a) => a.startsWith('--generic-error='))?.slice('--generic-error='.length) ?? 0)

function printQuality(name: string, given: Corpus, targets: string, arrival: Arrival = 'shuffled'): void {
  let corpus = genericShare > 0 ? withGenericError(given, genericShare) : given
  if (genericShare > 0) name += ` + generic error on ${Math.round(genericShare * 100)} %`
  if (constantFirstLine) {
    corpus = withConstantFirstLine(corpus)
    name += ' + a constant first line'
  }
  if (userAgentLines) {
    corpus = withUserAgentLines(corpus)
    name += ' + user-agent lines'
  }
  if (logLines) {
    corpus = withLogLines(corpus)
    name += ' + log lines'
  }
  // Filing order is one order: measured once.
  const { runs, min, max, avg } = arrival === 'filing' ? qualityOverOrders(corpus, [1], DEFAULT_THRESHOLDS, 'filing') : qualityOverOrders(corpus)
  if (arrival === 'filing') name += ', in filing order'
  const q = runs[0]
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`
  summary.push(
    `| ${name} | ${q.reports} | ${(avg((r) => r.wrongAttach) * 100).toFixed(2)} % | ${avg((r) => r.precision).toFixed(2)} | ${avg((r) => r.recall).toFixed(3)} | ${pct(avg((r) => r.suggestionHit))} | ${pct(avg((r) => r.recallAt1))} | ${pct(avg((r) => r.recallAt5))} | ${pct(avg((r) => r.recallAt10))} |`,
  )
  const f = (x: number) => x.toFixed(3)
  console.log(`${name}: ${q.reports} reports in ${corpus.apps.length} apps; ${runs.length} arrival orders (${targets})`)
  console.log(`  wrong-attach    max ${(max((r) => r.wrongAttach) * 100).toFixed(2)} % avg ${(avg((r) => r.wrongAttach) * 100).toFixed(2)} % of reports`)
  console.log(`  merge precision min ${f(min((r) => r.precision))} avg ${f(avg((r) => r.precision))}`)
  console.log(`  merge recall    min ${f(min((r) => r.recall))} avg ${f(avg((r) => r.recall))}  [order 1: tp ${q.tp}, fp ${q.fp}, fn ${q.fn}]`)
  // Per report, as the held-out figures are given: of the reports with an earlier duplicate, how many merged into one.
  const merged = (r: QualityResult) => (r.halves ?? []).reduce((a, h) => a + h.autoMerged, 0)
  const mergedRight = (r: QualityResult) => (r.halves ?? []).reduce((a, h) => a + h.autoMergedRight, 0)
  const withEarlier = (r: QualityResult) => (r.halves ?? []).reduce((a, h) => a + h.withEarlier, 0)
  console.log(
    `  per report      ${f(avg((r) => mergedRight(r) / Math.max(1, withEarlier(r))))} of the reports with an earlier duplicate merged into one; ${f(avg((r) => mergedRight(r) / Math.max(1, merged(r))))} of the merges right  [order 1: ${mergedRight(q)} of ${withEarlier(q)}, ${merged(q) - mergedRight(q)} wrong]`,
  )
  console.log(`  suggestion hit  min ${f(min((r) => r.suggestionHit))} avg ${f(avg((r) => r.suggestionHit))} (reports with an earlier true duplicate whose merge or suggestion is one)`)
  console.log(`  suggestions     ${f(avg((r) => r.suggestionsPerReport))} per report, ${f(avg((r) => r.suggestionPrecision))} of them a true duplicate`)
  console.log(`  bars (order 1, per App: merge/corroborated/suggest) ${q.bars.map((b) => `${f(b.strong)}/${f(b.moderate)}/${f(b.suggest)}`).join('  ')}`)
  console.log(`  /similar R@1 ${f(min((r) => r.recallAt1))}  R@5 ${f(min((r) => r.recallAt5))}  R@10 ${f(min((r) => r.recallAt10))} (min over orders)`)
}

/**
 * `--dump`: with nothing merged and every non-vetoed best lead suggested, how often the best lead is a
 * true duplicate per score band (what the merge and suggestion bars are chosen from).
 */
function dumpBands(name: string, corpus: Corpus): void {
  const all = [1, 2, 3].flatMap((seed) => measureQuality(corpus, { strong: 9, moderate: 9, suggest: 0 }, seed).decisions)
  console.log(`${name}: best non-vetoed lead per report, 3 orders`)
  for (let lo = 0.2; lo < 1; lo += 0.05) {
    const band = all.filter((d) => d.score >= lo && d.score < lo + 0.05)
    const above = all.filter((d) => d.score >= lo)
    if (band.length === 0) continue
    const share = (xs: typeof all) => (xs.filter((d) => d.right).length / Math.max(1, xs.length)).toFixed(2)
    console.log(`  [${lo.toFixed(2)}, ${(lo + 0.05).toFixed(2)}): ${String(band.length).padStart(4)} leads, ${share(band)} right; ≥ ${lo.toFixed(2)}: ${String(above.length).padStart(4)}, ${share(above)} right`)
  }
}

if (import.meta.main && process.argv.includes('--dump')) {
  dumpBands('tuning', JSON.parse(readFileSync(CORPUS_PATH, 'utf8')) as Corpus)
  dumpBands('evaluation', JSON.parse(readFileSync(REAL_CORPUS_PATH, 'utf8')) as Corpus)
  if (process.argv.includes('--tracker')) dumpBands('tracker (evaluation only)', JSON.parse(readFileSync(TRACKER_CORPUS_PATH, 'utf8')) as Corpus)
  process.exit(0)
}

/** Where the real development corpora are read from (see the header comment). */
export function dupCorpusPath(argv = process.argv, env = process.env): string {
  const flag = argv.find((a) => a.startsWith('--corpus='))
  return flag ? flag.slice('--corpus='.length) : builtCorpusPath(env)
}

/** Each project of a real corpus file measured on its own, exactly as the synthetic corpora are. */
function printRealCorpora(path: string): void {
  if (!existsSync(path)) {
    console.log(`real development corpora: skipped, ${path} is missing (build it: DUP_SOURCE=<clone> bun bench/dup-corpora/build.ts; see bench/dup-corpora/SOURCE.md)`)
    return
  }
  const all = JSON.parse(readFileSync(path, 'utf8')) as Corpus
  for (const app of all.apps) printQuality(`real: ${app.id}`, { apps: [app], hardNegatives: [] }, 'baseline, no targets')
  // As an App receives them: duplicates in bursts, which /similar and the suggestions learn (arrival-locality.ts).
  for (const app of all.apps) printQuality(`real: ${app.id}`, { apps: [app], hardNegatives: [] }, 'baseline, no targets', 'filing')
  // As sparse as the held-out set (~6 % of its reports have an earlier duplicate; here ~10 %): most bugs reported once.
  for (const app of all.apps.filter((a) => a.reports.length >= 1000)) {
    const sparse = { apps: [sparseOf(app)], hardNegatives: [] }
    printQuality(`real: ${app.id}, sparse`, sparse, `${Math.round(SPARSE_KEEP * 100)} % of its bugs kept whole, the others by their first report; baseline, no targets`)
    printQuality(`real: ${app.id}, sparse`, sparse, 'baseline, no targets', 'filing')
  }
  for (const app of all.apps) printTriager(`real: ${app.id}`, { apps: [app], hardNegatives: [] })
}

/** The share of a sparse corpus's bugs (groups with duplicates) kept whole. */
export const SPARSE_KEEP = 0.12

/**
 * The App's reports with most duplicates left out: each bug with duplicates is kept whole with
 * probability `keep` (seeded), else as its first report (the smallest tracker id), so that few reports
 * have an earlier duplicate, as in an App where most bugs are reported once.
 */
export function sparseOf<T extends { id: string; group: string }>(app: { id: string; reports: T[] }, keep = SPARSE_KEEP, seed = 5): { id: string; reports: T[] } {
  const rand = prng(seed)
  const groups = new Map<string, T[]>()
  for (const r of app.reports) groups.set(r.group, [...(groups.get(r.group) ?? []), r])
  const reports: T[] = []
  for (const g of groups.values()) {
    if (g.length > 1 && rand() < keep) reports.push(...g)
    else reports.push(inFilingOrder(g)[0])
  }
  return { ...app, reports }
}

/**
 * The same App with a person answering every suggestion as the labels say (learn.ts learns from it):
 * the first and the second half of the arrivals side by side, over two orders.
 */
function printTriager(name: string, corpus: Corpus): void {
  const runs = [1, 2].map((seed) => measureQuality(corpus, DEFAULT_THRESHOLDS, seed, true))
  const sum = (half: 0 | 1, f: (h: HalfStats) => number) => runs.reduce((a, r) => a + f(r.halves![half]), 0)
  const ratio = (a: number, b: number) => (b === 0 ? '—' : (a / b).toFixed(3))
  const line = (half: 0 | 1) =>
    `hit ${ratio(sum(half, (h) => h.hit), sum(half, (h) => h.withEarlier))}, ${sum(half, (h) => h.suggested) / runs.length} suggestions (${ratio(sum(half, (h) => h.suggestedRight), sum(half, (h) => h.suggested))} right), ${sum(half, (h) => h.autoMerged) / runs.length} automatic merges (${ratio(sum(half, (h) => h.autoMergedRight), sum(half, (h) => h.autoMerged))} right)`
  console.log(`${name} with a triager (every suggestion answered by the labels; two orders):`)
  console.log(`  first half   ${line(0)}`)
  console.log(`  second half  ${line(1)}`)
  const l = runs.map((r) => r.learned![0])
  console.log(`  learned      merge bar ${l.map((x) => x.merge.toFixed(3)).join(' / ')} (proven ${l.map((x) => x.provenBar ?? '—').join(' / ')}), suggestion floor ${l.map((x) => x.suggest.toFixed(3)).join(' / ')} (raised ${l.map((x) => x.suggestRaisedTo ?? '—').join(' / ')}); wrong-attach ${runs.map((r) => (r.wrongAttach * 100).toFixed(2) + ' %').join(' / ')}`)
}

if (import.meta.main) {
  const corpus = JSON.parse(readFileSync(CORPUS_PATH, 'utf8')) as Corpus
  const realOnly = process.argv.includes('--real-only')
  if (!realOnly) {
    printQuality('tuning corpus (dedup-corpus.json)', corpus, 'targets: precision ≥ 0.98, suggestion hit ≥ 0.35, R@5 ≥ 0.93')
    const real = JSON.parse(readFileSync(REAL_CORPUS_PATH, 'utf8')) as Corpus
    printQuality('evaluation corpus (real-corpus.json)', real, 'targets: precision ≥ 0.98, suggestion hit ≥ 0.35, R@1 ≥ 0.64, R@5 ≥ 0.88, R@10 ≥ 0.90')
    const tracker = JSON.parse(readFileSync(TRACKER_CORPUS_PATH, 'utf8')) as Corpus
    printQuality('tracker corpus (tracker-corpus.json, evaluation only)', tracker, 'targets: precision ≥ 0.98, suggestion hit ≥ 0.35, R@1 ≥ 0.64, R@5 ≥ 0.88, R@10 ≥ 0.90')
  }
  printRealCorpora(dupCorpusPath())
  console.log('\n| corpus | reports | wrong-attach (avg) | auto-merge precision (avg) | auto-merge recall (avg) | suggestion hit (avg) | R@1 | R@5 | R@10 |')
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|')
  for (const line of summary) console.log(line)
  if (!process.argv.includes('--quality') && !realOnly) {
    const sizes = [1_000, 10_000, 100_000]
    const results = sizes.map((s) => measureCost(corpus, s))
    for (const r of results) console.log(`app of ${String(r.size).padStart(6)} reports: ${r.msPerReport.toFixed(3)} ms per report, ${r.cpuMsPerReport.toFixed(3)} ms of CPU (index build ${r.buildMs.toFixed(0)} ms, ${r.indexMb.toFixed(0)} MB); /similar?limit=10 ${r.msPerSimilar.toFixed(3)} ms first, ${r.msPerSimilarWarm.toFixed(3)} ms again`)
    const growth = results[2].msPerReport / results[0].msPerReport
    console.log(`growth 1k → 100k: ${growth.toFixed(2)}× (target ≤ 3×); at 100k ${results[2].msPerReport.toFixed(2)} ms (target ≤ 3 ms), index build ${(results[2].buildMs / 1000).toFixed(1)} s (target ≤ 20 s)`)
    // Long technical reports (stack traces, logs) as the new reports: the heavier case.
    const long = measureCost(JSON.parse(readFileSync(REAL_CORPUS_PATH, 'utf8')) as Corpus, 100_000)
    console.log(`app of 100000 reports, long technical reports arriving (real-corpus.json): ${long.msPerReport.toFixed(3)} ms per report, ${long.cpuMsPerReport.toFixed(3)} ms of CPU (index build ${long.buildMs.toFixed(0)} ms)`)
  }
}
