/**
 * /similar's order on both dialects, through the processing port as the API calls it: candidates found by
 * the report's 24 most distinctive words (PostgreSQL read only a verdict's 12 worth of rows, and dropped
 * the rest), and scores scaled by each candidate's neighbourhood (src/dedup/neighbourhood.ts), so that a
 * report close to many others stops crowding the top of every list.
 */
import { expect, test } from 'bun:test'
import { describeEachDialect, processingOf, type FreshStore } from '../dialects'
import { PROCESSING_KINDS } from '../../src/worker/processing'
import { Worker } from '../../src/worker/loop'
import { Logger } from '../../src/core/logger'
import { APP_GRAMS_MIN_DOCS } from '../../src/dedup/rerank'
import { SIMILAR_TITLE_WEIGHT } from '../../src/dedup/title-cosine'
import { SIMILAR_CONTAINMENT_WEIGHT } from '../../src/dedup/title-containment'
import { seedOrgApp, sql, submitReceived } from './store-fixtures'
import { ARRIVAL_CORROBORATES, corroboratingGap, LONG_AGO_LOCALITY, RECENCY_WEIGHT, recencyBonus } from '../../src/dedup/arrival-locality'
import { firstReport, OLD, PARAPHRASE, PLACES, QUERY, RECENT, secondReport } from '../fixtures/arrival-texts'

const SYLLABLES = ['ka', 'lo', 'mi', 'nu', 'pe', 'ra', 'so', 'ti', 'vu', 'ze', 'bo', 'di', 'fa', 'gu']
/** Made-up words no other text here uses, distinct for distinct `from` (`tag` sets each kind apart). */
function pseudoWords(from: number, n: number, tag: string): string {
  const out: string[] = []
  for (let k = from * 32; k < from * 32 + n; k++) out.push(tag + [k % 14, Math.floor(k / 14) % 14, Math.floor(k / 196) % 14, Math.floor(k / 2744) % 14].map((d) => SYLLABLES[d]).join(''))
  return out.join(' ')
}

async function setup(s: FreshStore) {
  await seedOrgApp(s)
  const processing = processingOf(s.store, s.clock)
  const worker = new Worker(s.store.jobs(PROCESSING_KINDS), processing.steps, s.clock, new Logger('silent'))
  return { lifecycle: s.store.lifecycle, worker }
}

let seq = 0
async function submitAll(s: FreshStore, texts: string[]): Promise<string[]> {
  const { lifecycle, worker } = await setup(s)
  const ids: string[] = []
  for (const text of texts) {
    ids.push(await submitReceived(s, lifecycle, `s${String(++seq).padStart(5, '0')}`, text))
  }
  while ((await worker.tick()) > 0) {}
  return ids
}

/** Enough unrelated reports for the App's own n-gram counts (APP_GRAMS_MIN_DOCS), each with its own words. */
const fillers = (n: number) => Array.from({ length: n }, (_, i) => `Filler ${pseudoWords(i + 1, 3, 'q')}\n${pseudoWords(i + 101, 14, 'f')}`)

