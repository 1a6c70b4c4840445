/**
 * The two schema trees describe one database: src/db/schema (SQLite) and src/db/pg/schema (PostgreSQL)
 * must have the same tables, columns, nullability, defaults, primary keys, foreign keys, indexes and
 * uniques; only the column types differ, by a fixed mapping. A table or column added to one tree fails
 * here until the other has it. A second part applies migrations-pg/ to a real PostgreSQL and checks that
 * the migrated database is what the pg-core tree says (so no schema change ships without its migration).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { is, SQL, Table } from 'drizzle-orm'
import { getTableConfig as sqliteConfig, SQLiteTable } from 'drizzle-orm/sqlite-core'
import { getTableConfig as pgConfig, PgTable } from 'drizzle-orm/pg-core'
import type { Pool } from 'pg'
import { openPool } from '../src/db/pg/client-options'
import * as sqliteSchema from '../src/db/schema'
import * as pgSchema from '../src/db/pg/schema'
import { applyPgMigrations, pendingPgMigrations, unknownPgMigrations } from '../src/db/pg/migrate'
import { PG_MIGRATIONS } from '../src/db/pg/migrations'
import { pgMissingReason, startPostgres, type PgServer } from './pg-server'

/** SQLite column type → the PostgreSQL types that may stand for it. */
const TYPE_MAP: Record<string, string[]> = {
  SQLiteText: ['PgText'],
  SQLiteInteger: ['PgInteger', 'PgBigInt53'],
  SQLiteBoolean: ['PgBoolean'],
  SQLiteReal: ['PgDoublePrecision'],
}

/** The text of a `sql\`…\`` fragment (partial-index predicates), whitespace-normalised. */
function sqlText(fragment: SQL | undefined): string | null {
  if (!fragment) return null
  const parts = fragment.queryChunks.map((chunk) => {
    const value = (chunk as { value?: unknown }).value
    if (Array.isArray(value)) return value.join('')
    throw new Error('index predicates must be plain sql`` text so both dialects can be compared')
  })
  return parts.join('').replace(/\s+/g, ' ').trim()
}

interface Shape {
  columns: Record<string, { type: string; notNull: boolean; default: unknown; primary: boolean }>
  primaryKeys: string[][]
  foreignKeys: string[]
  indexes: Record<string, { columns: string[]; unique: boolean; where: string | null }>
}

type AnyConfig = ReturnType<typeof sqliteConfig> | ReturnType<typeof pgConfig>

function shapeOf(config: AnyConfig): Shape {
  const columns: Shape['columns'] = {}
  for (const c of config.columns) columns[c.name] = { type: c.columnType, notNull: c.notNull, default: c.default, primary: c.primary }
  const indexes: Shape['indexes'] = {}
  for (const index of config.indexes) {
    const cfg = index.config as { name: string; columns: { name: string }[]; unique: boolean; where?: SQL }
    indexes[cfg.name] = { columns: cfg.columns.map((c) => c.name), unique: cfg.unique, where: sqlText(cfg.where) }
  }
  return {
    columns,
    primaryKeys: config.primaryKeys.map((pk) => pk.columns.map((c) => c.name)),
    foreignKeys: config.foreignKeys
      .map((fk) => {
        const ref = fk.reference()
        return `${ref.columns.map((c) => c.name).join(',')} -> ${(ref.foreignTable as Table)[Symbol.for('drizzle:Name') as never] ?? ''}(${ref.foreignColumns.map((c) => c.name).join(',')})`
      })
      .sort(),
    indexes,
  }
}

function tablesOf<T>(schema: Record<string, unknown>, kind: new (...args: never[]) => T, config: (t: T) => AnyConfig): Map<string, Shape> {
  const out = new Map<string, Shape>()
  for (const value of Object.values(schema)) {
    if (!is(value, kind as never)) continue
    const cfg = config(value as T)
    out.set(cfg.name, shapeOf(cfg))
  }
  return out
}

const sqliteTables = tablesOf(sqliteSchema, SQLiteTable, (t) => sqliteConfig(t as SQLiteTable))
const pgTables = tablesOf(pgSchema, PgTable, (t) => pgConfig(t as PgTable))

describe('schema parity: SQLite and PostgreSQL trees', () => {
  test('both trees have the same tables', () => {
    expect(sqliteTables.size).toBeGreaterThan(20)
    expect([...pgTables.keys()].sort()).toEqual([...sqliteTables.keys()].sort())
  })

  for (const [name, lite] of sqliteTables) {
    test(`${name}: same columns, keys and indexes`, () => {
      const pg = pgTables.get(name)
      expect(pg).toBeDefined()
      if (!pg) return
      expect(Object.keys(pg.columns).sort()).toEqual(Object.keys(lite.columns).sort())
      for (const [column, l] of Object.entries(lite.columns)) {
        const p = pg.columns[column]!
        expect({ column, notNull: p.notNull, default: p.default, primary: p.primary }).toEqual({ column, notNull: l.notNull, default: l.default, primary: l.primary })
        expect({ column, type: TYPE_MAP[l.type]?.includes(p.type) ? 'compatible' : `${l.type} vs ${p.type}` }).toEqual({ column, type: 'compatible' })
      }
      expect(pg.primaryKeys).toEqual(lite.primaryKeys)
      expect(pg.foreignKeys).toEqual(lite.foreignKeys)
      expect(pg.indexes).toEqual(lite.indexes)
    })
  }

  test('the detector sees a difference (a planted extra column fails)', () => {
    const lite = sqliteTables.get('orgs')!
    const planted: Shape = { ...lite, columns: { ...lite.columns, extra: { type: 'SQLiteText', notNull: false, default: undefined, primary: false } } }
    expect(Object.keys(planted.columns).sort()).not.toEqual(Object.keys(pgTables.get('orgs')!.columns).sort())
  })
})

