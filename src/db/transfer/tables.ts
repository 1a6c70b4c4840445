/**
 * What `fixloop migrate-db` copies, read from the two drizzle schema trees (src/db/schema for SQLite,
 * src/db/pg/schema for PostgreSQL) rather than written out: a table added to both trees is copied
 * without touching the copier. The trees must agree (test/schema-parity.test.ts holds that too); a
 * disagreement stops the copy before anything is written.
 *
 * Also here: the one canonical form of a value both sides are hashed in, so the verification compares
 * what SQLite held with what PostgreSQL holds, whatever each driver hands back.
 */
import { is } from 'drizzle-orm'
import { getTableConfig as sqliteConfig, SQLiteTable } from 'drizzle-orm/sqlite-core'
import { getTableConfig as pgConfig, PgTable } from 'drizzle-orm/pg-core'
import * as sqliteSchema from '../schema'
import * as pgSchema from '../pg/schema'
import { META } from '../meta-keys'
import { StartupError } from '../../core/startup-error'

/** How a column's values are converted and compared; from the pg-core column type. */
export type ColumnKind = 'text' | 'int32' | 'int64' | 'bool' | 'float'

const KIND_OF_PG: Record<string, ColumnKind> = {
  PgText: 'text',
  PgInteger: 'int32',
  PgBigInt53: 'int64',
  PgBigInt64: 'int64',
  PgBoolean: 'bool',
  PgDoublePrecision: 'float',
}

/** SQLite column type → the kinds it may be copied into (the mapping the parity test allows). */
const SQLITE_ALLOWS: Record<string, ColumnKind[]> = {
  SQLiteText: ['text'],
  SQLiteInteger: ['int32', 'int64'],
  SQLiteBoolean: ['bool'],
  SQLiteReal: ['float'],
}

export interface CopyColumn {
  name: string
  kind: ColumnKind
}

export interface CopyTable {
  name: string
  columns: CopyColumn[]
  /** Primary key columns: the order rows are read, copied and hashed in (every fixloop table has one). */
  key: string[]
  /** Tables this one references (copied before it). */
  references: string[]
}

/**
 * Rows the PostgreSQL migrations write themselves, not data: a target holding only these is empty.
 * `keep`: the target's own rows stay and the source's matching rows are not copied (nor hashed, on either
 * side): the version that migrated the PostgreSQL schema is this binary, whatever migrated the SQLite one.
 * `replace`: the target's seed rows are deleted and the source's copied, after every other table, since
 * the credential_generation triggers bump the seed row on every write to apps and api_keys.
 */
export const BOOKKEEPING: Record<string, { where: string; mode: 'keep' | 'replace' }> = {
  instance_meta: { where: `key = '${META.migratedBy}'`, mode: 'keep' },
  credential_generation: { where: 'true', mode: 'replace' },
}

/** The SQL condition (valid on both dialects) selecting the rows of `table` that are copied and compared. */
export function copiedRows(table: string): string | undefined {
  const b = BOOKKEEPING[table]
  return b?.mode === 'keep' ? `NOT (${b.where})` : undefined
}

function tablesOf<T>(schema: Record<string, unknown>, kind: new (...args: never[]) => T): T[] {
  return Object.values(schema).filter((v) => is(v, kind as never)) as T[]
}

/**
 * The tables of both trees, checked against each other, in foreign-key order (referenced first, seeded
 * last). The trees are parameters so a test can plant a disagreement.
 */
export function copyPlan(liteTree: Record<string, unknown> = sqliteSchema, pgTree: Record<string, unknown> = pgSchema): CopyTable[] {
  const lite = new Map(tablesOf(liteTree, SQLiteTable).map((t) => [sqliteConfig(t).name, sqliteConfig(t)]))
  const pg = new Map(tablesOf(pgTree, PgTable).map((t) => [pgConfig(t).name, pgConfig(t)]))
  const problems: string[] = []
  for (const name of lite.keys()) if (!pg.has(name)) problems.push(`table ${name} is in the SQLite tree only`)
  for (const name of pg.keys()) if (!lite.has(name)) problems.push(`table ${name} is in the PostgreSQL tree only`)
  const plan: CopyTable[] = []
  for (const [name, p] of pg) {
    const l = lite.get(name)
    if (!l) continue
    const liteColumns = new Map(l.columns.map((c) => [c.name, c]))
    const columns: CopyColumn[] = []
    for (const c of p.columns) {
      const kind = KIND_OF_PG[c.columnType]
      const other = liteColumns.get(c.name)
      if (!kind) problems.push(`${name}.${c.name}: migrate-db does not know how to copy the PostgreSQL type ${c.columnType}`)
      else if (!other) problems.push(`${name}.${c.name} is in the PostgreSQL tree only`)
      else if (!SQLITE_ALLOWS[other.columnType]?.includes(kind)) problems.push(`${name}.${c.name}: ${other.columnType} cannot be copied into ${c.columnType}`)
      else columns.push({ name: c.name, kind })
    }
    for (const c of l.columns) if (!p.columns.some((x) => x.name === c.name)) problems.push(`${name}.${c.name} is in the SQLite tree only`)
    const pgKey = p.primaryKeys[0]?.columns.map((c) => c.name) ?? p.columns.filter((c) => c.primary).map((c) => c.name)
    const liteKey = l.primaryKeys[0]?.columns.map((c) => c.name) ?? l.columns.filter((c) => c.primary).map((c) => c.name)
    if (pgKey.join(',') !== liteKey.join(',')) problems.push(`${name}: primary key (${liteKey.join(', ')}) on SQLite, (${pgKey.join(', ')}) on PostgreSQL`)
    if (pgKey.length === 0) problems.push(`${name} has no primary key: its rows have no order to copy and compare in`)
    const references = [...new Set(p.foreignKeys.map((fk) => pgConfig(fk.reference().foreignTable).name).filter((t) => t !== name))]
    plan.push({ name, columns, key: pgKey, references })
  }
  if (problems.length > 0) throw new Error(`the SQLite and PostgreSQL schema trees disagree, so nothing can be copied: ${problems.join('; ')}`)
  return orderForCopy(plan)
}

