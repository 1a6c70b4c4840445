/**
 * The durable worker: a real server and database, an injected ManualClock and `tick()` instead of
 * sleeping. Every status move is recorded by a TEMP trigger on the server's own connection, so the
 * tests see each step the worker commits, not only where it ends.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { openSqliteStore } from '../src/db/sqlite/store'
import { storeOf } from './dialects'
import { sqliteStorage } from '../src/db/sqlite/storage'
import { ManualClock } from '../src/core/clock'
import { Logger } from '../src/core/logger'
import { newId } from '../src/core/ids'
import { Worker, type JobStep } from '../src/worker/loop'
import { type JobRow, type JobsRepo } from '../src/lifecycle/jobs-repo'
import { Database } from 'bun:sqlite'
import { createClusterService } from '../src/dedup/service'
import { createBatchWindows } from '../src/worker/steps/release-batch'
import { createProcessFeedbackStep } from '../src/worker/steps/process-feedback'
import { call, eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { deferred, feedbackRow, forceStatus, jobsFor, openDataDb, patchStatus, submit, waitFor } from './helpers-lifecycle'
import { currentLeaseOwner } from '../src/worker/lease-owner'
import { sqliteOf } from './sqlite-of'
import { storageUnavailable } from '../src/db/unavailable'

const LEASE_MS = 30_000
const BASE_BACKOFF_MS = 1_000
const MAX_ATTEMPTS = 4

const clock = new ManualClock(Date.UTC(2025, 0, 15, 12, 0, 0))
let srv: TestServer
let t: Tenant

beforeAll(async () => {
  srv = await startTestServer(
    { FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' },
    { clock, worker: { autoStart: false, leaseMs: LEASE_MS, baseBackoffMs: BASE_BACKOFF_MS, maxBackoffMs: 60_000, maxAttempts: MAX_ATTEMPTS } },
  )
  t = await seedTenant(srv.admin)
})
afterAll(() => srv.close())

beforeEach(async () => {
  // Each test starts with no due work left over from the previous one. Recurring housekeeping jobs
  // (other kinds, e.g. upload GC) are removed so that tick() counts only what a test enqueued.
  clock.advance(24 * 3600_000)
  await srv.worker.tick()
  sqliteOf(srv.ctx).run("DELETE FROM jobs WHERE kind <> 'process'")
  expect(sqliteOf(srv.ctx).query('SELECT COUNT(*) AS n FROM jobs').get()).toEqual({ n: 0 })
})

/**
 * The report's recorded moves, in order (its `feedback.status_changed` events). received → sanitizing →
 * sanitized is two moves written by one statement (lifecycle.moveToSanitized), so a trigger on the row
 * would see one change; the events are what every reader sees.
 */
const moves = (id: string): string[] =>
  (sqliteOf(srv.ctx).query("SELECT data ->> '$.from' AS old, data ->> '$.to' AS new FROM events WHERE feedback_id = ? AND type = 'feedback.status_changed' ORDER BY seq").all(id) as {
    old: string
    new: string
  }[]).map((m) => `${m.old}→${m.new}`)

let submitted = 0
/** Each default text carries its own number, so near-duplicate clustering keeps them apart. */
async function submitOne(text = `Report ${++submitted}: the export button throws an error`, pub = t.pub): Promise<string> {
  const r = await submit(srv.url, pub, { text })
  expect(r.status).toBe(201)
  return r.body.id
}

const silent = new Logger('silent')

/** A second worker on the same database, as another process would run; `gate` holds each job open. */
function extraWorker(gate?: Promise<void>, entered?: JobRow[]): Worker {
  const store = openSqliteStore(sqliteStorage(sqliteOf(srv.ctx)), clock)
  const real = createProcessFeedbackStep(store.sides.processing, clock, {
    cluster: createClusterService(store.sides, clock),
    batches: createBatchWindows(store.processing, clock, store.lifecycle),
  })
  const step: JobStep = {
    async run(job) {
      entered?.push(job)
      if (gate) await gate
      return real.run(job)
    },
    onGiveUp: real.onGiveUp,
  }
  return new Worker(storeOf(sqliteStorage(sqliteOf(srv.ctx))).jobs(), { process: step }, clock, silent, { leaseMs: LEASE_MS })
}

