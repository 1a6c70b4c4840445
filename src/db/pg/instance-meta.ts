/** Reads and writes the `instance_meta` key/value table on PostgreSQL (keys: src/db/sqlite/instance-meta.ts META). */
import type { PgQueryable } from './storage'

export async function readMetaPg(q: PgQueryable, key: string): Promise<string | undefined> {
  const { rows } = await q.query<{ value: string }>('SELECT value FROM instance_meta WHERE key = $1', [key])
  return rows[0]?.value
}

export async function writeMetaPg(q: PgQueryable, key: string, value: string, now = Date.now()): Promise<void> {
  await q.query(
    'INSERT INTO instance_meta (key, value, updated_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at',
    [key, value, now],
  )
}
