/**
 * Arrival locality (src/dedup/arrival-locality.ts): an App whose duplicates come in bursts learns it
 * from its own clusters, and only then do /similar and the suggestions favour reports that arrived
 * close; an App whose arrival order says nothing learns nothing, and its order is the texts' alone.
 */
import { describe, expect, test } from 'bun:test'
import { ArrivalLocality, LOCALITY_PRIOR_LINKS, NEAR_SHARE, nearByChance, RECENCY_HALF_GAP, RECENCY_WEIGHT, recencyBonus } from '../src/dedup/arrival-locality'
import { AppIndex } from '../src/dedup/app-index'
import { featuresOf, type ReportInput } from '../src/dedup/features'
import { DRAFT, DRAFT_AGAIN, DRAFT_LOOSE, firstReport, LOOSE, OLD, PLACES, QUERY, RECENT, secondReport } from './fixtures/arrival-texts'
import { arrivalBar } from '../src/dedup/decide'
import { withClusterApp, type ClusterApp } from './cluster-app'

const input = (id: string, text: string): ReportInput => ({ id, text, url: null, componentTarget: null, consoleLogs: null, duplicateOfId: null })

/** mulberry32, so every run builds the same texts and orders. */
function prng(seed: number): () => number {
  let a = seed
  return () => {
    a |= 0
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe('ArrivalLocality', () => {
  test('links that are near no more often than chance teach nothing', () => {
    const l = new ArrivalLocality()
    const rand = prng(3)
    for (let i = 0; i < 400; i++) l.note(rand() < NEAR_SHARE, NEAR_SHARE, 1)
    expect(l.linkCount).toBe(400)
    expect(l.strength).toBe(0)
  })

  test('links that are mostly near give a strength that grows with their number', () => {
    const l = new ArrivalLocality()
    for (let i = 0; i < 10; i++) l.note(i % 5 !== 0, NEAR_SHARE, 1)
    const early = l.strength
    for (let i = 0; i < 190; i++) l.note(i % 5 !== 0, NEAR_SHARE, 1)
    expect(early).toBeGreaterThan(0)
    expect(l.strength).toBeGreaterThan(early)
    // 80 % near against 5 % by chance, less the noise margin, shrunk by 200 / (200 + prior).
    expect(l.strength).toBeGreaterThan(0.7 * (200 / (200 + LOCALITY_PRIOR_LINKS)))
    expect(l.strength).toBeLessThanOrEqual(1)
  })

  test('a link taken back (an unmerge) takes its note back', () => {
    const l = new ArrivalLocality()
    for (let i = 0; i < 30; i++) l.note(true, 0.1, 1)
    const before = l.strength
    l.note(true, 0.1, 1)
    l.note(true, 0.1, -1)
    expect(l.strength).toBeCloseTo(before, 12)
    for (let i = 0; i < 30; i++) l.note(true, 0.1, -1)
    expect(l.linkCount).toBe(0)
    expect(l.strength).toBe(0)
  })

  test('the chance of a near member grows with the cluster: a big cluster near the report says little', () => {
    expect(nearByChance(1)).toBeCloseTo(NEAR_SHARE, 12)
    expect(nearByChance(10)).toBeGreaterThan(nearByChance(2))
    const l = new ArrivalLocality()
    // Links to clusters of 60 members, near as often as chance makes them (95 %): nothing learnt.
    const chance = nearByChance(60)
    expect(chance).toBeGreaterThan(0.95)
    for (let i = 0; i < 100; i++) l.note(i < 95, chance, 1)
    expect(l.strength).toBe(0)
  })
})

describe('recencyBonus', () => {
  test('nothing without locality; the most at no gap; half at the half gap; falling with the gap', () => {
    expect(recencyBonus(0, 0)).toBe(0)
    expect(recencyBonus(-1, 1)).toBe(0)
    expect(recencyBonus(0, 1)).toBeCloseTo(RECENCY_WEIGHT, 12)
    expect(recencyBonus(RECENCY_HALF_GAP, 1)).toBeCloseTo(RECENCY_WEIGHT / 2, 12)
    expect(recencyBonus(0.01, 0.5)).toBeGreaterThan(recencyBonus(0.2, 0.5))
    expect(recencyBonus(0.01, 0.5)).toBeCloseTo(recencyBonus(0.01, 1) / 2, 12)
  })
})

describe('AppIndex learns its locality from its links', () => {
  const topics = ['invoice', 'upload', 'calendar', 'search', 'avatar', 'export', 'login', 'payment', 'sidebar', 'printing']
  const text = (k: number, variant: number) => `${topics[k % topics.length]} ${k} problem ${variant}\nThe ${topics[(k * 3) % topics.length]} view of item ${k} breaks in case ${variant}.`
  /** 40 bugs of 3 reports each, indexed in `order` (each report after its bug's first joins it). */
  function build(order: { bug: number; n: number }[]): AppIndex {
    const index = new AppIndex()
    const lead = new Map<number, string>()
    for (const { bug, n } of order) {
      const id = `r${bug}-${n}`
      const leadId = lead.get(bug) ?? null
      if (!leadId) lead.set(bug, id)
      index.add(featuresOf(input(id, text(bug, n))), leadId)
    }
    return index
  }
  const reports = Array.from({ length: 40 }, (_, bug) => [0, 1, 2].map((n) => ({ bug, n }))).flat()

  test('bugs reported in bursts: a strong locality', () => {
    const index = build(reports)
    expect(index.arrivalLocality).toBeGreaterThan(0.5)
  })

  test('the same reports shuffled (an import, a backlog sent at once): no locality', () => {
    const rand = prng(11)
    const shuffled = [...reports].sort(() => rand() - 0.5)
    // A bug's first report in the shuffle leads it.
    const index = build(shuffled)
    expect(index.arrivalLocality).toBe(0)
  })

  test('unmerging takes a link back; indexing a report again does not count its link twice', () => {
    const index = build(reports)
    const before = index.arrivalLocality
    index.setLead('r5-1', null)
    index.setLead('r5-2', null)
    expect(index.arrivalLocality).not.toBeCloseTo(before, 6)
    // Merged again: two near links again (their chance counted at today's size, so within a hair).
    index.setLead('r5-1', 'r5-0')
    index.setLead('r5-2', 'r5-0')
    expect(Math.abs(index.arrivalLocality - before)).toBeLessThan(0.002)
    // Indexed again (clustered anew): its slot moves to the end, its arrival stays, so its link is as near
    // as it was, counted once.
    const gapBefore = index.arrivalGap('r0-1', 'r0-0')
    index.add(featuresOf(input('r0-1', text(0, 1))), 'r0-0')
    expect(index.arrivalGap('r0-1', 'r0-0')).toBeCloseTo(gapBefore, 12)
    expect(Math.abs(index.arrivalLocality - before)).toBeLessThan(0.002)
    // A new report arrives after every other, whatever was indexed again.
    expect(index.arrivalGap('new', 'r0-1')).toBeCloseTo(119 / 120, 12)
  })

  test('the gap is a share of the App’s indexed reports; a report not indexed yet arrives now', () => {
    const index = build(reports)
    expect(index.arrivalGap('r0-0', 'r0-1')).toBeCloseTo(1 / 120, 12)
    expect(index.arrivalGap('r0-1', 'r0-0')).toBeCloseTo(1 / 120, 12)
    expect(index.arrivalGap('new', 'r39-2')).toBeCloseTo(1 / 120, 12)
    expect(index.arrivalGap('new', 'r0-0')).toBeCloseTo(1, 12)
    expect(index.arrivalGap('r0-0', 'missing')).toBe(-1)
  })
})

describe('through the cluster service (a real SQLite file)', () => {

  /**
   * One App: OLD first, then 30 bugs reported twice each (`bursty`: each bug's two reports one after the
   * other; else all first reports, then all second ones), each pair merged; then RECENT, QUERY and LOOSE.
   * The same texts either way; only the arrival of the 30 pairs differs.
   */
  type Ids = { old: string; recent: string; query: string; loose: string; leadOf: (bug: number) => string; add: ClusterApp['add'] }
  function app(bursty: boolean, fn: (ids: Ids, cluster: ClusterApp['cluster'], appId: string) => void): Promise<void> {
    return withClusterApp(({ cluster, appId, store, add }) => {
      const leads = new Map<number, string>()
      const pair = (bug: number, lead: string, text: string): void => {
        leads.set(bug, lead)
        const b = add(text)
        if (b.verdict.leadId !== lead) cluster.merge(b.id, lead)
      }
      const old = add(OLD).id
      if (bursty) {
        for (let i = 0; i < 30; i++) pair(i, add(firstReport(i)).id, secondReport(i))
      } else {
        const firsts = PLACES.map((_, i) => add(firstReport(i)).id)
        for (let i = 0; i < 30; i++) pair(i, firsts[i], secondReport(i))
      }
      const recent = add(RECENT).id
      const query = add(QUERY).id
      // LOOSE is clustered (and asked about) by the caller.
      const loose = store(LOOSE)
      fn({ old, recent, query, loose, leadOf: (bug) => leads.get(bug)!, add }, cluster, appId)
    })
  }

  test('/similar: where duplicates come in bursts, a report that arrived close ranks above an older one a little closer in words', async () => {
    let scattered: string[] = []
    await app(false, ({ old, recent, query }, cluster) => {
      scattered = cluster.similar(query, 2).map((c) => (c.id === old ? 'old' : c.id === recent ? 'recent' : c.id))
    })
    let bursty: string[] = []
    await app(true, ({ old, recent, query }, cluster) => {
      bursty = cluster.similar(query, 2).map((c) => (c.id === old ? 'old' : c.id === recent ? 'recent' : c.id))
    })
    // The words alone put OLD first (the App whose arrival order says nothing) …
    expect(scattered).toEqual(['old', 'recent'])
    // … and where the App's duplicates arrived together, RECENT, which arrived just before the query.
    expect(bursty).toEqual(['recent', 'old'])
  })

  test('a suggestion: a lead that arrived close is offered a little below the floor, and its reason says so', async () => {
    await app(false, ({ loose }, cluster, appId) => {
      const v = cluster.clusterReport(loose) as { leadId: string | null; reason: string; suggestion?: { score: number } | null }
      expect(v.leadId).toBeNull()
      expect(v.suggestion ?? null).toBeNull()
      expect(v.reason).toMatch(/too low/)
      expect(cluster.thresholdsFor(appId).suggest).toBeGreaterThan(0.3)
    })
    await app(true, ({ loose, recent }, cluster, appId) => {
      const v = cluster.clusterReport(loose) as { leadId: string | null; reason: string; suggestion?: { leadId: string; score: number; reason: string } | null }
      expect(v.leadId).toBeNull()
      const floor = cluster.thresholdsFor(appId).suggest
      expect(v.suggestion).toBeDefined()
      // Below the App's floor on its score, offered for its arrival: the ledger bug's lead RECENT, which QUERY
      // (arrived just before LOOSE) joined on arrival (OLD, the other telling, was last reported long ago).
      expect(v.suggestion!.leadId).toBe(recent)
      expect(v.suggestion!.score).toBeLessThan(floor)
      expect(v.suggestion!.reason).toMatch(/arrived close to it \(\+0\.\d\d\)$/)
    })
  })

  test('arrival corroborates a merge between the arrival bar and the merge bar, only where duplicates come in bursts', async () => {
    await app(true, ({ add }, cluster, appId) => {
      const bars = cluster.thresholdsFor(appId)
      const lead = add(DRAFT).id
      const again = add(DRAFT_AGAIN).verdict
      // Not sure enough on its words alone: above the arrival bar, under the merge bar …
      expect(again.score!).toBeGreaterThanOrEqual(arrivalBar(bars.moderate, bars.strong))
      expect(again.score!).toBeLessThan(bars.strong)
      // … and merged because it arrived right after its lead, which its reason says.
      expect(again.leadId).toBe(lead)
      expect(again.reason).toMatch(/^similarity 0\.\d\d ≥ 0\.\d\d, arrived close to it \(\+0\.\d\d\); alike texts; no veto$/)
      // A looser telling, under the arrival bar, is only suggested, however close it arrived.
      const loose = add(DRAFT_LOOSE).verdict
      expect(loose.leadId).toBeNull()
      expect(loose.suggestion?.leadId).toBe(lead)
      expect(loose.suggestion!.score).toBeLessThan(arrivalBar(bars.moderate, bars.strong))
    })
    // Where the App's arrival order says nothing, the same report is suggested, not merged.
    await app(false, ({ add }) => {
      const lead = add(DRAFT).id
      const again = add(DRAFT_AGAIN).verdict
      expect(again.leadId).toBeNull()
      expect(again.suggestion?.leadId).toBe(lead)
      expect(again.suggestion!.reason).not.toMatch(/arrived close/)
    })
  })

  test('a bug reported again long after its last report is suggested, not merged, where duplicates come in bursts', async () => {
    // Bug 0 reported again at the end: in the bursty App its two reports came first (last reported ~95 % of
    // the App's reports back); bug 29's last report is recent.
    await app(true, ({ add, leadOf }) => {
      const again = add(firstReport(0)).verdict
      expect(again.leadId).toBeNull()
      expect(again.suggestion?.leadId).toBe(leadOf(0))
      expect(again.suggestion?.reason).toMatch(/; not merged: its bug was last reported long ago \(9\d % of the App's reports back\)/)
      const recent = add(firstReport(29)).verdict
      expect(recent.leadId).toBe(leadOf(29))
    })
    // Where arrival says nothing, age says nothing either: both merge.
    await app(false, ({ add, leadOf }) => {
      expect(add(firstReport(0)).verdict.leadId).toBe(leadOf(0))
      expect(add(firstReport(29)).verdict.leadId).toBe(leadOf(29))
    })
  })
})