describe('processing', () => {
  test('manual mode: received → sanitizing → sanitized → awaiting_manual, and the job is gone', async () => {
    const id = await submitOne()
    expect(feedbackRow(sqliteOf(srv.ctx), id).status).toBe('received')
    expect(jobsFor(sqliteOf(srv.ctx), id)).toHaveLength(1)
    expect(await srv.worker.tick()).toBe(1)
    expect(moves(id)).toEqual(['received→sanitizing', 'sanitizing→sanitized', 'sanitized→awaiting_manual'])
    const row = feedbackRow(sqliteOf(srv.ctx), id)
    expect(row.status).toBe('awaiting_manual')
    expect(row.processed_at).toBe(clock.now())
    expect(jobsFor(sqliteOf(srv.ctx), id)).toEqual([])
    const g = await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })
    expect(g.body.status).toBe('awaiting_manual')
    expect(g.body.statusReason).toBeNull()
    expect(g.body.processedAt).toBe(new Date(clock.now()).toISOString())
    // Nothing more to do.
    expect(await srv.worker.tick()).toBe(0)
  })

  test('auto_pr App: the item ends queued (waiting for a repository: no run starts)', async () => {
    const app = await srv.admin.createApp(t.orgId, { name: 'Auto App', processingMode: 'auto_pr' })
    const id = await submitOne(undefined, app.publicKey)
    // The process job, then the agent job it queued; with no repository connected the item waits.
    expect(await srv.worker.tick()).toBe(2)
    expect(moves(id)).toEqual(['received→sanitizing', 'sanitizing→sanitized', 'sanitized→queued'])
    expect(jobsFor(sqliteOf(srv.ctx), id)).toEqual([])
    // The full item says why it waits, and how to move it on.
    const g = await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })
    expect(g.body.status).toBe('queued')
    expect(g.body.statusReason).toContain('connect-repo')
  })

  test('an item archived before the worker runs stays archived, is still scrubbed, and its job is removed', async () => {
    const id = await submitOne(`Report ${++submitted}: export fails, write to archie@example.com`)
    expect((await patchStatus(srv.url, t.key, id, 'archived')).status).toBe(200)
    expect(jobsFor(sqliteOf(srv.ctx), id)).toHaveLength(1)
    expect(await srv.worker.tick()).toBe(1)
    const row = feedbackRow(sqliteOf(srv.ctx), id)
    expect(row.status).toBe('archived')
    expect(moves(id)).toEqual(['received→archived'])
    expect(jobsFor(sqliteOf(srv.ctx), id)).toEqual([])
    // No raw value is kept, even for a report that never went through its lifecycle.
    expect(String(row.text)).not.toContain('archie@example.com')
    expect(JSON.parse(String(row.redactions))).toEqual({ email: 1 })
  })

  test('sanitized values replace the raw ones: no raw email or secret left in the row or the jobs table', async () => {
    const email = 'jo.doe@example.com'
    const apiKey = 'sk_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4'
    const bearer = 'abcDEF123456ghiJKL789'
    const ghToken = 'ghp_' + 'x'.repeat(36)
    const urlPassword = 'hunter2secret'
    const r = await submit(srv.url, t.pub, {
      text: `Checkout broke. Mail ${email}, my key is ${apiKey}`,
      url: `https://shopper:${urlPassword}@shop.example.com/checkout`,
      userAgent: `TestAgent/1.0 (${apiKey})`,
      consoleLogs: [{ level: 'error', message: `fetch failed: Authorization: Bearer ${bearer}`, ts: 1 }],
      metadata: { contact: email, nested: { token: ghToken } },
      componentTarget: { name: 'PayButton', meta: { owner: email } },
    })
    expect(r.status).toBe(201)
    const id = r.body.id
    const secrets = [email, apiKey, bearer, ghToken, urlPassword]
    const rawRow = JSON.stringify(feedbackRow(sqliteOf(srv.ctx), id))
    // The check below can fail: before processing the raw values are there.
    expect(secrets.filter((s) => rawRow.includes(s))).toEqual(secrets)

    expect(await srv.worker.tick()).toBe(1)
    const row = feedbackRow(sqliteOf(srv.ctx), id)
    expect(row.status).toBe('awaiting_manual')
    const stored = JSON.stringify(row)
    expect(secrets.filter((s) => stored.includes(s))).toEqual([])
    const jobs = JSON.stringify(sqliteOf(srv.ctx).query('SELECT * FROM jobs').all())
    expect(secrets.filter((s) => jobs.includes(s))).toEqual([])
    expect(row.text).toContain('[REDACTED:email]')
    expect(row.text).toContain('[REDACTED:fixloop_key]')
    const counts = JSON.parse(row.redactions as string)
    expect(counts.email).toBeGreaterThanOrEqual(3)
    const g = await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })
    expect(secrets.filter((s) => g.text.includes(s))).toEqual([])
  })
})

