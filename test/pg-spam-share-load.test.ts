/**
 * What sharing the spam marks (src/abuse/spam-share.ts) costs a node's thread when an Org's members keep
 * deciding, on a real PostgreSQL. Loading an App compares each of its marks by hand with each of its "not
 * spam" texts (up to 200 x 200 trigram cosines, ~150 ms for texts of 1,000 characters), on the thread that
 * serves requests, on every node, at every decision: a few Apps with full lists, decided on again and again
 * (a decision is one request), kept every node's thread loading. Loading now takes at most LOAD_SHARE of the
 * thread, and every App decided on is still loaded. One App's load (spam-ring.ts `replaceInSlices`) yields
 * too, in slices of LOAD_SLICE_MS: it held the thread ~150-250 ms at once, a request to the node waiting for
 * all of it; the ring it makes is the one `replace` makes.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Pool } from 'pg'
import { openPool } from '../src/db/pg/client-options'
import { eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { clusterEnv } from './cluster-env'
import { pgMissingReason, startPostgres, type PgServer } from './pg-server'
import { LOAD_SHARE, SpamShare } from '../src/abuse/spam-share'
import { createPgSpamMarks } from '../src/db/pg/spam-marks'
import { LIKE_SPAM_CHARS, SpamRing } from '../src/abuse/spam-ring'
import { Logger } from '../src/core/logger'
import { systemClock } from '../src/core/clock'

const skip = pgMissingReason()
if (skip) console.warn(`pg-spam-share-load: skipped: ${skip}`)

const APPS = 4
const FULL = 200

describe.skipIf(Boolean(skip))('loading the spam marks of Apps decided on again and again (real PostgreSQL)', () => {
  let pg: PgServer
  let server: TestServer
  let t: Tenant
  let pool: Pool
  const apps: string[] = []

  beforeAll(async () => {
    pg = await startPostgres()
    const env = await clusterEnv(await pg.createDatabase('spamshareload', { migrated: true }))
    server = await startTestServer(env)
    t = await seedTenant(server.admin, {}, 'Deciders')
    pool = openPool(env.FIXLOOP_DATABASE_URL, 2)
    apps.push(t.appId)
    for (let i = 1; i < APPS; i++) apps.push((await server.admin.createApp(t.orgId, { name: `Deciders ${i}` })).id)
    // Each App: 200 marks by hand and 200 "not spam" of the last hour, texts of 1,000 characters that do not
    // resemble one another (so every mark is compared with every cleared text and kept).
    const now = Date.now()
    const word = () => Math.random().toString(36).slice(2, 8)
    const text = () => Array.from({ length: 150 }, word).join(' ').slice(0, 1000)
    for (const [a, appId] of apps.entries()) {
      const ids: string[] = []
      const texts: string[] = []
      const marked: (number | null)[] = []
      const cleared: { id: string; at: number }[] = []
      for (let i = 0; i < 2 * FULL; i++) {
        const id = `${Math.floor(now / 1000 - 60).toString(16)}${a.toString(16).padStart(4, '0')}${i.toString(16).padStart(12, '0')}`
        ids.push(id)
        texts.push(text())
        marked.push(i < FULL ? now - 60_000 + i : null)
        if (i >= FULL) cleared.push({ id, at: now - 1_000 + i })
      }
      await pool.query(
        `INSERT INTO feedback (id, org_id, app_id, status, version, text, submitted_mode, redactions, created_at, updated_at, spam_marked_at, spam_reasons)
         SELECT r.id, $1, $2, CASE WHEN r.marked IS NULL THEN 'awaiting_manual' ELSE 'spam' END, 3, r.text, 'public', '{}', $3, $3, r.marked,
           CASE WHEN r.marked IS NULL THEN NULL ELSE '["marked_by_hand"]' END
         FROM unnest($4::text[], $5::text[], $6::bigint[]) AS r(id, text, marked)`,
        [t.orgId, appId, now - 60_000, ids, texts, marked],
      )
      await pool.query(
        `INSERT INTO spam_learning (app_id, updated_at, cleared) VALUES ($1, $2, $3)
         ON CONFLICT (app_id) DO UPDATE SET updated_at = EXCLUDED.updated_at, cleared = EXCLUDED.cleared`,
        [appId, now, JSON.stringify(cleared)],
      )
    }
  }, 120_000)

  afterAll(async () => {
    await server?.close().catch(() => {})
    await pool?.end()
    await pg?.stop()
  })

  test('a few seconds of decisions on every App, woken at each: loading takes at most its share of the thread, every App still loaded', async () => {
    const ring = new SpamRing(systemClock)
    let loadingMs = 0
    const loadedApps = new Set<string>()
    const share = new SpamShare({
      repo: createPgSpamMarks(pool),
      // As a node loads (spam-intake.ts marksOf): in slices, the thread's own time counted.
      load: async (appId, marks, cleared) => {
        const ms = await ring.replaceInSlices(appId, marks, cleared)
        loadingMs += ms
        loadedApps.add(appId)
        return ms
      },
      clock: systemClock,
      log: new Logger('silent'),
    })
    const RUN_MS = 4_000
    const began = performance.now()
    let decided = 0
    while (performance.now() - began < RUN_MS) {
      // A decision by hand on every App (its lesson's time moves), then the wake-up it announces.
      await pool.query('UPDATE spam_learning SET updated_at = $2::bigint + array_position($1::text[], app_id) WHERE app_id = ANY($1::text[])', [apps, Date.now() + decided++ * APPS])
      void share.wake()
      await Bun.sleep(25)
    }
    // What loading took of the time, to the end of the look under way when the decisions stopped.
    await share.wake()
    const elapsed = performance.now() - began
    const spent = loadingMs
    share.stop()
    console.log(`pg-spam-share-load: ${decided} rounds of decisions, loading ${Math.round(spent)} ms of ${Math.round(elapsed)} ms`)
    // Before: two thirds of the time and more (each look loaded every App again, back to back; the test's own
    // decisions came slower for it).
    expect(spent / elapsed).toBeLessThan(LOAD_SHARE + 0.1)
    expect(loadedApps.size).toBe(APPS)
    // Every mark kept (no cleared text resembles one), the ring full.
    for (const appId of apps) expect(ring.count(appId)).toBe(FULL)
  }, 60_000)

  test("one App's load yields to the thread in slices (a request to the node is answered meanwhile); the ring is the one a load at once makes", async () => {
    const marks = createPgSpamMarks(pool)
    const appId = apps[0]
    const window = Date.now() - 60 * 60_000
    const held = await marks.markedByHand(appId, window, FULL)
    const cleared = await marks.clearedSince(appId, window)
    expect([held.length, cleared.length]).toEqual([FULL, FULL])
    // A few "not spam" that are the marks' own texts, after them: those marks are left out, at once or in slices.
    const withCopies = [...cleared, ...held.slice(0, 5).map((m) => ({ at: m.at + 1, text: m.text }))]

    const sliced = new SpamRing(systemClock)
    let loaded = false
    let turns = 0
    let healthz: number | undefined
    let answeredLoading: boolean | undefined
    const share = new SpamShare({
      repo: { ...marks, decidedSince: async () => [{ appId, at: Date.now() }], clearedSince: async () => withCopies },
      load: (app, m, c) => {
        // The event loop's turns while the load runs, and a request to the node made as it begins.
        void (async () => {
          while (!loaded) {
            await new Promise((resolve) => setImmediate(resolve))
            turns++
          }
        })()
        void fetch(`${server.url}/healthz`).then((r) => {
          healthz = r.status
          answeredLoading = !loaded
        })
        return sliced.replaceInSlices(app, m, c).finally(() => (loaded = true))
      },
      clock: systemClock,
      log: new Logger('silent'),
    })
    const began = performance.now()
    await share.wake()
    const loadMs = performance.now() - began
    share.stop()
    await eventually(() => (healthz !== undefined ? true : undefined), 10_000)
    console.log(`pg-spam-share-load: one App's load ${Math.round(loadMs)} ms, ${turns} turns of the event loop meanwhile, /healthz answered ${answeredLoading ? 'during' : 'after'} it`)
    // Before: one block, no turn of the event loop until it was done (the request answered after it).
    expect(turns).toBeGreaterThanOrEqual(2)
    expect(healthz).toBe(200)
    expect(answeredLoading).toBe(true)

    // The same ring as a load at once: the same count, each text as like_spam as before.
    const whole = new SpamRing(systemClock)
    whole.replace(appId, held, withCopies)
    expect(sliced.count(appId)).toBe(FULL - 5)
    expect(sliced.count(appId)).toBe(whole.count(appId))
    for (const m of held) expect(sliced.likeness(appId, m.text.slice(0, LIKE_SPAM_CHARS))!.best).toBe(whole.likeness(appId, m.text.slice(0, LIKE_SPAM_CHARS))!.best)
  }, 60_000)
})
