/**
 * Helpers for the lifecycle, worker, paging, CLI and durability tests. Everything here talks to real
 * things: the HTTP API of a running server, the SQLite file of a data dir, the compiled binary.
 */
import { Database } from 'bun:sqlite'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll } from 'bun:test'
import { rmSync } from 'node:fs'
import { BINARY, ROOT, call, runBinary, tempDir, type Reply } from './harness'
import { dbRows, dbRun } from './sqlite-of'
import type { Runtime } from '../src/runtime/open'

/** Builds dist/fixloop when it is missing (the CLI and crash tests need the real executable). */
export function ensureBinary(): void {
  if (existsSync(BINARY)) return
  const r = Bun.spawnSync(['bun', 'run', 'build'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  if (r.exitCode !== 0 || !existsSync(BINARY)) throw new Error(`bun run build failed:\n${r.stderr.toString()}`)
}

/** POST /v1/feedback in public mode. */
export function submit(base: string, pub: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Reply> {
  return call(base, 'POST', '/v1/feedback', { auth: pub, body, headers })
}

/** PATCH /v1/feedback/:id with an Org key. */
export function patchStatus(base: string, key: string, id: string, status: string): Promise<Reply> {
  return call(base, 'PATCH', `/v1/feedback/${id}`, { auth: key, body: { status } })
}

export interface FeedbackDbRow {
  id: string
  status: string
  version: number
  text: string
  duplicate_of_id: string | null
  [column: string]: unknown
}

export function feedbackRow(sqlite: Database, id: string): FeedbackDbRow {
  const row = sqlite.query('SELECT * FROM feedback WHERE id = ?').get(id) as FeedbackDbRow | null
  if (!row) throw new Error(`no feedback row ${id}`)
  return row
}

/** `feedbackRow` on whichever storage the server runs (SQLite or PostgreSQL). */
export async function feedbackRowIn(ctx: Pick<Runtime, 'storage'>, id: string): Promise<FeedbackDbRow> {
  const row = (await dbRows<FeedbackDbRow>(ctx, 'SELECT * FROM feedback WHERE id = ?', [id]))[0]
  if (!row) throw new Error(`no feedback row ${id}`)
  return row
}

/** Puts an item into a status directly, as another writer (or an earlier crash) would have left it. */
export function forceStatus(sqlite: Database, id: string, status: string): void {
  const changes = sqlite.query('UPDATE feedback SET status = ?, version = version + 1 WHERE id = ?').run(status, id).changes
  if (changes !== 1) throw new Error(`no feedback row ${id}`)
}

/** Marks a row as a clustered duplicate of `leadId`, as the dedup step does. */
export function markDuplicate(sqlite: Database, id: string, leadId: string): void {
  sqlite.query('UPDATE feedback SET duplicate_of_id = ?, version = version + 1 WHERE id = ?').run(leadId, id)
  sqlite.query('UPDATE feedback SET duplicate_count = duplicate_count + 1 WHERE id = ?').run(leadId)
}

/** `forceStatus` on whichever storage the server runs (SQLite or PostgreSQL). */
export async function forceStatusIn(ctx: Pick<Runtime, 'storage'>, id: string, status: string): Promise<void> {
  const rows = await dbRows(ctx, 'UPDATE feedback SET status = ?, version = version + 1 WHERE id = ? RETURNING id', [status, id])
  if (rows.length !== 1) throw new Error(`no feedback row ${id}`)
}

/** `markDuplicate` on whichever storage the server runs (SQLite or PostgreSQL). */
export async function markDuplicateIn(ctx: Pick<Runtime, 'storage'>, id: string, leadId: string): Promise<void> {
  await dbRun(ctx, 'UPDATE feedback SET duplicate_of_id = ?, version = version + 1 WHERE id = ?', [leadId, id])
  await dbRun(ctx, 'UPDATE feedback SET duplicate_count = duplicate_count + 1 WHERE id = ?', [leadId])
}

export function jobsFor(sqlite: Database, feedbackId: string): { id: number; run_after: number; lease_until: number | null; attempts: number; last_error: string | null }[] {
  return sqlite.query('SELECT * FROM jobs WHERE feedback_id = ? ORDER BY id').all(feedbackId) as never
}

/** A second connection to a data dir's database (another process's view, WAL-safe). */
export function openDataDb(dataDir: string): Database {
  const db = new Database(join(dataDir, 'fixloop.db'), { strict: true })
  db.run('PRAGMA busy_timeout = 5000')
  return db
}

/** Runs a CLI command with --json against a data dir; fails loudly unless it exits 0 with one JSON object. */
export async function cliJson(dataDir: string, args: string[], env: Record<string, string> = {}): Promise<any> {
  const r = await runBinary([...args, '--data-dir', dataDir, '--json'], env)
  if (r.code !== 0) throw new Error(`fixloop ${args.join(' ')} exited ${r.code}: ${r.stderr}`)
  const lines = r.stdout.trim().split('\n')
  if (lines.length !== 1) throw new Error(`expected one line of JSON, got:\n${r.stdout}`)
  return JSON.parse(lines[0])
}

/** Creates Org, key and App through the CLI: what an operator does. */
export async function cliTenant(dataDir: string, appFlags: string[] = []) {
  const org = await cliJson(dataDir, ['org', 'create', '--name', 'Crash Co'])
  const key = await cliJson(dataDir, ['key', 'create', '--org', org.id, '--name', 'ops'])
  const app = await cliJson(dataDir, ['app', 'create', '--org', org.id, '--name', 'Crash App', ...appFlags])
  return { orgId: org.id as string, key: key.key as string, keyId: key.id as string, appId: app.id as string, pub: app.publicKey as string, secret: app.signingSecret as string }
}

/** Resolves when `check()` is truthy; polls without busy-spinning. */
export async function waitFor(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await Bun.sleep(5)
  }
}

/** A promise with its resolve handle, for steps a test holds open. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

/**
 * For kill -9 tests: builds the binary and makes a data dir before the file's tests, and afterwards
 * stops every server pushed onto `stops` and removes the dir. Read `dir()` inside tests.
 */
export function crashTestDataDir(prefix: string): { dir: () => string; stops: (() => Promise<void>)[] } {
  let dataDir = ''
  const stops: (() => Promise<void>)[] = []
  beforeAll(() => {
    ensureBinary()
    dataDir = tempDir(prefix)
  })
  afterAll(async () => {
    for (const stop of stops) await stop().catch(() => {})
    rmSync(dataDir, { recursive: true, force: true })
  })
  return { dir: () => dataDir, stops }
}
