/**
 * Every column that holds a sealed value is in the registry `fixloop rekey` walks (src/db/sealed-columns.ts):
 * a sealed column missing from it would stay sealed under the old key after a rekey, and be unreadable.
 * Sealed columns are named `*_enc` or `*_sealed` (the schema's convention); this reads the SQLite schema
 * tree (the PostgreSQL one is held to the same columns by test/schema-parity.test.ts).
 */
import { expect, test } from 'bun:test'
import { is } from 'drizzle-orm'
import { getTableConfig, SQLiteTable } from 'drizzle-orm/sqlite-core'
import * as schema from '../src/db/schema'
import { sealedColumns } from '../src/db/sealed-columns'

test('every *_enc / *_sealed column of the schema is registered for rekey, and every registered one exists', () => {
  const inSchema: string[] = []
  for (const table of Object.values(schema)) {
    if (!is(table, SQLiteTable)) continue
    const config = getTableConfig(table)
    for (const column of config.columns) if (/_(enc|sealed)$/.test(column.name)) inSchema.push(`${config.name}.${column.name}`)
  }
  const registered = sealedColumns().map((c) => `${c.table}.${c.column}`)
  expect(inSchema.length).toBeGreaterThan(10)
  expect([...registered].sort()).toEqual([...inSchema].sort())
})