describe('leases', () => {
  test('a job claimed by a worker that died is claimed again once its lease runs out, and completes', async () => {
    const id = await submitOne()
    // The "crashed" worker: claims the job, then never finishes it.
    const claimed = await storeOf(sqliteStorage(sqliteOf(srv.ctx))).jobs().claim(clock.now(), LEASE_MS, currentLeaseOwner())
    expect(claimed?.feedback_id).toBe(id)
    expect(claimed?.lease_until).toBe(clock.now() + LEASE_MS)

    expect(await srv.worker.tick()).toBe(0)
    clock.advance(LEASE_MS - 1)
    expect(await srv.worker.tick()).toBe(0)
    expect(feedbackRow(sqliteOf(srv.ctx), id).status).toBe('received')

    clock.advance(2)
    expect(await srv.worker.tick()).toBe(1)
    expect(feedbackRow(sqliteOf(srv.ctx), id).status).toBe('awaiting_manual')
    expect(jobsFor(sqliteOf(srv.ctx), id)).toEqual([])
  })

  test('crash mid-job: an item left in sanitizing, with its job still leased, is finished after the lease', async () => {
    const id = await submitOne('Call me on jo@example.com')
    await storeOf(sqliteStorage(sqliteOf(srv.ctx))).jobs().claim(clock.now(), LEASE_MS, currentLeaseOwner())
    forceStatus(sqliteOf(srv.ctx), id, 'sanitizing') // the dead worker's first commit
    clock.advance(LEASE_MS + 1)
    expect(await srv.worker.tick()).toBe(1)
    const row = feedbackRow(sqliteOf(srv.ctx), id)
    expect(row.status).toBe('awaiting_manual')
    expect(row.text).toBe('Call me on [REDACTED:email]')
    expect(jobsFor(sqliteOf(srv.ctx), id)).toEqual([])
  })

  test('crash recovery: items left in sanitizing or sanitized by a stopped process are finished on the next tick', async () => {
    const a = await submitOne('Reach me at a.person@example.org please')
    const b = await submitOne()
    forceStatus(sqliteOf(srv.ctx), a, 'sanitizing')
    forceStatus(sqliteOf(srv.ctx), b, 'sanitizing')
    forceStatus(sqliteOf(srv.ctx), b, 'sanitized')
    expect(await srv.worker.tick()).toBe(2)
    expect(feedbackRow(sqliteOf(srv.ctx), a).status).toBe('awaiting_manual')
    expect(feedbackRow(sqliteOf(srv.ctx), a).text).not.toContain('a.person@example.org')
    expect(feedbackRow(sqliteOf(srv.ctx), b).status).toBe('awaiting_manual')
    expect(moves(a).slice(-2)).toEqual(['sanitizing→sanitized', 'sanitized→awaiting_manual'])
    expect(moves(b).slice(-1)).toEqual(['sanitized→awaiting_manual'])
  })

  test('a job in flight is not claimed by a second worker', async () => {
    const id = await submitOne()
    const gate = deferred()
    const entered: JobRow[] = []
    const w1 = extraWorker(gate.promise, entered)
    const w2Entered: JobRow[] = []
    const w2 = extraWorker(undefined, w2Entered)
    const first = w1.tick()
    await waitFor(() => entered.length === 1)
    expect(entered[0].feedback_id).toBe(id)
    expect(await w2.tick()).toBe(0)
    expect(await srv.worker.tick()).toBe(0)
    expect(w2Entered).toEqual([])
    gate.resolve()
    expect(await first).toBe(1)
    expect(feedbackRow(sqliteOf(srv.ctx), id).status).toBe('awaiting_manual')
    expect(moves(id)).toEqual(['received→sanitizing', 'sanitizing→sanitized', 'sanitized→awaiting_manual'])
  })
})

