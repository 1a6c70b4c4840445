/**
 * What dropping removed reports costs a clustering node's thread (cluster mode: every node that holds App
 * indexes reads the removal log, src/nodes/removal-follower.ts, and drops each page of 5,000 ids from its
 * indexes and text cache: clusterer.ts `forgetRemoved`). The clusterer as the PostgreSQL engine runs it
 * (no relink), APPS Apps' indexes built, then a removal of REMOVED ids of the first App (a retention sweep:
 * its INDEXED newest reports are indexed, the rest are older and in no index), fed as the follower feeds
 * it, page by page.
 *
 * Prints `REMOVAL_DROP {...}`: the removal's wall time, this thread's time on it, the longest single block
 * of the thread meanwhile (a probe yielding with setImmediate measures the gaps), and the index lookups
 * (AppIndex.has, counted) per removed id. Synthetic texts; the lookups, not the texts, are what is measured.
 *
 * Usage: bun bench/removal-drop.ts [APPS=50] [PER_APP=2000] [INDEXED=20000] [REMOVED=100000]
 */
import { AppIndex } from '../src/dedup/app-index'
import { createClusterer } from '../src/dedup/clusterer'
import type { ClusterRow } from '../src/dedup/cluster-repo'
import { DEFAULT_THRESHOLDS } from '../src/dedup/decide'
import { REMOVAL_PAGE } from '../src/nodes/removal-follower'

const APPS = Number(process.argv[2] ?? 50)
const PER_APP = Number(process.argv[3] ?? 2_000)
const INDEXED = Number(process.argv[4] ?? 20_000)
const REMOVED = Number(process.argv[5] ?? 100_000)

const WORDS = 'export invoice pdf spinner checkout cart login password reset email upload avatar crop settings profile dashboard chart filter search sort page button modal dialog save cancel delete archive timeout network offline sync token session cookie language theme dark font size scroll mobile tablet keyboard'.split(' ')
let seed = 7
const rand = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31)
const text = (n: number) => `${Array.from({ length: 14 }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ')} case ${n}`

const id = (app: number, n: number) => app.toString(16).padStart(6, '0') + n.toString(16).padStart(18, '0')
const appId = (app: number) => 'app' + app.toString(16).padStart(21, '0')
const rows = new Map<string, ClusterRow>()
const rowOf = (app: number, n: number): ClusterRow => ({
  id: id(app, n),
  org_id: 'org0000000000000000000001',
  app_id: appId(app),
  status: 'sanitized',
  version: 1,
  text: text(n),
  url: null,
  duplicate_of_id: null,
  created_at: n,
  component_target: null,
  console_logs: null,
  merge_locked: 0,
  redactions: '{}',
  rejected_lead_ids: null,
  suggested_lead_id: null,
  suggested_score: null,
  merge_score: null,
})

const core = createClusterer(
  {
    get: (key) => rows.get(key) ?? null,
    rootState: (key) => rows.get(key) ?? null,
    getCandidates: (ids) => new Map(ids.flatMap((key) => (rows.has(key) ? [[key, rows.get(key)!] as const] : []))),
    allOfApp: () => [],
  },
  DEFAULT_THRESHOLDS,
)

const builtAt = performance.now()
for (let a = 0; a < APPS; a++) {
  const n = a === 0 ? INDEXED : PER_APP
  const appRows: ClusterRow[] = []
  // The removed App's indexed reports are its newest: numbers REMOVED - INDEXED .. REMOVED - 1.
  for (let i = 0; i < n; i++) {
    const r = rowOf(a, a === 0 ? REMOVED - INDEXED + i : i)
    rows.set(r.id, r)
    appRows.push(r)
  }
  await core.prepare(appId(a), () => appRows)
}
const buildS = (performance.now() - builtAt) / 1000

let lookups = 0
const has = AppIndex.prototype.has
AppIndex.prototype.has = function (this: AppIndex, key: string) {
  lookups++
  return has.call(this, key)
}

const removed = Array.from({ length: REMOVED }, (_, n) => id(0, n))
// The probe: how long this thread went without yielding to it.
let probing = true
let longest = 0
const probe = (async () => {
  let last = performance.now()
  while (probing) {
    await new Promise((resolve) => setImmediate(resolve))
    const now = performance.now()
    longest = Math.max(longest, now - last)
    last = now
  }
})()

const sliced = (core as { forgetRemovedInSlices?: (ids: readonly string[], relink: boolean) => Promise<unknown> }).forgetRemovedInSlices
let threadMs = 0
const began = performance.now()
for (let from = 0; from < REMOVED; from += REMOVAL_PAGE) {
  const page = removed.slice(from, from + REMOVAL_PAGE)
  if (sliced) await sliced(page, false)
  else {
    const t = performance.now()
    core.forgetRemoved(page, false)
    threadMs += performance.now() - t
  }
  // The follower's next page is a read of the database: the thread is free meanwhile.
  await new Promise((resolve) => setImmediate(resolve))
}
const wallMs = performance.now() - began
probing = false
await probe
AppIndex.prototype.has = has

const left = core.indexedApps().reduce((sum, app) => sum + core.indexSize(app), 0)
const out = {
  apps: APPS,
  perApp: PER_APP,
  indexedOfRemovedApp: INDEXED,
  removed: REMOVED,
  buildS: Math.round(buildS * 10) / 10,
  wallMs: Math.round(wallMs),
  threadMs: sliced ? undefined : Math.round(threadMs),
  longestBlockMs: Math.round(longest * 10) / 10,
  lookups,
  lookupsPerId: Math.round((lookups / REMOVED) * 100) / 100,
  left,
  leftExpected: (APPS - 1) * PER_APP,
}
console.log(`REMOVAL_DROP ${JSON.stringify(out)}`)
