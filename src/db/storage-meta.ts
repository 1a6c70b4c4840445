/** The `instance_meta` key/value table on either storage (keys: META in instance-meta.ts). */
import { randomBytes } from 'node:crypto'
import type { Storage } from './storage'
import { META } from './meta-keys'
import { readMeta, writeMeta } from './sqlite/instance-meta'
import { readMetaPg, writeMetaPg } from './pg/instance-meta'

export async function readInstanceMeta(storage: Storage, key: string): Promise<string | undefined> {
  return storage.dialect === 'sqlite' ? readMeta(storage.sqlite, key) : readMetaPg(storage.pool, key)
}

export async function writeInstanceMeta(storage: Storage, key: string, value: string): Promise<void> {
  if (storage.dialect === 'sqlite') writeMeta(storage.sqlite, key, value)
  else await writeMetaPg(storage.pool, key, value)
}

/**
 * The database's cluster id (META.clusterId), made by the first caller: the insert races are settled by
 * the primary key (the first id written wins; every caller reads that one).
 */
export async function clusterIdOf(storage: Storage): Promise<string> {
  const made = randomBytes(8).toString('hex')
  if (storage.dialect === 'sqlite') {
    storage.sqlite.query('INSERT OR IGNORE INTO instance_meta (key, value, updated_at) VALUES (?, ?, ?)').run(META.clusterId, made, Date.now())
  } else {
    await storage.pool.query('INSERT INTO instance_meta (key, value, updated_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING', [META.clusterId, made, Date.now()])
  }
  return (await readInstanceMeta(storage, META.clusterId)) ?? made
}