describe('retries', () => {
  test('a failing job backs off exponentially and, after maxAttempts, marks its item failed', async () => {
    const id = await submitOne()
    // Poison data: the console logs column is not JSON, so the sanitizing step throws every time.
    sqliteOf(srv.ctx).query("UPDATE feedback SET console_logs = '{not json' WHERE id = ?").run(id)

    const delays: number[] = []
    for (let attempt = 1; attempt < MAX_ATTEMPTS; attempt++) {
      const before = clock.now()
      expect(await srv.worker.tick()).toBe(1)
      const [job] = jobsFor(sqliteOf(srv.ctx), id)
      expect(job.attempts).toBe(attempt)
      expect(job.lease_until).toBeNull()
      expect(job.last_error).toBeTruthy()
      delays.push(job.run_after - before)
      // Not due a millisecond early.
      clock.advance(job.run_after - before - 1)
      expect(await srv.worker.tick()).toBe(0)
      clock.advance(1)
    }
    expect(delays).toEqual([BASE_BACKOFF_MS, 2 * BASE_BACKOFF_MS, 4 * BASE_BACKOFF_MS])
    // Each attempt runs in one transaction: the failed attempt left the item where it was.
    expect(feedbackRow(sqliteOf(srv.ctx), id).status).toBe('received')

    expect(await srv.worker.tick()).toBe(1)
    expect(feedbackRow(sqliteOf(srv.ctx), id).status).toBe('failed')
    expect(jobsFor(sqliteOf(srv.ctx), id)).toEqual([])
    expect(moves(id)).toEqual(['received→failed'])
    // A failed item can be queued again by the customer.
    expect((await patchStatus(srv.url, t.key, id, 'queued')).status).toBe(200)
  })

  test('a job failing because the database has no room (SQLITE_FULL) or is away waits without spending its attempts, then runs', async () => {
    const errors = [
      Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }),
      Object.assign(new Error('could not extend file'), { code: '53100' }),
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
    ]
    let calls = 0
    const step: JobStep = {
      run() {
        calls++
        if (calls <= 3 * MAX_ATTEMPTS) throw errors[calls % errors.length]
      },
    }
    const w = new Worker(storeOf(sqliteStorage(sqliteOf(srv.ctx))).jobs(), { 'outage-probe': step }, clock, silent, { leaseMs: LEASE_MS, baseBackoffMs: BASE_BACKOFF_MS, maxBackoffMs: 60_000, maxAttempts: MAX_ATTEMPTS })
    sqliteOf(srv.ctx).query('INSERT INTO jobs (kind, run_after, created_at) VALUES (?, ?, ?)').run('outage-probe', clock.now(), clock.now())
    const job = () => sqliteOf(srv.ctx).query("SELECT attempts, run_after, lease_until FROM jobs WHERE kind = 'outage-probe'").get() as { attempts: number; run_after: number; lease_until: number | null } | null
    for (let i = 1; i <= 3 * MAX_ATTEMPTS; i++) {
      const before = clock.now()
      expect(await w.tick()).toBe(1)
      const row = job()!
      // Still there, its attempt given back, its lease released, due again after the error's Retry-After.
      expect(row).toMatchObject({ attempts: 0, lease_until: null })
      expect(row.run_after - before).toBe(Math.min(storageUnavailable(errors[i % errors.length])!, 5) * 1000)
      clock.advance(row.run_after - before)
    }
    // With the database back, the job runs and is done; it was never given up.
    expect(await w.tick()).toBe(1)
    expect(calls).toBe(3 * MAX_ATTEMPTS + 1)
    expect(job()).toBeNull()
  })

  test('a database that refuses every write (read-only here, as a full disk does): the loop passes once a poll, not in a spin', async () => {
    const file = sqliteOf(srv.ctx).filename
    const readOnly = new Database(file, { readonly: true })
    sqliteOf(srv.ctx).query('INSERT INTO jobs (kind, run_after, created_at) VALUES (?, ?, ?)').run('outage-probe', clock.now(), clock.now())
    // The real repo on a connection whose writes fail; counted, so the passes can be seen.
    const real = storeOf(sqliteStorage(readOnly)).jobs()
    let claims = 0
    const counted: JobsRepo = { ...real, claim: (...a) => (claims++, real.claim(...a)), claimBatch: (...a) => (claims++, real.claimBatch(...a)) }
    await expect(real.claim(clock.now(), LEASE_MS, 'probe')).rejects.toMatchObject({ code: 'SQLITE_READONLY' })
    const w = new Worker(counted, { 'outage-probe': { run() {} } }, clock, silent, { pollMs: 100, leaseMs: LEASE_MS })
    await w.start()
    await Bun.sleep(1000)
    await w.stop()
    readOnly.close()
    // About ten polls in a second (before: every pass went back at once, hundreds of claims a second).
    expect(claims).toBeGreaterThanOrEqual(3)
    expect(claims).toBeLessThanOrEqual(15)
    sqliteOf(srv.ctx).run("DELETE FROM jobs WHERE kind = 'outage-probe'")
  })

  test('a batch caught by the database going away, its outcomes not recordable either: one warn line, not an error line per job', async () => {
    const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })
    const lines: { level: string; msg: string }[] = []
    const log = new Logger('info', (text) => {
      for (const l of text.split('\n')) if (l) lines.push(JSON.parse(l))
    })
    const real = storeOf(sqliteStorage(sqliteOf(srv.ctx))).jobs()
    // The database went away mid-batch: the step fails, and so does writing down what became of each job.
    const jobs = { ...real, defer: async () => Promise.reject(refused()), retry: async () => Promise.reject(refused()) }
    const step: JobStep = { run() {}, batchSize: 20, runBatch: async (batch) => batch.map(() => refused()) }
    const w = new Worker(jobs, { 'outage-batch': step }, clock, log, { leaseMs: LEASE_MS, baseBackoffMs: BASE_BACKOFF_MS, maxBackoffMs: 60_000, maxAttempts: MAX_ATTEMPTS })
    for (let i = 0; i < 12; i++) sqliteOf(srv.ctx).query('INSERT INTO jobs (kind, run_after, created_at) VALUES (?, ?, ?)').run('outage-batch', clock.now(), clock.now())
    try {
      expect(await w.tick()).toBe(12)
      await new Promise((r) => setImmediate(r))
      expect(lines.filter((l) => l.level === 'error')).toEqual([])
      // One line for the twelve: their waits are kept to write at the next pass that can.
      expect(lines.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual(['job waits for the database'])
    } finally {
      sqliteOf(srv.ctx).query("DELETE FROM jobs WHERE kind = 'outage-batch'").run()
    }
  })

  test('a deferral that meets the outage too is written at the next pass, not left to the lease', async () => {
    let calls = 0
    const step: JobStep = {
      run() {
        calls++
        if (calls === 1) throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' })
      },
    }
    const real = storeOf(sqliteStorage(sqliteOf(srv.ctx))).jobs()
    // The deferral is a write: on a full disk it fails like the job did (once here, then there is room).
    let deferrals = 0
    const jobs = Object.assign(Object.create(real) as typeof real, {
      defer: async (id: number, runAfter: number) => {
        if (++deferrals === 1) throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' })
        return real.defer(id, runAfter)
      },
    })
    const w = new Worker(jobs, { 'outage-defer': step }, clock, silent, { leaseMs: LEASE_MS, baseBackoffMs: BASE_BACKOFF_MS, maxBackoffMs: 60_000, maxAttempts: MAX_ATTEMPTS })
    sqliteOf(srv.ctx).query('INSERT INTO jobs (kind, run_after, created_at) VALUES (?, ?, ?)').run('outage-defer', clock.now(), clock.now())
    const job = () => sqliteOf(srv.ctx).query("SELECT attempts, run_after, lease_until FROM jobs WHERE kind = 'outage-defer'").get() as { attempts: number; run_after: number; lease_until: number | null } | null
    const before = clock.now()
    expect(await w.tick()).toBe(1)
    expect(job()!.lease_until).not.toBeNull()
    // The next pass (the database back) defers it: lease released, attempt given back, due in 5 s.
    expect(await w.tick()).toBe(0)
    expect(job()).toMatchObject({ attempts: 0, lease_until: null, run_after: before + 5000 })
    clock.advance(5000)
    expect(await w.tick()).toBe(1)
    expect(calls).toBe(2)
    expect(job()).toBeNull()
  })

  test('backoff is capped at maxBackoffMs', () => {
    const w = new Worker(storeOf(sqliteStorage(sqliteOf(srv.ctx))).jobs(), {}, clock, silent, { baseBackoffMs: 1000, maxBackoffMs: 5000 })
    expect([1, 2, 3, 4, 5, 30].map((a) => w.backoffMs(a))).toEqual([1000, 2000, 4000, 5000, 5000, 5000])
  })

  test('a job of an unknown kind is retried and finally dropped, never run', async () => {
    sqliteOf(srv.ctx).query('INSERT INTO jobs (kind, run_after, created_at) VALUES (?, ?, ?)').run('no-such-kind', clock.now(), clock.now())
    for (let i = 1; i <= MAX_ATTEMPTS; i++) {
      expect(await srv.worker.tick()).toBe(1)
      clock.advance(60_000)
    }
    expect(sqliteOf(srv.ctx).query("SELECT COUNT(*) AS n FROM jobs WHERE kind = 'no-such-kind'").get()).toEqual({ n: 0 })
  })
})

