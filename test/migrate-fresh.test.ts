/**
 * Migrating a new SQLite database: every migration in one transaction (one commit and one sync, each
 * schema page written to the WAL once, not once per migration), so a failure leaves it empty; an
 * existing database still migrates one migration at a time, keeping those before a failure.
 */
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { openDatabase } from '../src/db/sqlite/client'
import { applyMigrations, pendingMigrations } from '../src/db/sqlite/migrate'
import { MIGRATIONS, type Migration } from '../src/db/migrations'
import { tempDir } from './temp-dirs'

function newDb() {
  // No auto-checkpoint: the WAL keeps every frame the migrating wrote.
  return openDatabase(join(tempDir('fixloop-migrate-'), 'fixloop.db'), { autoCheckpoint: false }).sqlite
}

const tables = (sqlite: ReturnType<typeof newDb>) =>
  (sqlite.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 't\\_%' ESCAPE '\\' ORDER BY name").all() as { name: string }[]).map((r) => r.name)

const broken: Migration[] = [
  { name: 'a', sql: 'CREATE TABLE t_a (id INTEGER PRIMARY KEY)' },
  { name: 'b', sql: 'CREATE TABLE t_b (id INTEGER PRIMARY KEY)' },
  { name: 'c', sql: 'CREATE TABLE t_c (id INTEGER PRIMARY KEY);\n--> statement-breakpoint\nINSERT INTO t_missing VALUES (1)' },
]

describe('a new database', () => {
  test('gets every migration in one commit: each page written to the WAL once', () => {
    const sqlite = newDb()
    try {
      expect(applyMigrations(sqlite)).toEqual(MIGRATIONS.map((m) => m.name))
      expect(pendingMigrations(sqlite)).toEqual([])
      const pages = (sqlite.query('PRAGMA page_count').get() as { page_count: number }).page_count
      const { log } = sqlite.query('PRAGMA wal_checkpoint(PASSIVE)').get() as { log: number }
      // The creating commits before the migrations (the __migrations table, the migrated-by mark after
      // them) add a few frames; one commit per migration wrote the schema pages ~40 times over.
      expect(log).toBeLessThan(pages + 16)
    } finally {
      sqlite.close()
    }
  })

  test('a failing migration leaves it with none applied', () => {
    const sqlite = newDb()
    try {
      expect(() => applyMigrations(sqlite, broken)).toThrow('no such table: t_missing')
      expect(tables(sqlite)).toEqual([])
      expect(pendingMigrations(sqlite, broken)).toEqual(['a', 'b', 'c'])
      // Fixed, it migrates from the start.
      expect(applyMigrations(sqlite, [broken[0], broken[1], { name: 'c', sql: 'CREATE TABLE t_c (id INTEGER PRIMARY KEY)' }])).toEqual(['a', 'b', 'c'])
      expect(tables(sqlite)).toEqual(['t_a', 't_b', 't_c'])
    } finally {
      sqlite.close()
    }
  })
})

describe('an existing database', () => {
  test('migrates one at a time: a failing migration keeps those before it', () => {
    const sqlite = newDb()
    try {
      expect(applyMigrations(sqlite, [broken[0]])).toEqual(['a'])
      expect(() => applyMigrations(sqlite, broken)).toThrow('no such table: t_missing')
      expect(tables(sqlite)).toEqual(['t_a', 't_b'])
      expect(pendingMigrations(sqlite, broken)).toEqual(['c'])
    } finally {
      sqlite.close()
    }
  })
})
