/**
 * Quality floors of the clustering on both labelled corpora, through the real cluster service on a
 * real SQLite file (bench/cluster.ts prints the full figures). A change that merges different bugs
 * or ranks duplicates lower fails here. The floors sit a little under today's measured values
 * (docs/triage.md), on two arrival orders each, because clustering depends on who arrives first.
 */
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { CORPUS_PATH, measureQuality, REAL_CORPUS_PATH } from '../bench/cluster'
import { makeRealCorpus, serialize } from './fixtures/make-real-corpus'
import type { Corpus } from './fixtures/corpus'

const load = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Corpus
const SEEDS = [1, 2]

describe('tuning corpus (dedup-corpus.json: short end-user reports)', () => {
  const runs = SEEDS.map((seed) => measureQuality(load(CORPUS_PATH), undefined, seed))
  test('merge precision ≥ 0.98, no more than 0.5 % of reports attached to another bug', () => {
    for (const r of runs) {
      expect(r.precision).toBeGreaterThanOrEqual(0.98)
      expect(r.wrongAttach).toBeLessThanOrEqual(0.005)
      expect(r.tp).toBeGreaterThan(0)
    }
  })
  test('/similar finds a duplicate in the top 5 for ≥ 93 % of reports that have one', () => {
    for (const r of runs) {
      expect(r.recallAt5).toBeGreaterThanOrEqual(0.93)
      expect(r.recallAt1).toBeGreaterThanOrEqual(0.8)
    }
  })
})

describe('evaluation corpus (real-corpus.json: long technical reports, templated siblings)', () => {
  test('the file is what its generator makes (no hand edits that the generator would lose)', () => {
    expect(readFileSync(REAL_CORPUS_PATH, 'utf8')).toBe(serialize(makeRealCorpus()))
  })
  const runs = SEEDS.map((seed) => measureQuality(load(REAL_CORPUS_PATH), undefined, seed))
  test('wrong-attach ≤ 0.5 % of reports, merge precision ≥ 0.7 with recall ≥ 0.03', () => {
    for (const r of runs) {
      expect(r.wrongAttach).toBeLessThanOrEqual(0.005)
      expect(r.precision).toBeGreaterThanOrEqual(0.7)
      expect(r.recall).toBeGreaterThanOrEqual(0.03)
    }
  })
  test('/similar R@1 ≥ 0.9, R@5 ≥ 0.95, R@10 ≥ 0.95', () => {
    for (const r of runs) {
      expect(r.recallAt1).toBeGreaterThanOrEqual(0.9)
      expect(r.recallAt5).toBeGreaterThanOrEqual(0.95)
      expect(r.recallAt10).toBeGreaterThanOrEqual(0.95)
    }
  })
})