describe('stop()', () => {
  test('stop() releases the lease of a job still held, so another worker takes it at once', async () => {
    const id = await submitOne()
    const gate = deferred()
    const entered: JobRow[] = []
    const w1 = extraWorker(gate.promise, entered)
    const running = w1.tick()
    await waitFor(() => entered.length === 1)
    expect(jobsFor(sqliteOf(srv.ctx), id)[0].lease_until).toBe(clock.now() + LEASE_MS)
    await w1.stop()
    expect(jobsFor(sqliteOf(srv.ctx), id)[0].lease_until).toBeNull()
    // No clock advance needed: the job is claimable now.
    expect(await srv.worker.tick()).toBe(1)
    expect(feedbackRow(sqliteOf(srv.ctx), id).status).toBe('awaiting_manual')
    gate.resolve()
    await running
    expect(moves(id)).toEqual(['received→sanitizing', 'sanitizing→sanitized', 'sanitized→awaiting_manual'])
  })

  test('stop() on a running loop finishes the job in hand and claims no more', async () => {
    const ids = [await submitOne(), await submitOne(), await submitOne()]
    const gate = deferred()
    const entered: JobRow[] = []
    const w = extraWorker(gate.promise, entered)
    w.start()
    await waitFor(() => entered.length === 1)
    const stopped = w.stop()
    gate.resolve()
    await stopped
    expect(entered).toHaveLength(1)
    const left = sqliteOf(srv.ctx).query('SELECT feedback_id, lease_until FROM jobs ORDER BY id').all() as { feedback_id: string; lease_until: number | null }[]
    expect(left).toHaveLength(2)
    expect(left.every((j) => j.lease_until === null && ids.includes(j.feedback_id))).toBe(true)
    expect(await srv.worker.tick()).toBe(2)
  })
})

