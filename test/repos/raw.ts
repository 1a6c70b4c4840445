/**
 * Raw fixture SQL for repository cases on either dialect: `?` placeholders (rewritten to `$n` for
 * PostgreSQL). For rows a case needs from tables outside the repository under test.
 */
import type { Storage } from '../../src/db/storage'

const numbered = (sql: string) => {
  let i = 0
  return sql.replace(/\?/g, () => `$${++i}`)
}

export async function run(storage: Storage, sql: string, params: (string | number | null)[] = []): Promise<void> {
  if (storage.dialect === 'sqlite') storage.sqlite.query(sql).run(...params)
  else await storage.pool.query(numbered(sql), params)
}

export async function rows<T>(storage: Storage, sql: string, params: (string | number | null)[] = []): Promise<T[]> {
  if (storage.dialect === 'sqlite') return storage.sqlite.query(sql).all(...params) as T[]
  return (await storage.pool.query(numbered(sql), params)).rows as T[]
}

/** A 24-hex id (the shape the dashboard names in audit pages), from a small number. */
export const ID = (n: number) => n.toString(16).padStart(24, '0')
