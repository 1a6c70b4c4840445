/**
 * `fixloop migrate-db --to postgres://…`: moves an instance from the data dir's SQLite to PostgreSQL.
 * The data dir is locked (no server may write meanwhile) and its database opened read-only; the target
 * is migrated, must be empty, and receives everything in one transaction that commits only when every
 * table's row count and checksum match (src/db/transfer/). What the database cannot carry is said on the
 * way out: the master key the sealed secrets need, and the uploaded files that belong in the bucket.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig, parseServiceUrl } from '../config'
import { requireExistingDataDir } from '../runtime/open'
import { DB_FILE } from '../db/data-dir'
import { lockDataDir } from '../db/data-dir-lock'
import { connectPg, describeDatabase } from '../db/pg/connect'
import { copyToPostgres, notEmpty, occupiedTables, type CopyReport } from '../db/transfer/copy'
import { openSqliteSource } from '../db/transfer/sqlite-source'
import { copyPlan } from '../db/transfer/tables'
import { keyMatchesCheck, masterKeyFile, parseMasterKey } from '../core/master-key'
import { formatTable, parseFlags, parseIntFlag, refuseArguments, UsageError } from './args'
import { migratePostgresPool } from './postgres-mode'

export const MIGRATE_DB_HELP = `Usage: fixloop migrate-db --to postgres://USER:PASS@HOST:PORT/DB [--data-dir DIR] [--json]
Copies the data dir's SQLite database into an EMPTY PostgreSQL database (15 or newer), to move an
instance to PostgreSQL mode (docs/operations.md, "Moving an instance to PostgreSQL"). Stop the server
first: a data dir a server holds is refused. The SQLite file is opened read-only and never changed.
The target is migrated, then every table is copied in ONE transaction and verified (row counts and a
SHA-256 of each table's rows on both sides); it commits only when every table matches (exit 0), else
nothing is written (exit 1). A target that already holds fixloop data is refused (exit 2).
  --to URL          the PostgreSQL database; without it, FIXLOOP_DATABASE_URL. The password may also
                    come from PGPASSWORD (keeps it out of the process list); it is never printed.
  --batch-rows N    rows per INSERT (default 1000; fewer for wide tables)
Sealed secrets are copied as they are: the PostgreSQL-mode server needs the same master key
(FIXLOOP_MASTER_KEY). Uploaded files stay in DIR/blobs: copy them to the S3 bucket yourself (the
output says how). Progress goes to stderr; the per-table summary to stdout (--json: one object).`

const stderr = (line: string) => process.stderr.write(line + '\n')

/** Uploaded files of the embedded store (not their .type side files nor unfinished .part- files). */
function countBlobs(dir: string): number {
  if (!existsSync(dir)) return 0
  let n = 0
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && !entry.name.endsWith('.type') && !entry.name.includes('.part-')) n++
  }
  return n
}

interface KeyAdvice {
  source: 'FIXLOOP_MASTER_KEY' | 'file' | 'none'
  file: string
  /** Whether the key opens this database's secrets (its check value); undefined when nothing tells. */
  matches: boolean | undefined
}

function masterKeyAdvice(dataDir: string, fromEnv: string | undefined, check: string | undefined): KeyAdvice {
  const file = masterKeyFile(dataDir)
  let key: Uint8Array | undefined
  let source: KeyAdvice['source'] = 'none'
  if (fromEnv) {
    key = parseMasterKey(fromEnv, 'FIXLOOP_MASTER_KEY')
    source = 'FIXLOOP_MASTER_KEY'
  } else if (existsSync(file)) {
    key = parseMasterKey(readFileSync(file, 'utf8'), file)
    source = 'file'
  }
  return { source, file, matches: key && check ? keyMatchesCheck(key, check) : undefined }
}

function notesFor(report: CopyReport, key: KeyAdvice, sealed: Record<string, number>, blobsDir: string, blobs: number, dbFile: string): string[] {
  const notes: string[] = []
  const sealedTotal = Object.values(sealed).reduce((a, b) => a + b, 0)
  const what = sealedTotal > 0 ? `${sealedTotal} sealed secrets (${Object.entries(sealed).map(([c, n]) => `${c}: ${n}`).join(', ')})` : 'sealed secrets (none yet)'
  const same = `${what} were copied as they are, still sealed: the PostgreSQL-mode server must use the same master key`
  if (key.source === 'FIXLOOP_MASTER_KEY') notes.push(`${same}: keep FIXLOOP_MASTER_KEY at this value on every node.`)
  else if (key.source === 'file') notes.push(`${same}: set FIXLOOP_MASTER_KEY on every node to the key in ${key.file} (e.g. FIXLOOP_MASTER_KEY="$(cat ${key.file})"); PostgreSQL mode does not read the data dir.`)
  else notes.push(`${same}, but none was found (FIXLOOP_MASTER_KEY is unset and ${key.file} is missing)${sealedTotal > 0 ? ': without the original key the copied secrets cannot be opened' : ''}.`)
  if (key.matches === false) notes.push(`WARNING: the master key in ${key.source === 'file' ? key.file : 'FIXLOOP_MASTER_KEY'} is NOT the key this database's secrets were sealed with; find the right one before starting.`)
  if (blobs > 0) {
    notes.push(
      `${blobs} uploaded files stay in ${blobsDir}: PostgreSQL mode keeps uploads in S3/MinIO (FIXLOOP_S3_*), so copy them to the bucket before starting: ` +
        `each file ${blobsDir}/<appId>/<name> (not the .type files beside them) becomes the object sealed/<appId>/<name>, ` +
        `e.g. mcli mirror --exclude '*.type' --exclude '*.part-*' ${blobsDir}/ ALIAS/BUCKET/sealed/ (MinIO's client) or ` +
        `aws --endpoint-url S3_ENDPOINT s3 sync --exclude '*.type' --exclude '*.part-*' ${blobsDir}/ s3://BUCKET/sealed/`,
    )
  } else notes.push(`no uploaded files in ${blobsDir}: nothing to copy to the bucket.`)
  if (report.ok) notes.push(`${dbFile} was read only and is unchanged: keep it (and a backup) until the PostgreSQL-mode server runs well.`)
  return notes
}

