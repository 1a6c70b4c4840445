/**
 * The PostgreSQL side of `fixloop migrate-db`: copies every table of the plan (tables.ts) from the SQLite
 * source into a migrated, empty PostgreSQL database, in ONE transaction: table by table in foreign-key
 * order, in multi-row INSERT batches (memory bounded by one batch), then the counters whose meaning
 * differs on PostgreSQL (identity sequences, per-Org event seqs), then a verification of every table
 * (row count and a SHA-256 over its rows in key order, each value in one canonical form on both sides).
 * Only when every table matches is the transaction committed; otherwise nothing was written.
 */
import { createHash } from 'node:crypto'
import type { Pool, PoolClient } from 'pg'
import { StartupError } from '../../core/startup-error'
import { withTransaction } from '../pg/transaction'
import type { SqliteSource } from './sqlite-source'
import { BOOKKEEPING, canonicalOfPgText, canonicalOfSent, copiedRows, copyPlan, toPg, type CopyTable } from './tables'

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`

/** PostgreSQL's limit of bind parameters per statement is 65535. */
const MAX_PARAMS = 65_000
/** A batch is also sent once its text reaches this many characters (reports can be large). */
const MAX_BATCH_CHARS = 8 * 1024 * 1024

/**
 * Tables whose PostgreSQL meaning differs: `afterCopy` turns the copied rows into it, `expected` (SQLite)
 * is what the target must then hold, so the verification still compares with the source.
 * event_counters: on SQLite a floor only (the seq of the newest event a delete removed); on PostgreSQL the
 * per-Org counter every append bumps, so it must start at the larger of the floor and the newest seq.
 */
const DERIVED: Record<string, { afterCopy: string; expected: string }> = {
  event_counters: {
    afterCopy: `INSERT INTO event_counters (org_id, last_seq) SELECT org_id, MAX(seq) FROM events GROUP BY org_id
                ON CONFLICT (org_id) DO UPDATE SET last_seq = GREATEST(event_counters.last_seq, excluded.last_seq)`,
    expected: `SELECT org_id, MAX(last_seq) AS last_seq FROM (
                 SELECT org_id, last_seq FROM event_counters UNION ALL SELECT org_id, MAX(seq) AS last_seq FROM events GROUP BY org_id
               ) GROUP BY org_id ORDER BY org_id`,
  },
}

export interface TableCheck {
  table: string
  sourceRows: number
  targetRows: number
  sourceSha256: string
  targetSha256: string
  ok: boolean
}

export interface SequenceSet {
  table: string
  column: string
  /** The last value handed out: the next insert gets a larger id. */
  lastValue: number
}

export interface CopyReport {
  tables: TableCheck[]
  sequences: SequenceSet[]
  ok: boolean
}

/** Thrown inside the transaction when a table does not match, so it rolls back; carries the report. */
class VerificationFailed extends Error {
  constructor(readonly report: CopyReport) {
    super('verification failed')
  }
}

/** Fixloop tables of `plan` that exist in the target and hold rows other than migration bookkeeping. */
export async function occupiedTables(client: Pool | PoolClient, plan: CopyTable[] = copyPlan()): Promise<string[]> {
  const out: string[] = []
  for (const t of plan) {
    const exists = await client.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [quote(t.name)])
    if (!exists.rows[0]?.present) continue
    const b = BOOKKEEPING[t.name]
    const r = await client.query(`SELECT 1 FROM ${quote(t.name)}${b ? ` WHERE NOT (${b.where})` : ''} LIMIT 1`)
    if (r.rowCount) out.push(t.name)
  }
  return out
}

/** Every column's type parser replaced by identity: values come back in PostgreSQL's own text form. */
const RAW_TEXT = { getTypeParser: () => (value: string) => value }

function orderBy(t: CopyTable): string {
  // "C" compares bytes, like SQLite's BINARY: both sides list text keys in the same order.
  return t.key.map((k) => (t.columns.find((c) => c.name === k)?.kind === 'text' ? `${quote(k)} COLLATE "C"` : quote(k))).join(', ')
}

async function insertBatch(client: PoolClient, t: CopyTable, rows: unknown[][]): Promise<void> {
  const n = t.columns.length
  const tuples = rows.map((_, i) => `(${t.columns.map((_, j) => `$${i * n + j + 1}`).join(', ')})`)
  const sql = `INSERT INTO ${quote(t.name)} (${t.columns.map((c) => quote(c.name)).join(', ')}) VALUES ${tuples.join(', ')}`
  await client.query(sql, rows.flat())
}

const keyOf = (t: CopyTable, row: Record<string, unknown>) => t.key.map((k) => String(row[k])).join('/')

async function copyTable(client: PoolClient, source: SqliteSource, t: CopyTable, progress: (line: string) => void, batchRows: number): Promise<number> {
  const where = copiedRows(t.name)
  const total = source.count(t, where)
  const perBatch = Math.max(1, Math.min(batchRows, Math.floor(MAX_PARAMS / t.columns.length)))
  let batch: unknown[][] = []
  let chars = 0
  let copied = 0
  let firstKey = ''
  let lastReport = Date.now()
  const flush = async () => {
    if (batch.length === 0) return
    try {
      await insertBatch(client, t, batch)
    } catch (e) {
      throw new StartupError(`PostgreSQL refused a row of ${t.name} (in the batch from key ${firstKey}): ${(e as Error).message}; nothing was written`)
    }
    copied += batch.length
    batch = []
    chars = 0
    if (Date.now() - lastReport >= 1000) {
      lastReport = Date.now()
      progress(`migrate-db: ${t.name}: ${copied}/${total} rows`)
    }
  }
  for (const row of source.rows(t, where)) {
    if (batch.length === 0) firstKey = keyOf(t, row)
    const values = t.columns.map((c) => {
      const v = toPg(c.kind, row[c.name], () => `${t.name}.${c.name} of the row with key ${keyOf(t, row)}`)
      if (typeof v === 'string') chars += v.length
      return v
    })
    batch.push(values)
    if (batch.length >= perBatch || chars >= MAX_BATCH_CHARS) await flush()
  }
  await flush()
  progress(`migrate-db: ${t.name}: ${copied}/${total} rows copied`)
  return copied
}

/** Identity columns of the copied tables: each sequence set past the largest id SQLite ever handed out. */
async function advanceSequences(client: PoolClient, source: SqliteSource, plan: CopyTable[]): Promise<SequenceSet[]> {
  const names = new Set(plan.map((t) => t.name))
  const identity = await client.query<{ table_name: string; column_name: string }>(
    `SELECT table_name, column_name FROM information_schema.columns
     WHERE table_schema = current_schema() AND is_identity = 'YES' ORDER BY table_name, column_name`,
  )
  const out: SequenceSet[] = []
  for (const { table_name: table, column_name: column } of identity.rows) {
    if (!names.has(table)) continue
    const max = await client.query<{ max: number | null }>(`SELECT MAX(${quote(column)}) AS max FROM ${quote(table)}`)
    // AUTOINCREMENT never reuses the id of a deleted row; neither may PostgreSQL.
    const lastValue = Math.max(max.rows[0]?.max ?? 0, source.sequence(table))
    if (lastValue < 1) continue
    await client.query('SELECT setval(pg_get_serial_sequence($1, $2), $3, true)', [quote(table), column, lastValue])
    out.push({ table, column, lastValue })
  }
  return out
}

function hashRow(hash: ReturnType<typeof createHash>, values: (string | null)[]): void {
  hash.update(JSON.stringify(values))
  hash.update('\n')
}

/** Count and SHA-256 of what the target must hold for `t`, read from SQLite. */
function sourceDigest(source: SqliteSource, t: CopyTable): { rows: number; sha256: string } {
  const hash = createHash('sha256')
  let rows = 0
  const derived = DERIVED[t.name]
  const iterator = derived ? source.query(derived.expected) : source.rows(t, copiedRows(t.name))
  for (const row of iterator) {
    hashRow(hash, t.columns.map((c) => canonicalOfSent(c.kind, toPg(c.kind, row[c.name], () => `${t.name}.${c.name}`))))
    rows++
  }
  return { rows, sha256: hash.digest('hex') }
}

/** Count and SHA-256 of what the target holds for `t`, read back through a cursor in PostgreSQL's text form. */
async function targetDigest(client: PoolClient, t: CopyTable): Promise<{ rows: number; sha256: string }> {
  const hash = createHash('sha256')
  let rows = 0
  const where = copiedRows(t.name)
  await client.query(
    `DECLARE migrate_db_verify NO SCROLL CURSOR FOR SELECT ${t.columns.map((c) => quote(c.name)).join(', ')} FROM ${quote(t.name)}${where ? ` WHERE ${where}` : ''} ORDER BY ${orderBy(t)}`,
  )
  for (;;) {
    const page = await client.query<unknown[]>({ text: 'FETCH 1000 FROM migrate_db_verify', rowMode: 'array', types: RAW_TEXT as never })
    if (page.rows.length === 0) break
    for (const row of page.rows) {
      hashRow(hash, t.columns.map((c, i) => canonicalOfPgText(c.kind, row[i] as string | null)))
      rows++
    }
  }
  await client.query('CLOSE migrate_db_verify')
  return { rows, sha256: hash.digest('hex') }
}

export interface CopyOptions {
  progress: (line: string) => void
  /** Rows per INSERT (fewer when the table is wide); 1000 by default. */
  batchRows?: number
  /** The target as messages may name it (user@host:port/db, never the password). */
  describeTarget: string
}

/**
 * Copies `source` into the (migrated) database of `pool` in one transaction and verifies it. Refuses a
 * target that already holds data. Resolves with the report; on a mismatch the report says which tables
 * and nothing was committed (`ok: false`).
 */
export async function copyToPostgres(source: SqliteSource, pool: Pool, options: CopyOptions): Promise<CopyReport> {
  const plan = copyPlan()
  try {
    return await withTransaction(pool, async (client) => {
      const occupied = await occupiedTables(client, plan)
      if (occupied.length > 0) throw notEmpty(options.describeTarget, occupied)
      for (const t of plan) {
        const b = BOOKKEEPING[t.name]
        if (b?.mode === 'replace') await client.query(`DELETE FROM ${quote(t.name)} WHERE ${b.where}`)
        await copyTable(client, source, t, options.progress, options.batchRows ?? 1000)
      }
      for (const t of plan) {
        const derived = DERIVED[t.name]
        if (derived) await client.query(derived.afterCopy)
      }
      const sequences = await advanceSequences(client, source, plan)
      options.progress('migrate-db: verifying every table (row counts and SHA-256 of the rows on both sides)')
      const tables: TableCheck[] = []
      for (const t of plan) {
        const s = sourceDigest(source, t)
        const d = await targetDigest(client, t)
        tables.push({ table: t.name, sourceRows: s.rows, targetRows: d.rows, sourceSha256: s.sha256, targetSha256: d.sha256, ok: s.rows === d.rows && s.sha256 === d.sha256 })
      }
      const report = { tables, sequences, ok: tables.every((t) => t.ok) }
      if (!report.ok) throw new VerificationFailed(report)
      return report
    })
  } catch (e) {
    if (e instanceof VerificationFailed) return e.report
    throw e
  }
}

export function notEmpty(target: string, tables: string[]): StartupError {
  return new StartupError(
    `the target database ${target} already holds fixloop data (in ${tables.join(', ')}); migrate-db copies only into an empty database. ` +
      'Create a new one (createdb, or CREATE DATABASE) and pass its URL to --to; nothing was written',
  )
}
