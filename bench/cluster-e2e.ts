/**
 * Clustering quality through the compiled binary, as an outside client measures it: each project of the
 * real development corpora (bench/dup-corpora/SOURCE.md) is submitted over HTTP to `fixloop serve` on
 * loopback, one report after another in the arrival order `bun bench/cluster.ts` calls order 1. Then
 * every report is read back (`duplicateOfId`, `suggestedDuplicateOf`) and `/similar?limit=10` is asked for
 * every report that has a true duplicate. The figures should equal the in-process bench's for that order:
 * a gap would be the HTTP path, the sanitizer in the processing thread or the batching changing verdicts.
 *
 *   bun run build && bun bench/cluster-e2e.ts                 # every project of bench/out/dup-corpora.json
 *   E2E_APPS=eclipse bun bench/cluster-e2e.ts --corpus=PATH   # one project
 *   E2E_SERIAL=1 …                                             # each report sent once the one before is processed
 *   E2E_COMPARE=0 …                                            # without the in-process run
 *   E2E_PG=1 …                                                 # fixloop on PostgreSQL (a throw-away server, redis, s3rver)
 *   E2E_ORDER=filing …                                         # the reports in their trackers' filing order (duplicates in bursts)
 *   … --user-agent-lines / --log-lines                         # raw tracker text written back, as bench/cluster.ts does
 *
 * It waits for every report's `processedAt` (docs/api.md: set with the verdict; E2E_WAIT=status: for
 * its status to pass `sanitizing`), then reads the verdicts once, as a client would, and checks them
 * against the database after the /similar calls.
 *
 * Bounded: at most E2E_MAX_REPORTS reports per project (default: all), and each wait gives up after
 * E2E_WAIT_S seconds (default 600).
 */
import { Database } from 'bun:sqlite'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Corpus, CorpusApp } from '../test/fixtures/corpus'
import { prng } from '../test/sanitize-fixtures'
import { dupCorpusPath, inFilingOrder, measureQuality, withLogLines, withUserAgentLines } from './cluster'
import { cliAsync, freePort, startClusterServices, waitReady, type ClusterServices } from './cluster-services'
import { openPool } from '../src/db/pg/client-options'

const BIN = process.env.FIXLOOP_BIN ?? join(import.meta.dir, '..', 'dist', 'fixloop')
const MAX_REPORTS = Number(process.env.E2E_MAX_REPORTS ?? Infinity)
const WAIT_MS = Number(process.env.E2E_WAIT_S ?? 600) * 1000
/** E2E_SERIAL=1: each report is submitted once the one before it was processed (no batches). */
const SERIAL = process.env.E2E_SERIAL === '1'
/** E2E_ORDER=filing: the reports arrive in their trackers' filing order (bench/cluster.ts `inFilingOrder`), not order 1. */
const FILING = process.env.E2E_ORDER === 'filing'
/**
 * E2E_WAIT=status: a report counts as processed once its status is past `received` and `sanitizing`
 * (what a client of the spec alone would wait for), instead of once it has `processedAt`.
 */
const BY_STATUS = process.env.E2E_WAIT === 'status'
const done = (i: { processedAt: string | null; status: string }) => (BY_STATUS ? i.status !== 'received' && i.status !== 'sanitizing' : i.processedAt !== null)

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + WAIT_MS
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`)
    await Bun.sleep(250)
  }
}

interface Item {
  status: string
  duplicateOfId: string | null
  processedAt: string | null
  suggestedDuplicateOf?: { id: string; score: number } | null
}

/** Where fixloop stores: its data directory's SQLite file, or (E2E_PG=1) a fresh PostgreSQL database. */
interface Storage {
  env: Record<string, string>
  /** A report's stored lead and suggested lead, read straight from the database. */
  stored(id: string): Promise<{ lead: string | null; suggested: string | null }>
  close(): Promise<void>
}

const VERDICT_COLUMNS = 'SELECT duplicate_of_id AS lead, suggested_lead_id AS suggested FROM feedback WHERE id = '

async function storageFor(dataDir: string, services: ClusterServices | null, name: string): Promise<Storage> {
  if (!services) {
    let db: Database | null = null
    return {
      env: {},
      async stored(id) {
        db ??= new Database(join(dataDir, 'fixloop.db'), { readonly: true })
        return db.query(VERDICT_COLUMNS + '?').get(id) as { lead: string | null; suggested: string | null }
      },
      async close() {
        db?.close()
      },
    }
  }
  const url = await services.pg.createDatabase(`e2e_${name.replace(/\W/g, '_')}`)
  const pool = openPool(url, 2)
  return {
    env: {
      FIXLOOP_DATABASE_URL: url,
      FIXLOOP_REDIS_URL: services.redis.url,
      FIXLOOP_MASTER_KEY: 'ab'.repeat(32),
      FIXLOOP_S3_ENDPOINT: `http://127.0.0.1:${services.s3Port}`,
      FIXLOOP_S3_BUCKET: 'feedback',
      FIXLOOP_S3_ACCESS_KEY: 'S3RVER',
      FIXLOOP_S3_SECRET_KEY: 'S3RVER',
    },
    async stored(id) {
      return (await pool.query(VERDICT_COLUMNS + '$1', [id])).rows[0] as { lead: string | null; suggested: string | null }
    },
    close: () => pool.end(),
  }
}

