/**
 * The cost of one webhook dispatcher pass (src/modules/webhooks/dispatcher.ts `tick`, run 5 times a
 * second) when nothing happened: ORGS Orgs × PER_ORG live endpoints, every cursor at its Org's last
 * event. Then the pass that fans out one new event of one Org. On both dialects (PostgreSQL: a server
 * on loopback, test/pg-server.ts), real repositories, no HTTP (nothing is due, nothing is sent).
 *
 * Prints the plan of the pass's read (db/sql/webhooks.ts), then `WEBHOOK_PASS {...}`: per dialect the median and p95 ms of an idle pass over PASSES passes, the
 * repository calls one idle pass makes, and the ms of the pass that fans out the new event.
 *
 * Usage: bun bench/webhook-pass.ts [ORGS=100] [PER_ORG=100] [sqlite|pg|both]
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { systemClock } from '../src/core/clock'
import { SecretBox } from '../src/core/crypto'
import { Logger } from '../src/core/logger'
import { openDatabase } from '../src/db/sqlite/client'
import { applyMigrations } from '../src/db/sqlite/migrate'
import { sqliteStorage } from '../src/db/sqlite/storage'
import { openSqliteStore } from '../src/db/sqlite/store'
import { openPool } from '../src/db/pg/client-options'
import { pgStorage } from '../src/db/pg/storage'
import { openPgStore } from '../src/db/pg/store'
import type { Store } from '../src/db/store'
import { WebhookDispatcher } from '../src/modules/webhooks/dispatcher'
import type { WebhooksRepo } from '../src/modules/webhooks/repo'
import { WEBHOOK_PASS_SQL } from '../src/db/sql/webhooks'
import { migratedSqlite } from '../test/migrated-sqlite'
import { startPostgres } from '../test/pg-server'

const ORGS = Number(process.argv[2] ?? 100)
const PER_ORG = Number(process.argv[3] ?? 100)
const WHICH = process.argv[4] ?? 'both'
const PASSES = 50
const EVENTS_PER_ORG = 3

/** Rows as plain SQL on either dialect: `?` placeholders, numbered for PostgreSQL. */
type Run = (text: string, params: unknown[]) => Promise<void>

async function seed(store: Store, run: Run): Promise<void> {
  for (let o = 0; o < ORGS; o++) {
    const orgId = `org${String(o).padStart(4, '0')}`
    await store.tenants.insertOrg({ id: orgId, name: orgId, createdAt: 1 }, [])
    for (let i = 0; i < EVENTS_PER_ORG; i++) await store.lifecycle.record({ orgId, appId: null }, 'webhook.test', { webhookId: 'none' })
    for (let w = 0; w < PER_ORG; w++) {
      await run(
        "INSERT INTO webhooks (id, org_id, app_id, url, event_types, secret_sealed, cursor_seq, enabled, created_at) VALUES (?, ?, NULL, 'https://example.com/h', '[]', 'x', ?, ?, 1)",
        [`${orgId}-w${String(w).padStart(4, '0')}`, orgId, EVENTS_PER_ORG, store.dialect === 'sqlite' ? 1 : true],
      )
    }
  }
}

/** The repository with each call counted (an idle pass's calls are its statements, less the claim's read). */
function counted(repo: WebhooksRepo): { repo: WebhooksRepo; calls: () => number } {
  let n = 0
  const wrapped = new Proxy(repo, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver)
      return typeof v === 'function' ? (...args: unknown[]) => (n++, v.apply(target, args)) : v
    },
  })
  return { repo: wrapped, calls: () => n }
}

async function measure(dialect: string, store: Store): Promise<Record<string, number>> {
  const { repo, calls } = counted(store.webhooks)
  const deps = {
    store: { webhooks: repo },
    box: new SecretBox(new Uint8Array(32)),
    clock: systemClock,
    config: { webhookAllowPrivate: true, webhookRetryScale: 1, webhookTimeoutMs: 1000 },
  }
  const dispatcher = new WebhookDispatcher(deps, new Logger('silent'))
  for (let i = 0; i < 5; i++) await dispatcher.tick()
  const times: number[] = []
  const before = calls()
  const deadline = performance.now() + 60_000
  for (let i = 0; i < PASSES && performance.now() < deadline; i++) {
    const t = performance.now()
    await dispatcher.tick()
    times.push(performance.now() - t)
  }
  const callsPerPass = (calls() - before) / times.length
  times.sort((a, b) => a - b)
  await store.lifecycle.record({ orgId: 'org0000', appId: null }, 'webhook.test', { webhookId: 'none' })
  const t = performance.now()
  await dispatcher.tick()
  const newEventMs = performance.now() - t
  await dispatcher.stop()
  const round = (x: number) => Math.round(x * 100) / 100
  const out = { idleMedianMs: round(times[times.length >> 1]), idleP95Ms: round(times[Math.floor(times.length * 0.95)]), callsPerIdlePass: callsPerPass, newEventPassMs: round(newEventMs) }
  console.log(`${dialect}: ${JSON.stringify(out)}`)
  return out
}

const result: Record<string, unknown> = { orgs: ORGS, endpointsPerOrg: PER_ORG, passes: PASSES }

if (WHICH !== 'pg') {
  const dir = mkdtempSync(join(tmpdir(), 'fixloop-webhook-pass-'))
  const file = join(dir, 'fixloop.db')
  copyFileSync(migratedSqlite(), file)
  const { sqlite, db } = openDatabase(file)
  applyMigrations(sqlite)
  const store = openSqliteStore(sqliteStorage(sqlite, db), systemClock)
  const t = performance.now()
  await seed(store, async (text, params) => void sqlite.query(text).run(...(params as never[])))
  console.log(`sqlite: seeded in ${Math.round(performance.now() - t)} ms`)
  const plan = sqlite.query(`EXPLAIN QUERY PLAN ${WEBHOOK_PASS_SQL.behind}`).all() as { detail: string }[]
  console.log(`sqlite plan of the pass's read:\n  ${plan.map((r) => r.detail).join('\n  ')}`)
  result.sqlite = await measure('sqlite', store)
  await store.close()
  sqlite.close()
  rmSync(dir, { recursive: true, force: true })
}

if (WHICH !== 'sqlite') {
  const server = await startPostgres()
  try {
    const pool = openPool(await server.createDatabase('pass', { migrated: true }), 8)
    const store = openPgStore(pgStorage(pool), systemClock)
    await seed(store, async (text, params) => {
      let i = 0
      await pool.query(text.replace(/\?/g, () => `$${++i}`), params)
    })
    await pool.query('ANALYZE')
    const plan = await pool.query(`EXPLAIN (ANALYZE, COSTS OFF) ${WEBHOOK_PASS_SQL.behind}`)
    console.log(`pg plan of the pass's read:\n  ${plan.rows.map((r) => r['QUERY PLAN']).join('\n  ')}`)
    result.pg = await measure('pg', store)
    await store.close()
  } finally {
    await server.stop()
  }
}

console.log(`WEBHOOK_PASS ${JSON.stringify(result)}`)
