/**
 * Processing on both dialects, through the real services (worker/processing.ts: the `process` step, the
 * cluster service and its port, batch windows) with an injected clock: a report's way from `received` to
 * `awaiting_manual`/`queued` with its events and jobs, duplicates attached and counted, merge/unmerge by
 * hand, and a customer move racing the processing of the same report.
 */
import { expect, test } from 'bun:test'
import { describeEachDialect, processingOf, type FreshStore } from '../dialects'
import { type Lifecycle } from '../../src/lifecycle/lifecycle'
import { PROCESSING_KINDS } from '../../src/worker/processing'
import { Worker } from '../../src/worker/loop'
import { Logger } from '../../src/core/logger'
import { seedOrgApp, sql, submitReceived } from './store-fixtures'

// Near-verbatim repeats: a new App merges only on a very high score (docs/triage.md); looser paraphrases
// are suggested, not merged.
const PARAPHRASES = [
  'The checkout button does nothing when I click it on the payment page.',
  'Hi team, the checkout button does nothing when I click it on the payment page. Thanks!',
  'The checkout button does nothing when I click it on the payment page. Tried twice in Firefox.',
]
const UNRELATED = 'My invoice PDF downloads as an empty file from the billing settings.'

interface Row {
  id: string
  status: string
  version: number
  text: string
  duplicate_of_id: string | null
  duplicate_count: number
  merge_locked: number | boolean
  redactions: string | null
  theme: string | null
}

async function setup(s: FreshStore) {
  await seedOrgApp(s)
  const lifecycle = s.store.lifecycle
  // The processing kinds only, as the processing thread claims them (no agent step here).
  const jobs = s.store.jobs(PROCESSING_KINDS)
  const processing = processingOf(s.store, s.clock)
  const worker = new Worker(jobs, processing.steps, s.clock, new Logger('silent'))
  return { lifecycle, jobs, processing, worker }
}

let seq = 0
/** A stored report (as intake leaves it: `received`, `feedback.received` recorded, its `process` job queued). */
const submit = (s: FreshStore, lifecycle: Lifecycle, text: string): Promise<string> =>
  submitReceived(s, lifecycle, `r${String(++seq).padStart(4, '0')}`, text, { url: 'https://shop.example/checkout/payment', email: 'ana@example.com' })

const row = async (s: FreshStore, id: string): Promise<Row> =>
  (await sql<Row>(s, 'SELECT id, status, version, text, duplicate_of_id, duplicate_count, merge_locked, redactions, theme FROM feedback WHERE id = ?', [id]))[0]
const events = async (s: FreshStore) =>
  (await sql<{ type: string; data: string }>(s, 'SELECT type, data FROM events ORDER BY seq')).map((e) => ({ type: e.type, ...JSON.parse(e.data) }))
const jobsOf = async (s: FreshStore, id: string) => (await sql<{ kind: string }>(s, 'SELECT kind FROM jobs WHERE feedback_id = ? ORDER BY id', [id])).map((j) => j.kind)
const moves = (id: string, path: string[]) => path.slice(1).map((to, i) => ({ type: 'feedback.status_changed', feedbackId: id, from: path[i], to }))