describeEachDialect('similar order', (fresh) => {
  test('a report close to many others ranks below the lonely true duplicate it outscored; the scores shown never rise down the list', async () => {
    const s = await fresh()
    const hub = 'Nightly build job stops with exit code 137 after the cache restore step on the runner'
    // The hub's near-copies: a template many reports share.
    const copies = Array.from({ length: 8 }, (_, i) => `${hub} ${pseudoWords(900 + i, 2, 'h')}`)
    const query = 'Checkout job stops with exit code 137 after the cache restore step on the runner, cart emptied'
    const duplicate = 'Cart emptied at checkout, the job stops'
    const ids = await submitAll(s, [...fillers(APP_GRAMS_MIN_DOCS), hub, ...copies, duplicate, query])
    const [duplicateId, queryId] = ids.slice(-2)
    const templated = new Set(ids.slice(APP_GRAMS_MIN_DOCS, APP_GRAMS_MIN_DOCS + 9))
    const port = processingOf(s.store, s.clock).port
    const list = await port.similar(queryId, 10)
    // By raw similarity the template's first report led (0.666 against the duplicate's 0.614).
    expect(list[0].id).toBe(duplicateId)
    expect(list.slice(1, 10).filter((c) => templated.has(c.id))).toHaveLength(9)
    for (let i = 1; i < list.length; i++) expect(list[i].score).toBeLessThanOrEqual(list[i - 1].score)
    for (const c of list) expect(c.score).toBeGreaterThanOrEqual(0)
  })

  test('a candidate whose title is in the query\'s words ranks above one that shares a little more of its body', async () => {
    const s = await fresh()
    const sameTitleWords = 'Totals row dropped by the ledger export\nSince Monday the file I download lacks its final summary line.'
    const closerBody = 'Quarterly file is incomplete\nWhen I export the quarterly ledger the totals are missing from the file.'
    const query = 'Ledger export drops the totals row\nWhen I export the quarterly ledger the totals row is missing from the file, every time.'
    const ids = await submitAll(s, [...fillers(APP_GRAMS_MIN_DOCS), sameTitleWords, closerBody, query])
    const [titled, closer, queryId] = ids.slice(-3)
    const list = await processingOf(s.store, s.clock).port.similar(queryId, 5)
    // By the words and characters of the whole texts the closer body leads (0.569 against 0.538 on SQLite);
    // the titles' agreement (title-cosine.ts) and the query's title said whole in the other report
    // (title-containment.ts: all its words there, against three of five in the closer body) put the same
    // summary first, by no more than those two nudges.
    expect(list.slice(0, 2).map((c) => c.id)).toEqual([titled, closer])
    expect(list[0].score - list[1].score).toBeLessThan(SIMILAR_TITLE_WEIGHT + SIMILAR_CONTAINMENT_WEIGHT)
  })

  test('candidates only the 13th-24th most distinctive words find are ranked, on PostgreSQL as on SQLite', async () => {
    const s = await fresh()
    const shared = 'invoice totals rounding currency mismatch ledger'
    // 14 words each shared with one other report only: the 12 rarest of the query's words find nothing else.
    const decoyWords = Array.from({ length: 14 }, (_, i) => pseudoWords(500 + i, 1, 'd'))
    const decoys = decoyWords.map((w, i) => `Decoy ${pseudoWords(600 + i, 2, 'e')}\n${w} ${pseudoWords(700 + i, 10, 'g')}`)
    const base = fillers(APP_GRAMS_MIN_DOCS).map((t, i) => (i < 2 ? `${t} ${shared}` : t))
    const target = 'Invoice totals rounding currency mismatch ledger in the yearly report'
    const query = `Invoice totals rounding currency mismatch ledger ${decoyWords.join(' ')}`
    const ids = await submitAll(s, [...base, ...decoys, target, query])
    const [targetId, queryId] = ids.slice(-2)
    const list = await processingOf(s.store, s.clock).port.similar(queryId, 5)
    expect(list[0].id).toBe(targetId)
  })
})

/**
 * Arrival (src/dedup/arrival-locality.ts): the same texts in two Apps; in one, each bug's two reports
 * arrived one after the other, in the other far apart. Only where duplicates came in bursts does a report
 * that arrived just before the query rank above an older one a little closer in words.
 */