/** Referenced tables before the tables referencing them; `replace` bookkeeping tables last. */
export function orderForCopy(tables: CopyTable[]): CopyTable[] {
  const byName = new Map(tables.map((t) => [t.name, t]))
  const done = new Set<string>()
  const visiting = new Set<string>()
  const out: CopyTable[] = []
  const visit = (t: CopyTable) => {
    if (done.has(t.name)) return
    if (visiting.has(t.name)) throw new Error(`foreign keys form a cycle through ${t.name}: migrate-db cannot order the copy`)
    visiting.add(t.name)
    for (const r of t.references) {
      const ref = byName.get(r)
      if (ref) visit(ref)
    }
    visiting.delete(t.name)
    done.add(t.name)
    out.push(t)
  }
  const sorted = [...tables].sort((a, b) => a.name.localeCompare(b.name))
  for (const t of sorted) if (BOOKKEEPING[t.name]?.mode !== 'replace') visit(t)
  for (const t of sorted) if (BOOKKEEPING[t.name]?.mode === 'replace') visit(t)
  return out
}

const INT32_MIN = -(2n ** 31n)
const INT32_MAX = 2n ** 31n - 1n

/** A value that cannot be copied as its column's type: the operator learns where (exit 2, nothing written). */
export class UncopyableValue extends StartupError {}

/**
 * A SQLite value (read with safeIntegers: integers are bigint) as the value sent to PostgreSQL for a column
 * of `kind`: integers as decimal strings (exact beyond 2^53), SQLite's 0/1 as booleans.
 */
export function toPg(kind: ColumnKind, v: unknown, where: () => string): string | number | boolean | null {
  if (v === null || v === undefined) return null
  switch (kind) {
    case 'text':
      if (typeof v === 'string') return v
      if (typeof v === 'bigint' || typeof v === 'number') return String(v)
      throw new UncopyableValue(`${where()}: a blob where text was expected`)
    case 'int32':
    case 'int64': {
      let n: bigint
      if (typeof v === 'bigint') n = v
      else if (typeof v === 'number' && Number.isInteger(v)) n = BigInt(v)
      else if (typeof v === 'string' && /^-?\d+$/.test(v)) n = BigInt(v)
      else throw new UncopyableValue(`${where()}: ${JSON.stringify(typeof v === 'object' ? '(blob)' : v)} is not an integer`)
      if (kind === 'int32' && (n < INT32_MIN || n > INT32_MAX)) throw new UncopyableValue(`${where()}: ${n} does not fit PostgreSQL's integer (32-bit)`)
      return n.toString()
    }
    case 'bool':
      if (v === 0n || v === 0) return false
      if (v === 1n || v === 1) return true
      throw new UncopyableValue(`${where()}: ${String(v)} is not a boolean (0 or 1)`)
    case 'float':
      if (typeof v === 'number') return v
      if (typeof v === 'bigint') return Number(v)
      throw new UncopyableValue(`${where()}: ${JSON.stringify(v)} is not a number`)
  }
}

/** The canonical text of a value as sent to PostgreSQL (`toPg`'s result): what the source side hashes. */
export function canonicalOfSent(kind: ColumnKind, v: string | number | boolean | null): string | null {
  if (v === null) return null
  if (kind === 'bool') return v ? 't' : 'f'
  return String(v)
}

/** The canonical text of a value PostgreSQL returned in its text form (no type parsers): what the target side hashes. */
export function canonicalOfPgText(kind: ColumnKind, v: string | null): string | null {
  if (v === null) return null
  // PostgreSQL prints float8 in its shortest exact form; JS's String() of the same double may differ in
  // notation (1e+21 vs 1e21), so both go through a JS number.
  if (kind === 'float') return String(Number(v))
  return v
}
