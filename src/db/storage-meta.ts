/** The `instance_meta` key/value table on either storage (keys: META in instance-meta.ts). */
import type { Storage } from './storage'
import { readMeta, writeMeta } from './sqlite/instance-meta'
import { readMetaPg, writeMetaPg } from './pg/instance-meta'

export async function readInstanceMeta(storage: Storage, key: string): Promise<string | undefined> {
  return storage.dialect === 'sqlite' ? readMeta(storage.sqlite, key) : readMetaPg(storage.pool, key)
}

export async function writeInstanceMeta(storage: Storage, key: string, value: string): Promise<void> {
  if (storage.dialect === 'sqlite') writeMeta(storage.sqlite, key, value)
  else await writeMetaPg(storage.pool, key, value)
}
