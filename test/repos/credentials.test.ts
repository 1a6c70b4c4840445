/**
 * auth/credentials-repo.ts, and the credential directory over it, on both dialects: the same cases, the
 * same answers. "Another node" is a second connection (SQLite) or a second pool (PostgreSQL).
 */
import { storeOf } from '../dialects'
import { expect, test } from 'bun:test'
import { describeEachDialect, type FreshStore } from '../dialects'
import { CredentialDirectory } from '../../src/auth/directory'
import { SecretBox } from '../../src/core/crypto'
import { sha256Hex } from '../../src/core/secrets'
import { openDatabase } from '../../src/db/sqlite/client'
import { sqliteStorage } from '../../src/db/sqlite/storage'
import { pgStorage } from '../../src/db/pg/storage'
import { openPool } from '../../src/db/pg/client-options'
import type { Storage } from '../../src/db/storage'

const box = new SecretBox(new Uint8Array(32).fill(7))
const secret = new Uint8Array([1, 2, 3])
const app = (id: string, orgId: string, slug: string, allowedOrigins: string[] = []) => ({
  id, orgId, slug, name: slug, publicKey: `pub_${id}`, signingSecretEnc: box.seal(secret), allowedOrigins: JSON.stringify(allowedOrigins), createdAt: 2_000, updatedAt: 2_000,
})
const key = (id: string, orgId: string, plaintext: string) => ({ id, orgId, name: 'k', keyHash: sha256Hex(plaintext), keyPrefix: plaintext.slice(0, 7), createdAt: 3_000 })
const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

async function seed(s: FreshStore) {
  const t = s.store.tenants
  await t.insertOrg({ id: 'o1', name: 'Acme', createdAt: 1 }, [])
  await t.insertApp(app('a1', 'o1', 'web', ['https://a.example']), [])
  await t.insertApp(app('a2', 'o1', 'api', ['https://b.example']), [])
  await t.insertKey(key('k1', 'o1', 'sk_one'), null, [])
  return t
}

/** A second connection to the same store, closed by the returned function. */
function secondNode(s: FreshStore): { storage: Storage; close: () => Promise<void> } {
  if (s.dialect === 'sqlite') {
    const { sqlite, db } = openDatabase(s.location)
    return { storage: sqliteStorage(sqlite, db), close: async () => sqlite.close() }
  }
  const pool = openPool(s.location, 2)
  return { storage: pgStorage(pool), close: () => pool.end() }
}

describeEachDialect('credentials repo', (fresh) => {
  test('live Apps by public key or id, live keys by hash, origins of live Apps; the generation rises with each write', async () => {
    const s = await fresh()
    const repo = s.store.credentials
    const g0 = await repo.credentialGeneration()
    expect(typeof g0).toBe('number')
    const t = await seed(s)
    const g1 = await repo.credentialGeneration()
    expect(g1).toBeGreaterThan(g0)
    const a1 = await repo.appByPublicKey('pub_a1')
    expect(a1).toMatchObject({ id: 'a1', orgId: 'o1', slug: 'web', publicSubmissionEnabled: true, batchEnabled: false, processingMode: 'manual', deletedAt: null, createdAt: 2_000 })
    expect(typeof a1!.createdAt).toBe('number')
    expect(await repo.appByPublicKey('pub_nope')).toBeUndefined()
    expect(await repo.publicKeyOf('a2')).toBe('pub_a2')
    expect(await repo.keyByHash(sha256Hex('sk_one'))).toEqual({ id: 'k1', orgId: 'o1' })
    expect(await repo.keyByHash(sha256Hex('sk_two'))).toBeUndefined()
    expect((await repo.allowedOriginLists()).sort()).toEqual(['["https://a.example"]', '["https://b.example"]'])
    await t.updateApp('o1', 'a2', { deletedAt: 9_000, updatedAt: 9_000 }, [])
    await t.revokeKey('o1', 'k1', 9_000, [])
    expect(await repo.credentialGeneration()).toBeGreaterThan(g1)
    expect(await repo.appByPublicKey('pub_a2')).toBeUndefined()
    expect(await repo.publicKeyOf('a2')).toBeUndefined()
    expect(await repo.keyByHash(sha256Hex('sk_one'))).toBeUndefined()
    expect(await repo.allowedOriginLists()).toEqual(['["https://a.example"]'])
  })

  test('the directory caches, and drops its cache from the next turn after another node revokes or deletes', async () => {
    const s = await fresh()
    await seed(s)
    const directory = new CredentialDirectory(s.store.credentials, box)
    const known = await directory.appByPublicKey('pub_a1')
    expect(known?.row.id).toBe('a1')
    expect([...known!.signingSecret]).toEqual([...secret])
    expect(known!.allowedOrigins.has('https://a.example')).toBe(true)
    expect((await directory.appById('a1'))?.row.id).toBe('a1')
    expect(await directory.appById('nope')).toBeNull()
    expect(await directory.orgForApiKey('sk_one')).toEqual({ keyId: 'k1', orgId: 'o1' })
    expect(await directory.orgForApiKey('sk_nope')).toBeNull()
    expect(await directory.anyAppAcceptsOrigin('https://b.example')).toBe(true)
    expect(await directory.anyAppAcceptsOrigin('https://c.example')).toBe(false)
    await nextTurn()

    const other = secondNode(s)
    try {
      const t2 = storeOf(other.storage, s.clock).tenants
      await t2.revokeKey('o1', 'k1', 9_000, [])
      await t2.updateApp('o1', 'a2', { deletedAt: 9_000, updatedAt: 9_000 }, [])
    } finally {
      await other.close()
    }
    await nextTurn()
    expect(await directory.orgForApiKey('sk_one')).toBeNull()
    expect(await directory.anyAppAcceptsOrigin('https://b.example')).toBe(false)
    expect((await directory.appByPublicKey('pub_a1'))?.row.id).toBe('a1')
  })

  test('concurrent lookups in one turn share one generation read and agree', async () => {
    const s = await fresh()
    await seed(s)
    const directory = new CredentialDirectory(s.store.credentials, box)
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? directory.orgForApiKey('sk_one') : directory.appByPublicKey('pub_a1'))))
    expect(answers.every((a) => a !== null)).toBe(true)
  })
})