describeEachDialect('processing', (fresh, dialect) => {
  test('manual mode: received → sanitizing → sanitized → awaiting_manual, sanitized text, events in order, the job gone', async () => {
    const s = await fresh()
    const { lifecycle, worker } = await setup(s)
    const id = await submit(s, lifecycle, 'The export breaks, write me at jo@example.com')
    expect(await worker.tick()).toBe(1)
    const r = await row(s, id)
    expect(r.status).toBe('awaiting_manual')
    expect(r.text).not.toContain('jo@example.com')
    expect(JSON.parse(r.redactions!)).toBeTruthy()
    expect(r.version).toBe(4) // three moves and the lead's summary
    expect(r.theme).toBeTruthy()
    expect(await events(s)).toEqual(moves(id, ['received', 'sanitizing', 'sanitized', 'awaiting_manual']))
    expect(await jobsOf(s, id)).toEqual([])
    expect(await sql(s, 'SELECT id FROM jobs')).toEqual([])
  })

  test('auto_pr mode: the lead goes to queued with its agent job in the same commit; batch mode waits for the window', async () => {
    const s = await fresh()
    const { lifecycle, worker } = await setup(s)
    await sql(s, "UPDATE apps SET processing_mode = 'auto_pr' WHERE id = 'a1'")
    const id = await submit(s, lifecycle, PARAPHRASES[0])
    expect(await worker.tick()).toBe(1)
    expect((await row(s, id)).status).toBe('queued')
    expect(await jobsOf(s, id)).toEqual(['agent'])
    expect((await events(s)).at(-1)).toEqual({ type: 'feedback.status_changed', feedbackId: id, from: 'sanitized', to: 'queued' })

    // Batch windows: a sanitized lead waits; one batch_release job per App; the release moves every waiting lead.
    await sql(s, "UPDATE apps SET processing_mode = 'manual', batch_enabled = ?, batch_window_hours = 2 WHERE id = 'a1'", [s.dialect === 'pg' ? true : 1])
    const w1 = await submit(s, lifecycle, UNRELATED)
    const w2 = await submit(s, lifecycle, 'The dark mode toggle resets after every reload of the settings page.')
    expect(await worker.tick()).toBe(2)
    expect((await row(s, w1)).status).toBe('sanitized')
    expect((await row(s, w2)).status).toBe('sanitized')
    const release = await sql<{ run_after: number }>(s, "SELECT run_after FROM jobs WHERE kind = 'batch_release' AND app_id = 'a1'")
    expect(release).toHaveLength(1)
    expect(release[0].run_after).toBe(s.clock.now() + 2 * 3600_000)
    s.clock.set(release[0].run_after)
    expect(await worker.tick()).toBe(1)
    expect((await row(s, w1)).status).toBe('awaiting_manual')
    expect((await row(s, w2)).status).toBe('awaiting_manual')
    expect(await sql(s, "SELECT id FROM jobs WHERE kind = 'batch_release'")).toEqual([])
  })

  test('duplicates: attached to the lead with the count of their moment; the lead summarised; the unrelated one alone', async () => {
    const s = await fresh()
    const { lifecycle, worker } = await setup(s)
    const lead = await submit(s, lifecycle, PARAPHRASES[0])
    await worker.tick()
    const dups = [await submit(s, lifecycle, PARAPHRASES[1]), await submit(s, lifecycle, PARAPHRASES[2])]
    const unrelated = await submit(s, lifecycle, UNRELATED)
    expect(await worker.tick()).toBe(3)
    const l = await row(s, lead)
    expect(l).toMatchObject({ status: 'awaiting_manual', duplicate_of_id: null, duplicate_count: 2 })
    for (const d of dups) expect(await row(s, d)).toMatchObject({ status: 'sanitized', duplicate_of_id: lead, theme: null })
    expect(await row(s, unrelated)).toMatchObject({ status: 'awaiting_manual', duplicate_of_id: null, duplicate_count: 0 })
    const attached = (await events(s)).filter((e) => e.type === 'feedback.duplicate_attached')
    expect(attached).toEqual([
      { type: 'feedback.duplicate_attached', feedbackId: dups[0], leadFeedbackId: lead, duplicateCount: 1, manual: false, automatic: true, score: expect.any(Number) },
      { type: 'feedback.duplicate_attached', feedbackId: dups[1], leadFeedbackId: lead, duplicateCount: 2, manual: false, automatic: true, score: expect.any(Number) },
    ])
    // Each automatic merge keeps its score and reason on the duplicate, the score its event carried.
    for (const [i, d] of dups.entries()) {
      const [why] = await sql<{ merge_score: number; merge_reason: string }>(s, 'SELECT merge_score, merge_reason FROM feedback WHERE id = ?', [d])
      expect(why.merge_score).toBe(attached[i].score)
      expect(why.merge_reason).toMatch(/similarity/)
    }
    const [{ consolidated_text }] = await sql<{ consolidated_text: string }>(s, 'SELECT consolidated_text FROM feedback WHERE id = ?', [lead])
    expect(consolidated_text.startsWith(PARAPHRASES[0])).toBe(true)
    expect(consolidated_text).toContain('Firefox')
    expect(await sql(s, 'SELECT id FROM jobs')).toEqual([])
    // The port ranks the same way: the duplicates first.
    const similar = await (await setupPort(s)).similar(lead, 3)
    expect(similar.slice(0, 2).map((c) => c.id).sort()).toEqual([...dups].sort())
  })

  // Cluster mode only: the embedded mode has one process with an index (every merge goes through it).
  test.skipIf(dialect !== 'pg')('a merge by hand on another node is seen by the processing index: a new report joins the lead, never the merged duplicate', async () => {
    const s = await fresh()
    const { lifecycle, worker } = await setup(s)
    const lead = await submit(s, lifecycle, PARAPHRASES[0])
    const invoice = await submit(s, lifecycle, UNRELATED)
    expect(await worker.tick()).toBe(2)
    expect(await row(s, invoice)).toMatchObject({ duplicate_of_id: null })
    // Another process (node) merges the invoice report into the checkout lead: the processing index did not take part.
    await (await setupPort(s)).merge(invoice, lead)
    const again = await submit(s, lifecycle, 'My invoice PDF downloads as an empty file from the billing settings page.')
    expect(await worker.tick()).toBe(1)
    const r = await row(s, again)
    // Joined to the merged report's lead: the index corrected the link it learned before the merge.
    expect(r.duplicate_of_id).toBe(lead)
    expect(r.status).not.toBe('received')
    expect(await sql(s, "SELECT id FROM jobs WHERE kind = 'process'")).toEqual([])
  })

  test('merge and unmerge through the cluster port: rows, events, counts; unmerge queues the process job in its commit', async () => {
    const s = await fresh()
    const { lifecycle, worker, processing } = await setup(s)
    const a = await submit(s, lifecycle, PARAPHRASES[0])
    const b = await submit(s, lifecycle, UNRELATED)
    await worker.tick()
    const before = (await events(s)).length
    await processing.port.merge(b, a)
    expect(await row(s, b)).toMatchObject({ duplicate_of_id: a, theme: null })
    expect(Boolean((await row(s, b)).merge_locked)).toBe(true)
    expect((await row(s, a)).duplicate_count).toBe(1)
    expect((await events(s)).slice(before)).toEqual([
      { type: 'feedback.duplicate_attached', feedbackId: b, leadFeedbackId: a, duplicateCount: 1, manual: true, automatic: false, score: null },
    ])
    expect((await processing.port.similar(a, 5)).find((c) => c.id === b)?.duplicateOfId).toBe(a)

    await processing.port.unmerge(b)
    expect(await row(s, b)).toMatchObject({ duplicate_of_id: null })
    expect(Boolean((await row(s, b)).merge_locked)).toBe(true)
    expect((await row(s, a)).duplicate_count).toBe(0)
    expect((await events(s)).at(-1)).toEqual({ type: 'feedback.unmerged', feedbackId: b, leadFeedbackId: a, duplicateCount: 0 })
    expect(await jobsOf(s, b)).toEqual(['process'])
    // The queued job names the report's App, read from the report (issue 38: the claim is fair across Apps).
    expect(await sql(s, "SELECT app_id FROM jobs WHERE kind = 'process' AND feedback_id = ?", [b])).toEqual([{ app_id: 'a1' }])
    expect((await processing.port.similar(a, 5)).find((c) => c.id === b)?.duplicateOfId).toBeNull()
    // Its job finds it a lead already moved on: nothing more happens, the job goes.
    expect(await worker.tick()).toBe(1)
    expect((await row(s, b)).status).toBe('awaiting_manual')
    expect(await jobsOf(s, b)).toEqual([])
  })

  test('a customer move racing the processing of the same report: one of them wins, never both', async () => {
    const s = await fresh()
    const { lifecycle, worker } = await setup(s)
    const ids: string[] = []
    for (let i = 0; i < 6; i++) ids.push(await submit(s, lifecycle, `Report ${i}: the upload of file ${i} stalls at ${i * 10} percent, mail jo${i}@example.com`))
    // Archive them while the worker processes them: each archive lands before, during or after the processing.
    const archived: boolean[] = []
    await Promise.all([
      worker.tick(),
      (async () => {
        for (const id of ids) {
          try {
            archived.push(await lifecycle.move(id, 'archived', { by: 'customer' }))
          } catch {
            archived.push(false)
          }
          await new Promise((r) => setImmediate(r))
        }
      })(),
    ])
    await worker.tick()
    const all = await events(s)
    for (const [i, id] of ids.entries()) {
      const r = await row(s, id)
      // Nothing raw is ever kept, whoever won.
      expect(r.text).not.toContain(`jo${i}@example.com`)
      expect(r.redactions).not.toBeNull()
      // The status events form one path from `received` to the row's status: no move on a stale row.
      const path = all.filter((e) => e.type === 'feedback.status_changed' && e.feedbackId === id)
      let at = 'received'
      for (const e of path) {
        expect(e.from).toBe(at)
        at = e.to
      }
      expect(r.status).toBe(at)
      expect(['archived', 'awaiting_manual']).toContain(r.status)
      expect(path.filter((e) => e.to === 'archived')).toHaveLength(archived[i] ? 1 : 0)
      expect(await jobsOf(s, id)).toEqual([])
    }
  })

  test('merges into one lead at once: each counted (the lead is locked before its duplicates are counted)', async () => {
    const s = await fresh()
    const { lifecycle, worker, processing } = await setup(s)
    const lead = await submit(s, lifecycle, PARAPHRASES[0])
    const others = [
      await submit(s, lifecycle, UNRELATED),
      await submit(s, lifecycle, 'The dark mode toggle resets after every reload of the settings page.'),
      await submit(s, lifecycle, 'Search results never show archived projects, even with the filter on.'),
    ]
    await worker.tick()
    await Promise.all(others.map((id) => processing.port.merge(id, lead)))
    expect((await row(s, lead)).duplicate_count).toBe(3)
    const counts = (await events(s)).filter((e) => e.type === 'feedback.duplicate_attached').map((e) => e.duplicateCount)
    expect(counts.sort()).toEqual([1, 2, 3])
  })

  test('a customer move made on the row as it was before processing loses cleanly (compare-and-set on its version)', async () => {
    const s = await fresh()
    const { lifecycle, worker } = await setup(s)
    const id = await submit(s, lifecycle, UNRELATED)
    const seen = await row(s, id)
    expect(await worker.tick()).toBe(1)
    expect(await lifecycle.move(id, 'archived', { by: 'customer', version: seen.version })).toBe(false)
    expect((await row(s, id)).status).toBe('awaiting_manual')
    expect((await events(s)).filter((e) => e.to === 'archived')).toEqual([])
  })

  if (dialect === 'pg') {
    test('a customer move committed while the report is planned wins: the plan is dropped, the report scrubbed where it stands', async () => {
      const s = await fresh()
      const { lifecycle, worker, processing } = await setup(s)
      const lead = await submit(s, lifecycle, PARAPHRASES[0])
      await worker.tick()
      const id = await submit(s, lifecycle, `${PARAPHRASES[1]} Mail jo@example.com`)
      // The customer's transaction holds the row (archived, not committed yet) while the worker reads the
      // committed row, plans it as a duplicate of the lead, and then waits for the row's lock.
      let release!: () => void
      const gate = new Promise<void>((r) => (release = r))
      const store = s.store
      const customer = store.dialect === 'pg' ? store.storage.tx(async (client, _db, onCommit) => {
        const moved = await store.sides.lifecycle.move({ client, onCommit }, id, 'archived', { by: 'customer' })
        await gate
        return moved
      }) : Promise.resolve(false)
      const ticking = worker.tick()
      await Bun.sleep(500)
      expect((await row(s, id)).status).toBe('received')
      release()
      expect(await customer).toBe(true)
      expect(await ticking).toBe(1)
      const r = await row(s, id)
      expect(r).toMatchObject({ status: 'archived', duplicate_of_id: null })
      expect(r.text).not.toContain('jo@example.com')
      expect(r.redactions).not.toBeNull()
      const path = (await events(s)).filter((e) => e.feedbackId === id)
      expect(path).toEqual(moves(id, ['received', 'archived']))
      expect((await row(s, lead)).duplicate_count).toBe(0)
      expect(await jobsOf(s, id)).toEqual([])
      // Out of the index: no ranking shows it as the lead's duplicate.
      expect((await processing.port.similar(lead, 5)).find((c) => c.id === id)).toBeUndefined()
    })
  }
})

/** A second handle on the same port (its own index, built from the database). */
async function setupPort(s: FreshStore) {
  const lifecycle = s.store.lifecycle
  return processingOf(s.store, s.clock).port
}
