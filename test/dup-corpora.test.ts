/**
 * The real development corpora (bench/dup-corpora: build script + SOURCE.md dataset card). Fast, and no
 * quality thresholds: the builder's CSV reading and sampling on a small real file, the card's counts
 * against the builder's, and — when the corpus has been built (FIXLOOP_DUP_CORPUS or
 * bench/out/dup-corpora.json) — the built file against the advertised counts. The data itself is not in
 * the repository (GPL-3.0 source), so that last check runs only where it was built.
 */
import { describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildProject, builtCorpusPath, countsOf, EXPECTED_COUNTS, parseCsv, PROJECTS } from '../bench/dup-corpora/build'
import type { Corpus } from './fixtures/corpus'

describe('dup-corpora builder', () => {
  test('reads RFC 4180 CSV: quoted commas, doubled quotes, newlines inside quotes, CRLF', () => {
    const rows = parseCsv('a,b,c\r\n1,"x, y","say ""hi"""\n2,"line one\nline two",\n')
    expect(rows).toEqual([
      ['a', 'b', 'c'],
      ['1', 'x, y', 'say "hi"'],
      ['2', 'line one\nline two', ''],
    ])
  })

  test('groups chains of duplicate pairs into one bug, keeps groups whole or as their earliest report, drops self-pairs', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dup-corpora-'))
    try {
      mkdirSync(join(dir, 'P'))
      const head = ',Bug ID,Duplicate_Bug_Ids,Average_Cos_Similarity_Trigram,Summary1,description1,summary2,description2,is_similar\n'
      const row = (a: number, b: number) => `0,${a}.0,${b}.0,0.1,['Title ${a}'],['body ${a}'],['Title ${b}'],['body ${b}'],1\n`
      // 30 -> 20 -> 10 is one bug (a chain); 11/12 another; 40/41 a third; 50 paired with itself is dropped.
      writeFileSync(join(dir, 'P', 'P_textually_similar_pair.csv'), head + row(30, 20) + row(20, 10) + row(12, 11) + row(50, 50))
      writeFileSync(join(dir, 'P', 'P_textually_dissimilar_pair.csv'), head + row(41, 40))
      const whole = buildProject(dir, { id: 'p', dir: 'P', prefix: 'P', singleShare: 0, target: 100 })
      expect(whole.stats).toEqual({ pairsInSource: 4, reportsInSource: 7, groupsInSource: 3 })
      expect(countsOf(whole.app)).toEqual({ reports: 7, groups: 3, singletons: 0, duplicateGroups: 3, duplicates: 4 })
      const r10 = whole.app.reports.find((r) => r.id === 'p-10')!
      expect(r10.text).toBe('Title 10\nbody 10')
      expect(whole.app.reports.filter((r) => r.group === r10.group).map((r) => r.id).sort()).toEqual(['p-10', 'p-20', 'p-30'])
      const singles = buildProject(dir, { id: 'p', dir: 'P', prefix: 'P', singleShare: 1, target: 100 })
      expect(singles.app.reports.map((r) => r.id).sort()).toEqual(['p-10', 'p-11', 'p-40'])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('SOURCE.md advertises the counts the builder expects', () => {
    const card = readFileSync(join(import.meta.dir, '..', 'bench', 'dup-corpora', 'SOURCE.md'), 'utf8')
    for (const p of PROJECTS) {
      const c = EXPECTED_COUNTS[p.id]
      expect(card).toContain(`| ${c.reports} | ${c.groups} | ${c.singletons} | ${c.duplicateGroups} | ${c.duplicates} |`)
    }
    const total = Object.values(EXPECTED_COUNTS).reduce((a, c) => a + c.reports, 0)
    expect(total).toBeGreaterThanOrEqual(3000)
    expect(EXPECTED_COUNTS.eclipse.reports).toBeGreaterThanOrEqual(1500)
    expect(EXPECTED_COUNTS.firefox.reports).toBeGreaterThanOrEqual(1500)
  })

  const built = builtCorpusPath()
  test.if(existsSync(built))(`the built corpus (${built}) parses and holds the advertised counts, every duplicate pair complete`, () => {
    const corpus = JSON.parse(readFileSync(built, 'utf8')) as Corpus
    expect(corpus.apps.map((a) => a.id)).toEqual(PROJECTS.map((p) => p.id))
    const ids = new Set<string>()
    for (const app of corpus.apps) {
      expect(countsOf(app)).toEqual(EXPECTED_COUNTS[app.id])
      for (const r of app.reports) {
        expect(ids.has(r.id)).toBe(false)
        ids.add(r.id)
        expect(r.text.length).toBeGreaterThan(0)
        expect(r.text.length).toBeLessThanOrEqual(8192)
        expect(r.group.startsWith(`${app.id}-`)).toBe(true)
      }
    }
  })
})

describe('sparse variant (bench/cluster.ts sparseOf: as few earlier duplicates as the held-out set)', () => {
  test('each bug kept whole or as its first report; seeded; the share kept close to the asked one', async () => {
    const { sparseOf } = await import('../bench/cluster')
    // 400 bugs of 3 reports (ids in filing order 3k, 3k+1, 3k+2) and 100 reported once.
    const reports = [
      ...Array.from({ length: 400 }, (_, k) => [0, 1, 2].map((i) => ({ id: `p-${3 * k + i + 1}`, group: `g${k}`, text: `bug ${k} report ${i}` }))).flat(),
      ...Array.from({ length: 100 }, (_, k) => ({ id: `p-${5000 + k}`, group: `s${k}`, text: `single ${k}` })),
    ]
    const app = { id: 'p', reports: [...reports].reverse() }
    const sparse = sparseOf(app, 0.1, 5)
    expect(sparseOf(app, 0.1, 5).reports.map((r) => r.id)).toEqual(sparse.reports.map((r) => r.id))
    const byGroup = new Map<string, string[]>()
    for (const r of sparse.reports) byGroup.set(r.group, [...(byGroup.get(r.group) ?? []), r.id])
    // Every bug is still there, once or whole; a bug kept once keeps its first report.
    expect(byGroup.size).toBe(500)
    const whole = [...byGroup.entries()].filter(([g, ids]) => g.startsWith('g') && ids.length === 3)
    for (const [g, ids] of byGroup) {
      expect([1, 3]).toContain(ids.length)
      if (ids.length === 1 && g.startsWith('g')) expect(ids[0]).toBe(`p-${3 * Number(g.slice(1)) + 1}`)
    }
    expect(whole.length).toBeGreaterThan(20)
    expect(whole.length).toBeLessThan(60)
  })
})