describe('the loop (real clock)', () => {
  let live: TestServer
  let lt: Tenant
  beforeAll(async () => {
    // A one-minute poll: anything processed within ten seconds (a loaded machine) was woken, not polled.
    live = await startTestServer({}, { worker: { pollMs: 60_000 } })
    lt = await seedTenant(live.admin)
  })
  afterAll(() => live.close())

  test('a submission wakes the worker at once', async () => {
    const r = await submit(live.url, lt.pub, { text: 'Wake up' })
    await eventually(() => feedbackRow(sqliteOf(live.ctx), r.body.id).status === 'awaiting_manual', 10_000)
  })

  test('a customer move to queued wakes it too: the agent job runs at once (no repository: it waits, with a reason)', async () => {
    const r = await submit(live.url, lt.pub, { text: 'Search results ignore the selected language' })
    await eventually(() => feedbackRow(sqliteOf(live.ctx), r.body.id).status === 'awaiting_manual', 10_000)
    expect((await patchStatus(live.url, lt.key, r.body.id, 'queued')).status).toBe(200)
    // The agent job was claimed and finished (nothing to run without a repository) long before a poll.
    await eventually(() => jobsFor(sqliteOf(live.ctx), r.body.id).length === 0, 10_000)
    const item = (await call(live.url, 'GET', `/v1/feedback/${r.body.id}`, { auth: lt.key })).body
    expect(item.status).toBe('queued')
    expect(item.statusReason).toContain('connect-repo')
  })

  test('work written by another process is found by polling', async () => {
    const poller = await startTestServer({}, { worker: { pollMs: 100 } })
    try {
      const pt = await seedTenant(poller.admin)
      const other = openDataDb(poller.dataDir)
      const id = newId()
      const now = Date.now()
      other.transaction(() => {
        other
          .query("INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, created_at, updated_at) VALUES (?, ?, ?, 'received', 'from elsewhere x@example.com', 'public', ?, ?)")
          .run(id, pt.orgId, pt.appId, now, now)
        other.query("INSERT INTO jobs (kind, feedback_id, run_after, created_at) VALUES ('process', ?, ?, ?)").run(id, now, now)
      })()
      other.close()
      await eventually(() => feedbackRow(sqliteOf(poller.ctx), id).status === 'awaiting_manual', 15_000)
      expect(feedbackRow(sqliteOf(poller.ctx), id).text).toBe('from elsewhere [REDACTED:email]')
    } finally {
      await poller.close()
    }
  })
})