async function measureProject(app: CorpusApp, services: ClusterServices | null): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'fixloop-e2e-'))
  const storage = await storageFor(dataDir, services, app.id)
  const cli = (args: string[]) => cliAsync(BIN, args, storage.env, dataDir)
  const org = (await cli(['org', 'create', '--name', 'Bench'])) as { id: string }
  const created = (await cli(['app', 'create', '--org', org.id, '--name', app.id])) as { id: string; publicKey: string }
  const { key } = (await cli(['key', 'create', '--org', org.id])) as { key: string }
  const port = await freePort()
  const server = Bun.spawn([BIN, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir], {
    env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn', FIXLOOP_RATE_LIMIT_MULTIPLIER: '100000', ...storage.env },
    // stdout holds the first-run admin link: not printed here.
    stdout: 'ignore',
    stderr: 'inherit',
  })
  const base = `http://127.0.0.1:${port}`
  const sk = { authorization: `Bearer ${key}` }
  try {
    await waitReady(base, server)
    // bench/cluster.ts's order 1 for a corpus of this one App, or (E2E_ORDER=filing) the trackers' filing order.
    const rand = prng(1)
    const order = (FILING ? inFilingOrder(app.reports) : [...app.reports].sort(() => rand() - 0.5)).slice(0, MAX_REPORTS)
    const ids: string[] = []
    const read = async (id: string) => (await (await fetch(`${base}/v1/feedback/${id}`, { headers: sk })).json()) as Item
    const t0 = performance.now()
    for (const r of order) {
      const res = await fetch(`${base}/v1/feedback`, {
        method: 'POST',
        headers: { authorization: `Bearer ${created.publicKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ text: r.text }),
      })
      if (res.status !== 201) throw new Error(`submit: ${res.status} ${await res.text()}`)
      ids.push(((await res.json()) as { id: string }).id)
      if (SERIAL) {
        // One at a time, as the in-process bench clusters: the next report goes in once this one is processed.
        const id = ids[ids.length - 1]
        const deadline = Date.now() + WAIT_MS
        while (!done(await read(id))) {
          if (Date.now() > deadline) throw new Error(`report ${ids.length} not processed after ${WAIT_MS / 1000} s`)
          await Bun.sleep(2)
        }
      }
    }
    const submitS = (performance.now() - t0) / 1000
    await until('processing', async () => done(await read(ids[ids.length - 1])))
    let items = await Promise.all(ids.map(read))
    await until('every report processed', async () => {
      items = await Promise.all(ids.map(read))
      return items.every(done)
    })
    const doneS = (performance.now() - t0) / 1000
    const group = new Map(ids.map((id, i) => [id, order[i].group]))
    // The same measures as measureQuality (bench/cluster.ts).
    let wrong = 0
    let withEarlier = 0
    let hit = 0
    let suggested = 0
    let suggestedRight = 0
    const seen = new Set<string>()
    const root = new Map<string, string>()
    items.forEach((it, i) => {
      const g = order[i].group
      root.set(ids[i], it.duplicateOfId ?? ids[i])
      if (it.duplicateOfId && group.get(it.duplicateOfId) !== g) wrong++
      const lead = it.duplicateOfId ?? it.suggestedDuplicateOf?.id ?? null
      const right = lead !== null && group.get(lead) === g
      if (seen.has(g)) {
        withEarlier++
        if (right) hit++
      }
      if (it.suggestedDuplicateOf) {
        suggested++
        if (right) suggestedRight++
      }
      seen.add(g)
    })
    let tp = 0
    let fp = 0
    let fn = 0
    for (let i = 0; i < ids.length; i++) {
      for (let j = i + 1; j < ids.length; j++) {
        const same = order[i].group === order[j].group
        const merged = root.get(ids[i]) === root.get(ids[j])
        if (merged && same) tp++
        else if (merged) fp++
        else if (same) fn++
      }
    }
    const hits = { 1: 0, 5: 0, 10: 0 }
    let eligible = 0
    for (let i = 0; i < ids.length; i++) {
      if (!order.some((o, j) => j !== i && o.group === order[i].group)) continue
      eligible++
      const res = await fetch(`${base}/v1/feedback/${ids[i]}/similar?limit=10`, { headers: sk })
      const list = ((await res.json()) as { data: { id: string }[] }).data
      const at = list.findIndex((c) => group.get(c.id) === order[i].group)
      for (const k of [1, 5, 10] as const) if (at !== -1 && at < k) hits[k]++
    }
    const f = (x: number) => x.toFixed(3)
    console.log(`${app.id} through the binary${services ? ' (PostgreSQL)' : ''}: ${ids.length} reports submitted in ${submitS.toFixed(1)} s, all processed after ${doneS.toFixed(1)} s`)
    console.log(
      `  wrong-attach ${((wrong / ids.length) * 100).toFixed(2)} %  merge precision ${f(tp + fp === 0 ? 1 : tp / (tp + fp))}  recall ${f(tp / Math.max(1, tp + fn))} [tp ${tp}, fp ${fp}, fn ${fn}]  suggestion hit ${f(hit / Math.max(1, withEarlier))}  suggestions ${suggested} (${f(suggestedRight / Math.max(1, suggested))} right)  R@1 ${f(hits[1] / eligible)} R@5 ${f(hits[5] / eligible)} R@10 ${f(hits[10] / eligible)}`,
    )
    {
      // What the API served once every report was processed, against the database now (after the
      // /similar calls): a difference is a verdict written after the report looked processed (the defect
      // this found: bench/README.md, issue 41 session 20).
      const storedNow = await Promise.all(ids.map((id) => storage.stored(id)))
      const off = ids.flatMap((id, i) => {
        const stored = storedNow[i]
        const served = items[i]
        // A stored suggestion on a duplicate is not served; one whose lead was merged since is served as that lead's lead.
        const same = served.duplicateOfId === stored.lead && (served.suggestedDuplicateOf === null || served.suggestedDuplicateOf === undefined) === (stored.lead !== null || stored.suggested === null)
        return same ? [] : [{ report: i, served: [served.duplicateOfId, served.suggestedDuplicateOf?.id ?? null], stored: [stored.lead, stored.suggested] }]
      })
      console.log(`  verdicts served once processed vs the database at the end: ${off.length} differ${off.length ? ' ' + JSON.stringify(off.slice(0, 5)) : ''}`)
    }
    {
      // What the App's triage state says it learned (GET /v1/apps/:id/triage, as the dashboard shows it).
      const state = (await (await fetch(`${base}/v1/apps/${created.id}/triage`, { headers: sk })).json()) as { bars: Record<string, number>; arrival: Record<string, unknown> }
      console.log(`  GET /v1/apps/:id/triage: bars ${JSON.stringify(state.bars)}, arrival ${JSON.stringify(state.arrival)}`)
    }
    // The in-process bench on the same order, for comparison.
    if (process.env.E2E_COMPARE === '0') return
    const q = measureQuality({ apps: [{ ...app, reports: app.reports }], hardNegatives: [] } as Corpus, undefined, 1, false, FILING ? 'filing' : 'shuffled')
    console.log(
      `  in process (bench/cluster.ts, ${FILING ? 'filing order' : 'order 1'}): wrong-attach ${(q.wrongAttach * 100).toFixed(2)} %  merge precision ${f(q.precision)}  recall ${f(q.recall)} [tp ${q.tp}, fp ${q.fp}, fn ${q.fn}]  suggestion hit ${f(q.suggestionHit)}  R@1 ${f(q.recallAt1)} R@5 ${f(q.recallAt5)} R@10 ${f(q.recallAt10)}`,
    )
  } finally {
    server.kill('SIGTERM')
    await server.exited
    await storage.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

if (import.meta.main) {
  const path = dupCorpusPath()
  if (!existsSync(path)) {
    console.log(`skipped: ${path} is missing (see bench/dup-corpora/SOURCE.md)`)
    process.exit(0)
  }
  let corpus = JSON.parse(readFileSync(path, 'utf8')) as Corpus
  // Raw tracker text, as `bun bench/cluster.ts` writes it back (same flags): both sides get the same corpus.
  if (process.argv.includes('--user-agent-lines')) corpus = withUserAgentLines(corpus)
  if (process.argv.includes('--log-lines')) corpus = withLogLines(corpus)
  const only = process.env.E2E_APPS?.split(',')
  const services = process.env.E2E_PG === '1' ? await startClusterServices({ statements: false }) : null
  try {
    for (const app of corpus.apps) if (!only || only.includes(app.id)) await measureProject(app, services)
  } finally {
    await services?.stop()
  }
}
