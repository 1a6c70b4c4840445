/**
 * `fixloop migrate-db` through the compiled binary: a real data dir filled by a real server (reports with a
 * screenshot, Idempotency-Keys, status changes and their events, a webhook with its sealed secret and
 * deliveries, a dashboard admin) is copied into a fresh database of a real PostgreSQL. Every table's count
 * and checksum match, typed values arrive typed, the counters PostgreSQL keeps are set; and every refusal
 * (a target with data, a wrong password, no server, a held data dir, a schema not current) writes nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import type { Pool } from 'pg'
import { openPool } from '../src/db/pg/client-options'
import { applyPgMigrations } from '../src/db/pg/migrate'
import { lockDataDir } from '../src/db/data-dir-lock'
import { copyPlan, orderForCopy, toPg } from '../src/db/transfer/tables'
import * as sqliteSchema from '../src/db/schema'
import * as pgSchema from '../src/db/pg/schema'
import { integer as liteInteger, sqliteTable, text as liteText } from 'drizzle-orm/sqlite-core'
import { boolean as pgBoolean, pgTable, text as pgText } from 'drizzle-orm/pg-core'
import { call, eventually, freePort, runBinary, seedTenant, startTestServer, tempDir, type Tenant } from './harness'
import { ensureBinary } from './helpers-lifecycle'
import { submitWithScreenshot } from './ops-helpers'
import { Receiver } from './webhook-receiver'
import { pgMissingReason, startPostgres, type PgServer } from './pg-server'

const skip = pgMissingReason()
if (skip) console.warn(`migrate-db: skipped: ${skip}`)

let pg: PgServer
let dataDir: string
let work: string
let a: Tenant
let b: Tenant
let webhookSecret: string
const pools: Pool[] = []

const fileHash = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex')

/** The SQLite source, read-only, for the test's own counts and spot checks. */
function sqliteRows<T>(sql: string, ...params: (string | number)[]): T[] {
  const db = new Database(join(dataDir, 'fixloop.db'), { readonly: true })
  try {
    return db.query(sql).all(...params) as T[]
  } finally {
    db.close()
  }
}

function pool(url: string): Pool {
  const p = openPool(url, 2)
  pools.push(p)
  return p
}

const migrateDb = (url: string, ...extra: string[]) => runBinary(['migrate-db', '--to', url, '--data-dir', dataDir, ...extra])

/** Row counts of every fixloop table of a database (what "nothing was written" is checked against). */
async function counts(p: Pool): Promise<Record<string, number>> {
  const tables = await p.query<{ name: string }>("SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' AND tablename <> '__migrations' ORDER BY 1")
  const out: Record<string, number> = {}
  for (const { name } of tables.rows) out[name] = Number((await p.query(`SELECT COUNT(*) AS n FROM "${name}"`)).rows[0].n)
  return out
}