describeEachDialect('similar order by arrival', (fresh) => {

  type Arrival = { locality: number; bonusAtMost: number; longAgoBlock: boolean; mergeBar: number | null; mergeWithin: number | null }
  async function order(bursty: boolean): Promise<{ ranked: string[]; arrival: Arrival; stored: number }> {
    const s = await fresh()
    await seedOrgApp(s)
    // One processing for the worker and the port, as one process has: its index sees every report it clusters.
    const processing = processingOf(s.store, s.clock)
    const worker = new Worker(s.store.jobs(PROCESSING_KINDS), processing.steps, s.clock, new Logger('silent'))
    const lifecycle = s.store.lifecycle
    const port = processing.port
    const submit = async (texts: string[]): Promise<string[]> => {
      const ids: string[] = []
      for (const text of texts) ids.push(await submitReceived(s, lifecycle, `s${String(++seq).padStart(5, '0')}`, text))
      while ((await worker.tick()) > 0) {}
      return ids
    }
    const texts = bursty ? PLACES.flatMap((_, i) => [firstReport(i), secondReport(i)]) : [...PLACES.map((_, i) => firstReport(i)), ...PLACES.map((_, i) => secondReport(i))]
    const [old, ...pairs] = await submit([OLD, ...texts])
    // Each bug's second report merged into its first by hand (where the clustering did not already).
    for (let i = 0; i < PLACES.length; i++) {
      const [a, b] = bursty ? [pairs[2 * i], pairs[2 * i + 1]] : [pairs[i], pairs[PLACES.length + i]]
      await port.merge(b, a).catch(() => {})
    }
    const [recent, paraphrase, query] = await submit([RECENT, PARAPHRASE, QUERY])
    const ranked = (await port.similar(query, 10)).map((c) => (c.id === old ? 'old' : c.id === recent ? 'recent' : c.id === paraphrase ? 'paraphrase' : c.id))
    // What GET /v1/apps/:id/triage shows, and what the clustering stored with its last verdict (every reader's source).
    const { arrival } = await port.triageState('a1')
    const [row] = await sql<{ arrival_locality: number }>(s, "SELECT arrival_locality FROM app_calibration WHERE app_id = 'a1'")
    return { ranked, arrival, stored: Number(row.arrival_locality) }
  }

  test('bursts: the report that arrived close first; arrival that says nothing: the words decide', async () => {
    const { ranked: scattered, arrival: none } = await order(false)
    expect(scattered.slice(0, 2)).toEqual(['old', 'recent'])
    // Sharing none of the query's words, the paraphrase is no candidate …
    expect(scattered).not.toContain('paraphrase')
    const { ranked: bursty, arrival, stored } = await order(true)
    expect(bursty.slice(0, 2)).toEqual(['recent', 'old'])
    // … unless it arrived right before the query in an App whose duplicates come in bursts.
    expect(bursty).toContain('paraphrase')
  })

  test('the triage state shows what arrival taught, as stored with the calibration: nothing for scattered arrivals', async () => {
    const scattered = await order(false)
    expect(scattered.arrival).toEqual({ locality: 0, bonusAtMost: 0, longAgoBlock: false, mergeBar: null, mergeWithin: null })
    expect(scattered.stored).toBe(0)
    const bursty = await order(true)
    expect(bursty.arrival.locality).toBeGreaterThan(0.3)
    expect(bursty.arrival.locality).toBeLessThanOrEqual(1)
    // Stored to a hundredth, shown as stored.
    expect(bursty.stored).toBe(bursty.arrival.locality)
    expect(Math.round(bursty.stored * 100)).toBeCloseTo(bursty.stored * 100, 9)
    expect(bursty.arrival.bonusAtMost).toBeCloseTo(RECENCY_WEIGHT * bursty.arrival.locality, 3)
    expect(bursty.arrival.longAgoBlock).toBe(bursty.arrival.locality >= LONG_AGO_LOCALITY)
    // Strong enough to corroborate merges: within the gap where the bonus is ARRIVAL_CORROBORATES.
    expect(bursty.arrival.mergeWithin).toBeCloseTo(corroboratingGap(bursty.arrival.locality)!, 3)
    expect(recencyBonus(bursty.arrival.mergeWithin!, bursty.arrival.locality)).toBeCloseTo(ARRIVAL_CORROBORATES, 3)
    expect(bursty.arrival.mergeBar).toBeGreaterThan(0.5)
  })
})