/** information_schema's data_type for each pg-core column type. */
const PG_DATA_TYPE: Record<string, string> = { PgText: 'text', PgInteger: 'integer', PgBigInt53: 'bigint', PgBoolean: 'boolean', PgDoublePrecision: 'double precision' }

const skip = pgMissingReason()
if (skip) console.warn(`schema-parity: PostgreSQL part skipped: ${skip}`)

describe.skipIf(Boolean(skip))('migrations-pg on a real PostgreSQL', () => {
  let server: PgServer
  let pool: Pool
  let url: string
  const rowsOf = async <T,>(text: string, values: unknown[] = []) => (await pool.query(text, values)).rows as T[]

  beforeAll(async () => {
    server = await startPostgres()
    url = await server.createDatabase('parity')
    pool = openPool(url, 4)
  })
  afterAll(async () => {
    await pool?.end()
    await server?.stop()
  })

  test('three nodes migrating at once apply each migration exactly once', async () => {
    const nodes = [0, 1, 2].map(() => openPool(url, 1))
    const results = await Promise.all(nodes.map((n) => applyPgMigrations(n)))
    await Promise.all(nodes.map((n) => n.end()))
    expect(results.flat().sort()).toEqual(PG_MIGRATIONS.map((m) => m.name).sort())
    const rows = await rowsOf<{ name: string }>('SELECT name FROM __migrations ORDER BY name')
    expect(rows.map((r) => r.name)).toEqual(PG_MIGRATIONS.map((m) => m.name))
    expect(await pendingPgMigrations(pool)).toEqual([])
    expect(await applyPgMigrations(pool)).toEqual([])
  })

  test('the migrated database has exactly the columns of the pg-core tree', async () => {
    const rows = await rowsOf<{ table_name: string; column_name: string; data_type: string; is_nullable: string }>(
      `SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns
       WHERE table_schema = 'public' AND table_name <> '__migrations'`,
    )
    const actual = rows.map((r) => `${r.table_name}.${r.column_name} ${r.data_type} ${r.is_nullable === 'NO' ? 'not null' : 'null'}`).sort()
    const expected = [...pgTables].flatMap(([table, shape]) =>
      Object.entries(shape.columns).map(([column, c]) => `${table}.${column} ${PG_DATA_TYPE[c.type]} ${c.notNull ? 'not null' : 'null'}`),
    ).sort()
    expect(actual).toEqual(expected)
  })

  test('the migrated database has exactly the indexes of the pg-core tree (and their uniqueness)', async () => {
    // Primary keys are compared above (as columns); here every other index, whatever its name.
    const rows = await rowsOf<{ name: string; unique: boolean }>(
      `SELECT i.relname AS name, x.indisunique AS unique FROM pg_index x
       JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_namespace n ON n.oid = i.relnamespace
       WHERE n.nspname = 'public' AND NOT x.indisprimary`,
    )
    const actual = rows.map((r) => `${r.name}${r.unique ? ' unique' : ''}`).sort()
    const expected = [...pgTables].flatMap(([, shape]) => Object.entries(shape.indexes).map(([name, i]) => `${name}${i.unique ? ' unique' : ''}`)).sort()
    expect(actual).toEqual(expected)
  })

  test('writes to apps and api_keys raise the credential generation (the trigger of 0001)', async () => {
    const gen = async () => Number((await rowsOf<{ generation: string }>('SELECT generation FROM credential_generation WHERE id = 1'))[0]!.generation)
    const before = await gen()
    await pool.query("INSERT INTO orgs (id, name, created_at) VALUES ('o1', 'Acme', 1)")
    expect(await gen()).toBe(before) // other tables leave it alone
    await pool.query("INSERT INTO api_keys (id, org_id, key_hash, key_prefix, created_at) VALUES ('k1', 'o1', 'h', 'sk_', 1)")
    expect(await gen()).toBe(before + 1)
    await pool.query("UPDATE api_keys SET revoked_at = 2 WHERE id = 'k1'")
    expect(await gen()).toBe(before + 2)
  })

  test('a database migrated by a newer fixloop is recognised', async () => {
    await pool.query("INSERT INTO __migrations (name, applied_at) VALUES ('9999_from_the_future', 1)")
    expect(await unknownPgMigrations(pool)).toEqual(['9999_from_the_future'])
    await pool.query("DELETE FROM __migrations WHERE name = '9999_from_the_future'")
    expect(await unknownPgMigrations(pool)).toEqual([])
  })
})