beforeAll(async () => {
  if (skip) return
  ensureBinary()
  work = tempDir('fixloop-migrate-db-')
  pg = await startPostgres()
  const rx = new Receiver()
  const server = await startTestServer({
    FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1',
    FIXLOOP_WEBHOOK_RETRY_SCALE: '0.0005',
    FIXLOOP_WEBHOOK_TIMEOUT_SECONDS: '0.5',
    FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000',
  })
  dataDir = server.dataDir
  try {
    a = await seedTenant(server.admin, {}, 'Acme')
    // The second App has the opposite booleans, so both values of a boolean column cross over.
    b = await seedTenant(server.admin, { publicSubmissionEnabled: false, batchEnabled: true, allowedOrigins: ['https://b.example'] }, 'Beta')
    const hook = await call(server.url, 'POST', '/v1/webhooks', { auth: a.key, body: { url: rx.url + '/ok/migrate' } })
    expect(hook.status).toBe(201)
    webhookSecret = hook.body.secret
    rx.secrets.set('/ok/migrate', webhookSecret)
    const shot = await submitWithScreenshot(server.url, a.pub)
    const ids: string[] = [shot.feedbackId]
    for (let i = 0; i < 24; i++) {
      const r = await call(server.url, 'POST', '/v1/feedback', {
        auth: a.pub,
        headers: i % 3 === 0 ? { 'idempotency-key': `retry-${i}` } : {},
        body: { text: `Report ${i}: the chart ${i % 4 ? 'is cut off' : 'does not load'} on page ${i}`, severity: i % 2 ? 'low' : 'high', metadata: { plan: 'pro', n: i } },
      })
      expect(r.status).toBe(201)
      ids.push(r.body.id)
    }
    await eventually(async () => (await call(server.url, 'GET', `/v1/feedback/${ids[3]}`, { auth: a.key })).body.status !== 'new', 15_000)
    for (const id of ids.slice(0, 6)) {
      const r = await call(server.url, 'PATCH', `/v1/feedback/${id}`, { auth: a.key, body: { status: 'archived' } })
      expect(r.status).toBe(200)
    }
    await eventually(() => rx.received.length > 0, 15_000)
    // A suggestion and a rejected one: a triage decision, scores (floats) and a rejected lead list cross over.
    // In an App of their own: a new App's conservative bars suggest these pairs rather than merge them.
    const triageApp = await server.admin.createApp(a.orgId, { name: 'Triage' })
    const settle = async (text: string) => {
      const id = (await call(server.url, 'POST', '/v1/feedback', { auth: triageApp.publicKey, body: { text, url: 'https://shop.example/checkout/payment' } })).body.id
      await eventually(async () => (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: a.key })).body.status === 'awaiting_manual', 15_000)
      return id
    }
    await settle('The checkout button does nothing when I click it on the payment page.')
    const near = await settle('The checkout button is slow when I click it on the payment page, it takes ten seconds.')
    await settle('The search field on the orders page ignores the enter key completely.')
    await settle('The search field on the orders page is slow when I press enter, about ten seconds.')
    expect((await call(server.url, 'POST', `/v1/feedback/${near}/reject-suggestion`, { auth: a.key })).status).toBe(200)
    const pw = join(work, 'pw')
    writeFileSync(pw, 'correct horse battery staple\n')
    const admin = await runBinary(['admin', 'create', '--email', 'owner@example.com', '--password-file', pw, '--data-dir', dataDir, '--json'])
    expect(admin.code).toBe(0)
  } finally {
    await server.stop()
    rx.stop()
  }
  // A retention floor above the newest seq (what deleting an Org's newest events leaves behind on SQLite):
  // written by hand, since retention runs after days. Beta's counter must come out at this floor.
  const db = new Database(join(dataDir, 'fixloop.db'))
  // A processing thread the stop's time limit cut off may still be finishing its last write (a loaded CI
  // machine: SQLITE_BUSY here once): wait for it rather than fail.
  db.run('PRAGMA busy_timeout = 20000')
  db.run('INSERT INTO event_counters (org_id, last_seq) VALUES (?, 500) ON CONFLICT (org_id) DO UPDATE SET last_seq = 500', [b.orgId])
  // An issue-tracker connection and one issue link (docs/trackers.md), as the sync writes them.
  db.run(
    "INSERT INTO tracker_connections (app_id, org_id, kind, api_url, project, token_sealed, webhook_secret_sealed, actor, state_map, rules, event_cursor, last_error, last_error_at, retry_at, created_at, updated_at) VALUES (?, ?, 'github', 'https://api.github.com', 'acme/shop', 'v1:sealed-token', 'v1:sealed-secret', 'fixloop-bot', '{\"won''t fix\":\"resolved\"}', '{\"minDuplicates\":2,\"onAwaitingManual\":[\"high\"]}', 7, 'github answered 429', 1795000000000, 1795000060000, 1795000000000, 1795000000000)",
    [a.appId, a.orgId],
  )
  db.run("INSERT INTO tracker_issues (feedback_id, org_id, app_id, kind, issue_id, issue_key, issue_url, state_name, state_category, pushed_size, sync_state, attempts, created_at, updated_at) VALUES ('trk-lead', ?, ?, 'github', '7', '#7', 'https://github.com/acme/shop/issues/7', 'open', 'open', 3, 'synced', 0, 1, 2)", [a.orgId, a.appId])
  db.run('PRAGMA wal_checkpoint(TRUNCATE)')
  db.close()
}, 120_000)

afterAll(async () => {
  for (const p of pools) await p.end().catch(() => {})
  await pg?.stop()
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  if (work) rmSync(work, { recursive: true, force: true })
})

