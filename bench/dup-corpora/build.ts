/**
 * Builds the real development corpora for the clustering bench (issue 41 item 1) from a public,
 * duplicate-labelled bug-report dataset: Jahan & Rahman, "Towards Understanding the Impacts of Textual
 * Dissimilarity on Duplicate Bug Report Detection" (SANER 2023), GitHub
 * SigmaJahan/Towards-Understanding-the-Impacts-of-Textual-Dissimilarity-on-Duplicate-Bug-Report-Detection,
 * GPL-3.0. See SOURCE.md beside this file (origin, licence, sampling, counts).
 *
 * The data stays out of this repository (its licence differs from ours): this script rebuilds it.
 *
 *   git clone --bare https://github.com/SigmaJahan/Towards-Understanding-the-Impacts-of-Textual-Dissimilarity-on-Duplicate-Bug-Report-Detection.git /tmp/dup-src
 *   DUP_SOURCE=/tmp/dup-src bun bench/dup-corpora/build.ts            # writes bench/out/dup-corpora.json
 *   FIXLOOP_DUP_CORPUS=bench/out/dup-corpora.json bun bench/cluster.ts --quality
 *
 * DUP_SOURCE is a bare git dir (read at the pinned commit) or a checkout of that repository.
 * Deterministic: same source commit, same output.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { prng } from '../../test/sanitize-fixtures'
import type { Corpus, CorpusApp, CorpusReport } from '../../test/fixtures/corpus'

/** The source commit the SOURCE.md counts were taken from. */
export const SOURCE_COMMIT = 'eea48dc7ab2cdddae08e57b0d89fe1ffc1c02dfb'
export const DEFAULT_OUT = join(import.meta.dir, '..', 'out', 'dup-corpora.json')

/** Where the built file is written and read: FIXLOOP_DUP_CORPUS, else bench/out/dup-corpora.json. */
export function builtCorpusPath(env = process.env): string {
  return env.FIXLOOP_DUP_CORPUS ?? DEFAULT_OUT
}

/** Per project: the two pair files (textually similar and dissimilar duplicate pairs). */
/**
 * `singleShare`: the share of drawn groups kept as their earliest report only. The source holds
 * duplicate pairs only (no report without a duplicate), so those earliest reports are the corpus's
 * non-duplicates: real reports of the same trackers and period whose duplicates were left out, so
 * no other report in the corpus describes their bug. `target`: groups are drawn until this many reports.
 */
export interface ProjectSpec {
  id: string
  dir: string
  prefix: string
  singleShare: number
  target: number
}

export const PROJECTS: ProjectSpec[] = [
  { id: 'eclipse', dir: 'Datatset_Eclipse_Pair (trigram)', prefix: 'Eclipse', singleShare: 0.23, target: 1_500 },
  { id: 'firefox', dir: 'Datatset_Firefox_Pair (trigram)', prefix: 'Firefox', singleShare: 0.3, target: 1_600 },
  { id: 'mobile', dir: 'Datatset_Mobile_Pair (trigram)', prefix: 'Mobile', singleShare: 0.23, target: 1_600 },
]

/** The counts SOURCE.md advertises for a build from SOURCE_COMMIT (test/dup-corpora.test.ts checks both). */
export const EXPECTED_COUNTS: Record<string, { reports: number; groups: number; singletons: number; duplicateGroups: number; duplicates: number }> = {
  eclipse: { reports: 1500, groups: 731, singletons: 160, duplicateGroups: 571, duplicates: 769 },
  firefox: { reports: 1600, groups: 832, singletons: 243, duplicateGroups: 589, duplicates: 768 },
  mobile: { reports: 210, groups: 101, singletons: 24, duplicateGroups: 77, duplicates: 109 },
}

/** RFC 4180 CSV (quoted fields, doubled quotes, newlines inside quotes). */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let field = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"'
          i++
        } else quoted = false
      } else field += c
    } else if (c === '"') quoted = true
    else if (c === ',') {
      row.push(field)
      field = ''
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++
      row.push(field)
      rows.push(row)
      row = []
      field = ''
    } else field += c
  }
  if (field !== '' || row.length > 0) {
    row.push(field)
    rows.push(row)
  }
  return rows
}

