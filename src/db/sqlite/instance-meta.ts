/** Reads and writes the `instance_meta` key/value table (see schema/ops.ts). */
import type { Database } from 'bun:sqlite'

export { META } from '../meta-keys'

function hasTable(sqlite: Database): boolean {
  return !!sqlite.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'instance_meta'").get()
}

export function readMeta(sqlite: Database, key: string): string | undefined {
  if (!hasTable(sqlite)) return undefined
  const row = sqlite.query('SELECT value FROM instance_meta WHERE key = ?').get(key) as { value: string } | null
  return row?.value
}

export function writeMeta(sqlite: Database, key: string, value: string, now = Date.now()): void {
  sqlite
    .query('INSERT INTO instance_meta (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at')
    .run(key, value, now)
}