describe.skipIf(Boolean(skip))('fixloop migrate-db', () => {
  let url: string
  let report: { ok: boolean; tables: { table: string; rows: number; sourceRows: number; checksumOk: boolean; sha256: string }[]; sequences: { table: string; column: string; lastValue: number }[]; notes: string[]; masterKey: { source: string; matches: boolean | null } }

  test('copies every table in one verified transaction; the SQLite file is not changed', async () => {
    url = await pg.createDatabase('migrated')
    const before = fileHash(join(dataDir, 'fixloop.db'))
    const r = await migrateDb(url, '--json', '--batch-rows', '7')
    expect(r.stderr).not.toContain(pg.password)
    expect(r.code).toBe(0)
    report = JSON.parse(r.stdout)
    expect(report.ok).toBe(true)
    expect(fileHash(join(dataDir, 'fixloop.db'))).toBe(before)
    // Progress per table on stderr, with batches (7 rows each) for the larger tables.
    expect(r.stderr).toMatch(/migrate-db: feedback: \d+\/\d+ rows copied/)
    const byTable = new Map(report.tables.map((t) => [t.table, t]))
    for (const t of report.tables) {
      expect({ table: t.table, ok: t.checksumOk }).toEqual({ table: t.table, ok: true })
      expect(t.sha256).toMatch(/^[0-9a-f]{64}$/)
    }
    // The tables the server filled are all there, with the rows SQLite holds.
    for (const table of ['orgs', 'api_keys', 'apps', 'feedback', 'uploads', 'events', 'idempotency_keys', 'webhooks', 'webhook_deliveries', 'webhook_attempts', 'admins', 'audit_log', 'triage_decisions', 'tracker_connections', 'tracker_issues']) {
      const n = sqliteRows<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`)[0]!.n
      expect({ table, n: n > 0 }).toEqual({ table, n: true })
      expect({ table, rows: byTable.get(table)?.rows }).toEqual({ table, rows: n })
    }
    const p = pool(url)
    for (const table of ['feedback', 'events', 'webhooks', 'audit_log', 'triage_decisions']) {
      expect(Number((await p.query(`SELECT COUNT(*) AS n FROM ${table}`)).rows[0].n)).toBe(byTable.get(table)!.rows)
    }
    // Scores are floats on both sides, equal after the copy; the suggestion columns came along.
    const scores = (await p.query('SELECT kind, score FROM triage_decisions')).rows
    expect(scores).toEqual(sqliteRows<{ kind: string; score: number }>('SELECT kind, score FROM triage_decisions'))
    expect(Number((await p.query('SELECT COUNT(*) AS n FROM feedback WHERE suggested_score IS NOT NULL')).rows[0].n)).toBeGreaterThan(0)
  })

  test('values arrive typed: booleans, epoch ms as numbers, JSON text, sealed secrets as they were', async () => {
    const p = pool(url)
    const apps = (await p.query('SELECT id, public_submission_enabled, batch_enabled, allowed_origins, signing_secret_enc, created_at FROM apps ORDER BY id')).rows
    const liteApps = sqliteRows<Record<string, unknown>>('SELECT id, public_submission_enabled, batch_enabled, allowed_origins, signing_secret_enc, created_at FROM apps ORDER BY id')
    expect(apps.length).toBe(3) // Acme, Beta and the Triage App of the suggestions
    for (const [i, row] of apps.entries()) {
      const lite = liteApps[i]!
      expect(row.public_submission_enabled).toBe(lite.public_submission_enabled === 1)
      expect(row.batch_enabled).toBe(lite.batch_enabled === 1)
      expect(row.allowed_origins).toBe(lite.allowed_origins as string)
      expect(row.signing_secret_enc).toBe(lite.signing_secret_enc as string)
      expect(row.created_at).toBe(lite.created_at as number)
      expect(typeof row.created_at).toBe('number')
    }
    expect(apps.find((r) => r.id === b.appId)).toMatchObject({ public_submission_enabled: false, batch_enabled: true, allowed_origins: '["https://b.example"]' })
    const fb = (await p.query('SELECT id, created_at, metadata, merge_locked, status FROM feedback ORDER BY id')).rows
    const liteFb = sqliteRows<Record<string, unknown>>('SELECT id, created_at, metadata, merge_locked, status FROM feedback ORDER BY id')
    expect(fb.map((r) => [r.id, r.created_at, r.metadata, r.merge_locked, r.status])).toEqual(liteFb.map((r) => [r.id, r.created_at, r.metadata, r.merge_locked === 1, r.status]))
    expect(fb.some((r) => r.metadata !== null && JSON.parse(r.metadata).plan === 'pro')).toBe(true)
    const hooks = (await p.query('SELECT secret_sealed, enabled, cursor_seq FROM webhooks')).rows
    expect(hooks[0].secret_sealed).toMatch(/^v1:/)
    expect(JSON.stringify(hooks)).not.toContain(webhookSecret.slice(6))
    expect(hooks[0].enabled).toBe(true)
    // The version that migrated the PostgreSQL schema is recorded there; the master key check came along.
    const meta = (await p.query('SELECT key FROM instance_meta ORDER BY key')).rows.map((r) => r.key)
    expect(meta).toContain('master_key_check')
    expect(meta).toContain('migrated_by_version')
    expect(report.masterKey).toMatchObject({ source: 'file', matches: true })
  })

  test('each Org counter starts past its newest event and its floor; the jobs sequence past every id SQLite handed out', async () => {
    const p = pool(url)
    const maxSeq = sqliteRows<{ m: number }>('SELECT MAX(seq) AS m FROM events WHERE org_id = ?', a.orgId)[0]!.m
    expect(maxSeq).toBeGreaterThan(0)
    const counter = async (org: string) => (await p.query('SELECT last_seq FROM event_counters WHERE org_id = $1', [org])).rows[0]?.last_seq
    expect(await counter(a.orgId)).toBe(maxSeq)
    expect(await counter(b.orgId)).toBe(500)
    const highWater = Math.max(
      sqliteRows<{ seq: number }>("SELECT seq FROM sqlite_sequence WHERE name = 'jobs'")[0]?.seq ?? 0,
      sqliteRows<{ m: number | null }>('SELECT MAX(id) AS m FROM jobs')[0]!.m ?? 0,
    )
    expect(highWater).toBeGreaterThan(0)
    expect(report.sequences).toContainEqual({ table: 'jobs', column: 'id', lastValue: highWater })
    const next = (await p.query("INSERT INTO jobs (kind, run_after, created_at) VALUES ('probe', 0, 0) RETURNING id")).rows[0].id
    expect(next).toBeGreaterThan(highWater)
    await p.query('DELETE FROM jobs WHERE id = $1', [next])
  })

  test('the text summary names each table, the master key to set (its path, never the key) and the blobs to copy', async () => {
    const fresh = await pg.createDatabase('text')
    const r = await migrateDb(fresh)
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^TABLE\s+ROWS\s+SOURCE_ROWS\s+CHECKSUM/)
    expect(r.stdout).toMatch(/\nfeedback\s+\d+\s+\d+\s+ok\n/)
    expect(r.stdout).toContain('every table matches')
    expect(r.stdout).toContain(`FIXLOOP_MASTER_KEY on every node to the key in ${join(dataDir, 'master.key')}`)
    expect(r.stdout).not.toContain(readFileSync(join(dataDir, 'master.key'), 'utf8').trim())
    expect(r.stdout).toContain('1 uploaded files stay in')
    expect(r.stdout).toContain(`${join(dataDir, 'blobs')}/ ALIAS/BUCKET/sealed/`)
    expect(r.stdout + r.stderr).not.toContain(pg.password)
  })

  test('a target that already holds fixloop data is refused (exit 2) and left as it was', async () => {
    const p = pool(url)
    const before = await counts(p)
    const r = await migrateDb(url)
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('already holds fixloop data')
    expect(r.stderr).toContain('nothing was written')
    expect(await counts(p)).toEqual(before)
  })

  test('a verification mismatch rolls everything back (exit 1)', async () => {
    const fresh = await pg.createDatabase('tampered')
    const p = pool(fresh)
    await applyPgMigrations(p)
    // A trigger that changes what is written: the copy "succeeds", the checksums must not.
    await p.query(`CREATE FUNCTION tamper() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.name := NEW.name || '!'; RETURN NEW; END $$`)
    await p.query('CREATE TRIGGER tamper BEFORE INSERT ON orgs FOR EACH ROW EXECUTE FUNCTION tamper()')
    const r = await migrateDb(fresh, '--json')
    expect(r.code).toBe(1)
    const out = JSON.parse(r.stdout)
    expect(out.ok).toBe(false)
    expect(out.tables.filter((t: { checksumOk: boolean }) => !t.checksumOk).map((t: { table: string }) => t.table)).toEqual(['orgs'])
    expect(r.stderr).toContain('rolled back')
    const left = await counts(p)
    expect(Object.entries(left).filter(([t, n]) => n > 0 && t !== 'instance_meta' && t !== 'credential_generation')).toEqual([])
  })

  test('Ctrl-C mid-copy: exit 130 with a sentence saying it was rolled back and is safe to rerun; a rerun copies it all', async () => {
    const fresh = await pg.createDatabase('interrupted')
    const p = pool(fresh)
    await applyPgMigrations(p)
    // A SHARE lock on feedback lets the copy read (and write the tables before it), then stall on feedback's
    // first INSERT: a moment that is certainly mid-copy, inside the copy's open transaction.
    const holder = await p.connect()
    await holder.query('BEGIN')
    await holder.query('LOCK TABLE feedback IN SHARE MODE')
    const proc = Bun.spawn([join(import.meta.dir, '..', 'dist', 'fixloop'), 'migrate-db', '--to', fresh, '--data-dir', dataDir], {
      env: { PATH: process.env.PATH ?? '' },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    try {
      await eventually(async () => Number((await p.query("SELECT COUNT(*) AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'feedback' AND NOT l.granted")).rows[0].n) > 0, 20_000)
      proc.kill('SIGINT')
      const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited])
      expect(code).toBe(130)
      expect(stderr).toContain('migrate-db: interrupted (SIGINT): the copy was not committed')
      expect(stderr).toContain('It is safe to run migrate-db again.')
      expect(stderr).not.toContain(pg.password)
    } finally {
      await holder.query('ROLLBACK')
      holder.release()
    }
    const left = await counts(p)
    expect(Object.entries(left).filter(([t, n]) => n > 0 && t !== 'instance_meta' && t !== 'credential_generation')).toEqual([])
    // The data dir's lock went with the process: the rerun is not refused, and it copies everything.
    const again = await migrateDb(fresh, '--json')
    expect(again.code).toBe(0)
    expect(JSON.parse(again.stdout).ok).toBe(true)
  }, 60_000)

  test('a wrong password or no server: exit 2, a clear sentence, no password in the output', async () => {
    const fresh = await pg.createDatabase('auth')
    const wrong = fresh.replace(`:${pg.password}@`, ':not-the-password-xyz@')
    const r = await migrateDb(wrong)
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('refused the credentials')
    expect(r.stderr).toMatch(/postgres@127\.0\.0\.1:\d+\/auth_/)
    expect(r.stdout + r.stderr).not.toContain('not-the-password-xyz')
    expect(r.stdout + r.stderr).not.toContain(pg.password)
    const closed = `postgres://postgres:secret-pw-123@127.0.0.1:${await freePort()}/x`
    const c = await migrateDb(closed)
    expect(c.code).toBe(2)
    expect(c.stderr).toContain('connection refused')
    expect(c.stdout + c.stderr).not.toContain('secret-pw-123')
    expect(await counts(pool(fresh))).toEqual({})
  })

  test('a data dir a server holds is refused (exit 2), nothing written', async () => {
    const fresh = await pg.createDatabase('held')
    const lock = lockDataDir(dataDir, 'the test')
    try {
      const r = await migrateDb(fresh)
      expect(r.code).toBe(2)
      expect(r.stderr).toContain('in use by another fixloop server')
    } finally {
      lock.release()
    }
    expect(await counts(pool(fresh))).toEqual({})
  })

  test('a source with pending migrations, or migrated by a newer fixloop, is refused (exit 2), nothing written', async () => {
    const copy = join(work, 'old')
    cpSync(dataDir, copy, { recursive: true })
    rmSync(join(copy, 'serve.lock'), { force: true })
    const db = new Database(join(copy, 'fixloop.db'))
    const last = (db.query('SELECT name FROM __migrations ORDER BY name DESC LIMIT 1').get() as { name: string }).name
    db.run('DELETE FROM __migrations WHERE name = ?', [last])
    db.close()
    const fresh = await pg.createDatabase('pending')
    const r = await runBinary(['migrate-db', '--to', fresh, '--data-dir', copy])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain(last)
    expect(r.stderr).toContain('run "fixloop migrate"')
    const newer = new Database(join(copy, 'fixloop.db'))
    newer.run("INSERT INTO __migrations (name, applied_at) VALUES (?, 1), ('9999_from_the_future', 1)", [last])
    newer.close()
    const n = await runBinary(['migrate-db', '--to', fresh, '--data-dir', copy])
    expect(n.code).toBe(2)
    expect(n.stderr).toContain('newer fixloop')
    expect(await counts(pool(fresh))).toEqual({})
  })

  test('usage: --to is required and must be a postgres:// URL; help lists the command', async () => {
    const none = await runBinary(['migrate-db', '--data-dir', dataDir])
    expect(none.code).toBe(2)
    expect(none.stderr).toContain('missing --to')
    const bad = await runBinary(['migrate-db', '--to', 'mysql://u:hunter22@h/db', '--data-dir', dataDir])
    expect(bad.code).toBe(2)
    expect(bad.stderr).not.toContain('hunter22')
    // Without --to, FIXLOOP_DATABASE_URL is the target (keeps the password off the command line).
    const fromEnv = await runBinary(['migrate-db', '--data-dir', dataDir, '--json'], { FIXLOOP_DATABASE_URL: await pg.createDatabase('env') })
    expect(fromEnv.code).toBe(0)
    expect(JSON.parse(fromEnv.stdout).ok).toBe(true)
    // The password may come from PGPASSWORD instead of the URL.
    const bare = (await pg.createDatabase('pgpassword')).replace(`:${pg.password}@`, '@')
    const viaPgPassword = await runBinary(['migrate-db', '--to', bare, '--data-dir', dataDir, '--json'], { PGPASSWORD: pg.password })
    expect(viaPgPassword.code).toBe(0)
    expect((await runBinary(['--help'])).stdout).toContain('migrate-db')
    expect((await runBinary(['migrate-db', '--help'])).stdout).toContain('--to URL')
  })

  test('backup and restore in PostgreSQL mode point to pg_dump and pg_restore', async () => {
    const env = { FIXLOOP_DATABASE_URL: url }
    const backup = await runBinary(['backup', '--out', join(work, 'x.tar'), '--data-dir', dataDir], env)
    expect(backup.code).toBe(2)
    expect(backup.stderr).toContain('pg_dump --format=custom')
    expect(backup.stderr).toContain('Backup and restore on PostgreSQL')
    const restore = await runBinary(['restore', '--from', join(work, 'x.tar'), '--data-dir', join(work, 'r')], env)
    expect(restore.code).toBe(2)
    expect(restore.stderr).toContain('pg_restore')
    expect(backup.stderr + restore.stderr).not.toContain(pg.password)
  })
})

describe('the copy plan', () => {
  test('every table of both trees, referenced tables first, the seeded credential_generation last', () => {
    const plan = copyPlan()
    const names = plan.map((t) => t.name)
    expect(names.length).toBeGreaterThan(20)
    expect(new Set(names).size).toBe(names.length)
    for (const table of ['feedback', 'jobs', 'events', 'event_counters', 'webhooks', 'instance_meta']) expect(names).toContain(table)
    expect(names.indexOf('orgs')).toBeLessThan(names.indexOf('apps'))
    expect(names.indexOf('apps')).toBeLessThan(names.indexOf('feedback'))
    expect(names.at(-1)).toBe('credential_generation')
    const apps = plan.find((t) => t.name === 'apps')!
    expect(apps.columns.find((c) => c.name === 'batch_enabled')?.kind).toBe('bool')
    expect(apps.columns.find((c) => c.name === 'created_at')?.kind).toBe('int64')
    expect(plan.find((t) => t.name === 'admin_memberships')!.key).toEqual(['admin_id', 'org_id'])
  })

  test('trees that disagree stop the copy with every difference named', () => {
    const extraLite = sqliteTable('only_lite', { id: liteText('id').primaryKey() })
    const flagLite = sqliteTable('flags', { id: liteText('id').primaryKey(), on: liteInteger('on').notNull(), gone: liteText('gone') })
    const flagPg = pgTable('flags', { id: pgText('id').primaryKey(), on: pgBoolean('on').notNull() })
    expect(() => copyPlan({ ...sqliteSchema, extraLite, flagLite }, { ...pgSchema, flagPg })).toThrow(
      /table only_lite is in the SQLite tree only.*flags\.on: SQLiteInteger cannot be copied into PgBoolean.*flags\.gone is in the SQLite tree only/,
    )
  })

  test('a foreign-key cycle cannot be ordered', () => {
    const t = (name: string, references: string[]) => ({ name, columns: [], key: ['id'], references })
    expect(() => orderForCopy([t('a', ['b']), t('b', ['a'])])).toThrow('cycle')
  })

  test('values that do not fit their PostgreSQL column are refused with where they are', () => {
    const at = () => 'jobs.attempts of the row with key 7'
    expect(() => toPg('int32', 2n ** 31n, at)).toThrow('does not fit')
    expect(() => toPg('int64', 'abc', at)).toThrow('jobs.attempts of the row with key 7: "abc" is not an integer')
    expect(() => toPg('bool', 2n, at)).toThrow('not a boolean')
    expect(toPg('int64', 2n ** 60n, at)).toBe('1152921504606846976')
    expect(toPg('bool', 1n, at)).toBe(true)
    expect(toPg('float', 3n, at)).toBe(3)
  })
})
