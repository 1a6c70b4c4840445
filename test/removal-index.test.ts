/**
 * Reports removed outside clustering (a reporter's erasure, the report retention) leave the similarity
 * index too (src/modules/reporters/removal-news.ts, clusterer.ts `forgetRemoved`; found by the governance
 * attack). The index lives with the clustering worker and takes the clustering shortlist's texts and
 * cluster links from memory; the removal deleted rows in the database only, so the index kept an erased
 * report's sanitized text until a restart and linked the survivors to a lead that no longer exists: a new
 * report of the same bug was then ranked against the gone lead and stayed a lead of its own instead of
 * joining the survivor. Real SQLite file, the store's own removal, the cluster service as the worker runs it.
 */
import { afterEach, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import type { Database } from 'bun:sqlite'
import { insertApp, insertReport, openBenchDb } from '../bench/cluster'
import { systemClock } from '../src/core/clock'
import { Logger } from '../src/core/logger'
import { openSqliteStore } from '../src/db/sqlite/store'
import { sqliteStorage } from '../src/db/sqlite/storage'
import { createClusterService } from '../src/dedup/service'
import { removalsToldToClustering } from '../src/modules/reporters/removal-news'
import { localClusterPort } from '../src/worker/processing'
import { call, eventually, seedTenant, startTestServer } from './harness'

const ORG = '0'.repeat(23) + '1'
const APP = 'a'.repeat(24)
const TEXT = 'Exporting the invoice as PDF hangs forever with a spinner after clicking the download button in the billing page'
const opened: { sqlite: Database; dir: string }[] = []
afterEach(() => {
  for (const { sqlite, dir } of opened.splice(0)) {
    sqlite.close()
    rmSync(dir, { recursive: true, force: true })
  }
})

function setup() {
  const db = openBenchDb()
  opened.push(db)
  insertApp(db.sqlite, APP)
  const store = openSqliteStore(sqliteStorage(db.sqlite), systemClock)
  const cluster = createClusterService(store.sides, systemClock)
  const repo = removalsToldToClustering(store.reporters, localClusterPort(cluster), new Logger('silent'))
  let n = 0
  const add = (text: string) => {
    const id = (++n).toString(16).padStart(24, '0')
    insertReport(db.sqlite, APP, id, { text }, n)
    return { id, leadId: cluster.clusterReport(id).leadId }
  }
  return { ...db, cluster, repo, add }
}

test('an erased lead and duplicate leave the index; the next report of the bug joins the surviving duplicate', async () => {
  const { cluster, repo, add } = setup()
  const lead = add(TEXT)
  expect(lead.leadId).toBeNull()
  const first = add(TEXT)
  const second = add(TEXT)
  // The premise: both merged into the lead automatically.
  expect([first.leadId, second.leadId]).toEqual([lead.id, lead.id])
  expect(cluster.indexSize(APP)).toBe(3)

  expect((await repo.removeReports(ORG, [lead.id, first.id])).removed).toBe(2)
  // Only the survivor is left, a lead now (the database's hand-over, as the index has it too).
  expect(cluster.indexSize(APP)).toBe(1)
  const next = add(TEXT)
  expect(next.leadId).toBe(second.id)
})

test("removing a duplicate leaves its lead's cluster in the index as the database has it", async () => {
  const { cluster, repo, add } = setup()
  const lead = add(TEXT)
  const dup = add(TEXT)
  expect(dup.leadId).toBe(lead.id)
  expect((await repo.removeReports(ORG, [dup.id])).removed).toBe(1)
  expect(cluster.indexSize(APP)).toBe(1)
  expect(add(TEXT).leadId).toBe(lead.id)
  // Ids of no index (another Org's, gone already) change nothing.
  expect((await repo.removeReports(ORG, ['f'.repeat(24)])).removed).toBe(0)
  expect(cluster.indexSize(APP)).toBe(2)
})

test("a server's erasure reaches the processing thread's index (no error; the bug's next report joins the survivor)", async () => {
  const lines: string[] = []
  // No injected clock: the worker and its index run on the processing thread, reached by message.
  const server = await startTestServer({}, { log: new Logger('warn', (t) => void lines.push(t)) })
  try {
    const t = await seedTenant(server.admin)
    const submit = async (email: string) => {
      const r = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: TEXT, identity: { email } } })
      expect(r.status).toBe(201)
      return r.body.id as string
    }
    const leadOf = async (id: string) => {
      let row: { duplicateOfId: string | null; status: string } | undefined
      await eventually(async () => {
        row = (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body
        return row !== undefined && row.status !== 'received' && row.status !== 'sanitizing'
      }, 30_000)
      return row!.duplicateOfId
    }
    const lead = await submit('erin@example.com')
    expect(await leadOf(lead)).toBeNull()
    const first = await submit('erin@example.com')
    const second = await submit('dan@example.com')
    expect([await leadOf(first), await leadOf(second)]).toEqual([lead, lead])
    const erased = await call(server.url, 'POST', '/v1/reporters/erase', { auth: t.key, body: { email: 'erin@example.com' } })
    expect(erased.body).toEqual({ erased: 2 })
    const next = await submit('nina@example.com')
    expect(await leadOf(next)).toBe(second)
    await Bun.sleep(20)
    expect(lines.join('').includes('similarity index')).toBe(false)
  } finally {
    await server.close()
  }
}, 90_000)

test("a removal told while the App's index is being built (in slices) is not undone by the build", async () => {
  // Before: the building index was not among the indexes yet, so forgetRemoved skipped it, and the build
  // (its rows read before the removal) kept the removed report, its text too, until a restart.
  const { sqlite, cluster, repo } = setup()
  const ids: string[] = []
  for (let i = 1; i <= 600; i++) {
    const id = i.toString(16).padStart(24, '0')
    insertReport(sqlite, APP, id, { text: `${TEXT} on page ${i}` }, i)
    ids.push(id)
  }
  // The build reads its first slice at once and yields: the removal arrives while it is under way.
  const built = cluster.prepare(APP)
  expect((await repo.removeReports(ORG, [ids[0]])).removed).toBe(1)
  await built
  expect(cluster.indexSize(APP)).toBe(599)
})