/** The pair files store a summary/description as a one-element Python list literal: "['text']". */
function unlist(s: string): string {
  const t = s.trim()
  const m = /^\[(['"])([\s\S]*)\1\]$/.exec(t)
  return (m ? m[2] : t).replace(/\\'/g, "'").replace(/\\"/g, '"').replace(/\\n/g, '\n').replace(/[ \t]+/g, ' ').trim()
}

function bugId(s: string): string {
  return String(Math.round(Number(s)))
}

function readSource(source: string, path: string): string {
  if (existsSync(join(source, path))) return readFileSync(join(source, path), 'utf8')
  const r = Bun.spawnSync(['git', `--git-dir=${source}`, 'show', `${SOURCE_COMMIT}:${path}`], { stdout: 'pipe', stderr: 'pipe' })
  if (r.exitCode !== 0) throw new Error(`cannot read ${path} from ${source}: ${r.stderr.toString()}`)
  return r.stdout.toString()
}

export interface ProjectStats {
  pairsInSource: number
  reportsInSource: number
  groupsInSource: number
}

/** One project's corpus: duplicate groups drawn in a seeded order (whole, or their earliest report only) until `target` reports. */
export function buildProject(source: string, p: ProjectSpec): { app: CorpusApp; stats: ProjectStats } {
  const text = new Map<string, string>()
  const parent = new Map<string, string>()
  const find = (x: string): string => {
    let r = x
    while (parent.get(r) !== r) r = parent.get(r)!
    parent.set(x, r)
    return r
  }
  const add = (x: string) => {
    if (!parent.has(x)) parent.set(x, x)
  }
  let pairs = 0
  for (const kind of ['similar', 'dissimilar']) {
    const rows = parseCsv(readSource(source, `${p.dir}/${p.prefix}_textually_${kind}_pair.csv`))
    const head = rows[0]
    const col = (name: string) => head.indexOf(name)
    const [cId, cDup, cS1, cD1, cS2, cD2] = ['Bug ID', 'Duplicate_Bug_Ids', 'Summary1', 'description1', 'summary2', 'description2'].map(col)
    if ([cId, cDup, cS1, cD1, cS2, cD2].some((c) => c < 0)) throw new Error(`${p.prefix} ${kind}: unexpected header ${head.join(',')}`)
    for (const r of rows.slice(1)) {
      if (r.length < head.length || !r[cId] || !r[cDup]) continue
      const a = bugId(r[cId])
      const b = bugId(r[cDup])
      if (a === 'NaN' || b === 'NaN' || a === b) continue
      const ta = `${unlist(r[cS1])}\n${unlist(r[cD1])}`.trim()
      const tb = `${unlist(r[cS2])}\n${unlist(r[cD2])}`.trim()
      if (!ta || !tb) continue
      if (!text.has(a)) text.set(a, ta)
      if (!text.has(b)) text.set(b, tb)
      add(a)
      add(b)
      parent.set(find(a), find(b))
      pairs++
    }
  }
  const groups = new Map<string, string[]>()
  for (const id of [...parent.keys()].sort()) {
    const root = find(id)
    groups.set(root, [...(groups.get(root) ?? []), id])
  }
  const rand = prng(41)
  const order = [...groups.values()].sort((x, y) => (x[0] < y[0] ? -1 : 1))
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1))
    ;[order[i], order[j]] = [order[j], order[i]]
  }
  const reports: CorpusReport[] = []
  for (const members of order) {
    if (reports.length >= p.target) break
    // Ids are numeric Bugzilla ids: the smallest was filed first.
    members.sort((x, y) => Number(x) - Number(y))
    const group = `${p.id}-${members[0]}`
    const kept = rand() < p.singleShare ? members.slice(0, 1) : members
    // Capped by the API text limit, as intake would.
    for (const id of kept) reports.push({ id: `${p.id}-${id}`, group, text: text.get(id)!.slice(0, 8192), lang: 'en' })
  }
  return {
    app: { id: p.id, origin: `https://github.com/SigmaJahan/Towards-Understanding-the-Impacts-of-Textual-Dissimilarity-on-Duplicate-Bug-Report-Detection/tree/${SOURCE_COMMIT}/${encodeURI(p.dir)}`, reports },
    stats: { pairsInSource: pairs, reportsInSource: parent.size, groupsInSource: groups.size },
  }
}

/** Counts as SOURCE.md states them. */
export function countsOf(app: CorpusApp): { reports: number; groups: number; singletons: number; duplicateGroups: number; duplicates: number } {
  const sizes = new Map<string, number>()
  for (const r of app.reports) sizes.set(r.group, (sizes.get(r.group) ?? 0) + 1)
  const dup = [...sizes.values()].filter((n) => n > 1)
  return { reports: app.reports.length, groups: sizes.size, singletons: sizes.size - dup.length, duplicateGroups: dup.length, duplicates: dup.reduce((a, n) => a + n - 1, 0) }
}

if (import.meta.main) {
  const source = process.env.DUP_SOURCE
  if (!source) {
    console.error('set DUP_SOURCE to a bare clone (or checkout) of SigmaJahan/Towards-Understanding-the-Impacts-of-Textual-Dissimilarity-on-Duplicate-Bug-Report-Detection (see SOURCE.md)')
    process.exit(2)
  }
  const out = builtCorpusPath()
  const apps: CorpusApp[] = []
  for (const p of PROJECTS) {
    const { app, stats } = buildProject(source, p)
    apps.push(app)
    console.log(`${p.id}: source ${stats.pairsInSource} pairs, ${stats.reportsInSource} reports, ${stats.groupsInSource} groups; kept`, countsOf(app))
  }
  const corpus: Corpus = { apps, hardNegatives: [] }
  mkdirSync(dirname(out), { recursive: true })
  writeFileSync(out, JSON.stringify(corpus))
  console.log(`wrote ${out}`)
}
