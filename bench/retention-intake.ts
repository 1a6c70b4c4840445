/**
 * Intake while the report retention sweeps (issue 40.2): seeds N expired reports (default 10,000, one full
 * run of the sweep: 50 batches of 200) into an App kept 1 day, then posts M reports (default 6,000, C at a
 * time) to POST /v1/feedback twice over loopback: once alone, once while the sweep deletes the expired
 * reports. Prints intake p50/p99 for both and what the sweep did. Bounded: a fixed number of requests,
 * an in-process server on 127.0.0.1, the worker off (intake and the sweep only).
 *
 * Usage: bun bench/retention-intake.ts [--expired N] [--posts M] [--concurrency C]
 */
import { parseArgs } from 'node:util'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { loadConfig } from '../src/config'
import { startServer } from '../src/runtime/server'
import { Logger } from '../src/core/logger'
import { createTenantsService } from '../src/modules/tenants/service'
import { sqliteOf } from '../test/sqlite-of'

const { values } = parseArgs({ options: { expired: { type: 'string', default: '10000' }, posts: { type: 'string', default: '6000' }, concurrency: { type: 'string', default: '8' } } })
const EXPIRED = Math.min(200_000, Number(values.expired))
const POSTS = Math.min(50_000, Number(values.posts))
const CONCURRENCY = Math.min(64, Number(values.concurrency))

const dataDir = mkdtempSync(join(tmpdir(), 'fixloop-bench-retention-'))
const config = loadConfig({ host: '127.0.0.1', port: '0', dataDir }, { FIXLOOP_LOG_LEVEL: 'silent', FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
const server = await startServer(config, { log: new Logger('silent'), worker: { autoStart: false } })
try {
  const tenants = createTenantsService(server.ctx)
  const org = await tenants.createOrg('Bench')
  const kept = await tenants.createApp(org.id, { name: 'Kept a day', retentionDays: 1 })
  const intakeApp = await tenants.createApp(org.id, { name: 'Intake' })

  // Expired reports: ids and created_at 30 days back, ascending, as intake would have written them.
  const db = sqliteOf(server.ctx)
  const insert = db.query(`INSERT INTO feedback (id, org_id, app_id, status, version, text, submitted_mode, email, redactions, created_at, updated_at)
    VALUES (?, ?, ?, 'awaiting_manual', 3, ?, 'public', ?, '{}', ?, ?)`)
  const rand = randomBytes(5).toString('hex')
  const start = Math.floor(Date.now() / 1000) - 30 * 86400
  db.transaction(() => {
    for (let i = 0; i < EXPIRED; i++) {
      const secs = start + i
      insert.run(secs.toString(16).padStart(8, '0') + rand + (i & 0xffffff).toString(16).padStart(6, '0'), org.id, kept.id, `expired report ${i} about the checkout page`, `user${i}@example.com`, secs * 1000, secs * 1000)
    }
  })()

  async function intake(): Promise<{ p50: number; p99: number; max: number }> {
    const ms: number[] = []
    let sent = 0
    const client = async () => {
      while (sent < POSTS) {
        sent++
        const t = performance.now()
        const r = await fetch(`${server.url}/v1/feedback`, {
          method: 'POST',
          headers: { authorization: `Bearer ${intakeApp.publicKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ text: `The search page is slow when filtering by date (${sent})`, url: 'https://shop.example/search' }),
        })
        await r.arrayBuffer()
        if (r.status !== 201) throw new Error(`intake answered ${r.status}`)
        ms.push(performance.now() - t)
      }
    }
    await Promise.all(Array.from({ length: CONCURRENCY }, client))
    ms.sort((a, b) => a - b)
    return { p50: ms[Math.floor(ms.length * 0.5)], p99: ms[Math.floor(ms.length * 0.99)], max: ms[ms.length - 1] }
  }

  await intake() // warm-up: JIT, statement caches
  const alone = await intake()
  const sweepStart = performance.now()
  let sweepMs = 0
  const retention = server.services.reportRetention
  const sweep = retention.sweep().then((n) => ((sweepMs = performance.now() - sweepStart), n))
  const during = await intake()
  const deletedDuringIntake = retention.deletedTotal()
  const intakeMs = performance.now() - sweepStart
  const deleted = await sweep
  const fmt = (x: { p50: number; p99: number; max: number }) => `p50 ${x.p50.toFixed(2)} ms, p99 ${x.p99.toFixed(2)} ms, max ${x.max.toFixed(2)} ms`
  console.log(`intake alone:        ${POSTS} posts, ${CONCURRENCY} at a time: ${fmt(alone)}`)
  console.log(`intake during sweep: ${POSTS} posts, ${CONCURRENCY} at a time: ${fmt(during)}`)
  console.log(`  p99 during / alone: ${(during.p99 / alone.p99).toFixed(2)}×, p50: ${(during.p50 / alone.p50).toFixed(2)}×`)
  console.log(`sweep: deleted ${deleted} of ${EXPIRED} expired reports in ${(sweepMs / 1000).toFixed(2)} s; ${deletedDuringIntake} while intake ran (${(intakeMs / 1000).toFixed(2)} s), the rest after (batches of up to 200, paced while intake is busy)`)
} finally {
  await server.stop()
  rmSync(dataDir, { recursive: true, force: true })
}