export async function runMigrateDb(argv: string[]): Promise<void> {
  const { values, positionals } = parseFlags(argv, { to: { type: 'string' }, 'batch-rows': { type: 'string' } })
  if (values.help) return void process.stdout.write(MIGRATE_DB_HELP + '\n')
  // A URL given as an argument is not echoed: it may hold the database password.
  if (/^postgres(ql)?:/.test(positionals[0] ?? '')) throw new UsageError('the PostgreSQL URL goes as --to postgres://… (or in FIXLOOP_DATABASE_URL), not as an argument')
  refuseArguments(positionals, 'migrate-db')
  const to = values.to ?? process.env.FIXLOOP_DATABASE_URL
  if (!to) throw new UsageError('missing --to postgres://USER:PASS@HOST:PORT/DB (or set FIXLOOP_DATABASE_URL)')
  const url = parseServiceUrl(to, '--to', ['postgres:', 'postgresql:'])!
  const batchRows = parseIntFlag(values['batch-rows'], 'batch-rows') ?? 1000
  if (batchRows < 1) throw new UsageError('--batch-rows must be at least 1')
  const config = loadConfig({ dataDir: values['data-dir'] })
  requireExistingDataDir(config.dataDir)
  const target = describeDatabase(url)
  const plan = copyPlan()

  const lock = lockDataDir(config.dataDir, 'migrating it to PostgreSQL (a running server keeps writing to it)')
  const dbFile = join(config.dataDir, DB_FILE)
  const stopInterrupts = explainInterrupts(target, dbFile)
  try {
    const source = openSqliteSource(dbFile)
    try {
      const pool = await connectPg(url, 2)
      try {
        // Refused before the migrations too, so a database in use is not even migrated.
        const occupied = await occupiedTables(pool, plan)
        if (occupied.length > 0) throw notEmpty(target, occupied)
        const applied = await migratePostgresPool(pool, url)
        if (applied.length > 0) stderr(`migrate-db: applied the PostgreSQL migrations to ${target}: ${applied.join(', ')}`)
        const report = await copyToPostgres(source, pool, { progress: stderr, batchRows, describeTarget: target })
        const key = masterKeyAdvice(config.dataDir, config.masterKey, source.masterKeyCheck())
        const blobsDir = join(config.dataDir, 'blobs')
        const notes = notesFor(report, key, source.sealedCounts(), blobsDir, countBlobs(blobsDir), dbFile)
        print(report, target, dbFile, notes, key, values.json === true)
        if (!report.ok) {
          stderr(`migrate-db: verification failed for ${report.tables.filter((t) => !t.ok).map((t) => t.table).join(', ')}: the transaction was rolled back, nothing was written to ${target}`)
          process.exitCode = 1
        }
      } finally {
        await pool.end()
      }
    } finally {
      source.close()
    }
  } finally {
    stopInterrupts()
    lock.release()
  }
}

/**
 * Ctrl-C (or SIGTERM) mid-copy: the copy's one transaction is still open, so the connection closing with the
 * process makes PostgreSQL roll it back. Say so, rather than exiting 130 in silence and leaving the operator to
 * wonder what state the target is in. Returns the function that removes the handlers.
 */
function explainInterrupts(target: string, dbFile: string): () => void {
  const onSignal = (signal: NodeJS.Signals) => {
    stderr(
      `migrate-db: interrupted (${signal}): the copy was not committed, so PostgreSQL rolls it back; no report, App or ` +
        `key was written to ${target} (its schema migrations may already be applied, which a new run accepts) and ` +
        `${dbFile} is unchanged. It is safe to run migrate-db again.`,
    )
    process.exit(signal === 'SIGINT' ? 130 : 143)
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  return () => {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}

function print(report: CopyReport, target: string, source: string, notes: string[], key: KeyAdvice, json: boolean): void {
  if (json) {
    const out = {
      ok: report.ok,
      source,
      target,
      tables: report.tables.map((t) => ({ table: t.table, rows: t.targetRows, sourceRows: t.sourceRows, checksumOk: t.ok, sha256: t.targetSha256, sourceSha256: t.sourceSha256 })),
      sequences: report.sequences,
      masterKey: { source: key.source, file: key.file, matches: key.matches ?? null },
      notes,
    }
    process.stdout.write(JSON.stringify(out) + '\n')
    return
  }
  process.stdout.write(formatTable(report.tables.map((t) => ({ table: t.table, rows: t.targetRows, source_rows: t.sourceRows, checksum: t.ok ? 'ok' : 'MISMATCH' }))))
  const rows = report.tables.reduce((n, t) => n + t.targetRows, 0)
  process.stdout.write(
    report.ok
      ? `\n${source} → ${target}: every table matches (${rows} rows in ${report.tables.length} tables); committed.\n`
      : `\n${source} → ${target}: MISMATCH; rolled back, nothing was written.\n`,
  )
  for (const s of report.sequences) process.stdout.write(`${s.table}.${s.column}: the next id is above ${s.lastValue}\n`)
  for (const n of notes) process.stdout.write(`- ${n}\n`)
}
