/** PostgreSQL side of auth/credentials-repo.ts. */
import { and, eq, isNull } from 'drizzle-orm'
import type { CredentialsRepo } from '../../auth/credentials-repo'
import { apps } from './schema'
import { many, one, type PgStorage } from './storage'

export function createPgCredentialsRepo({ pool, db }: PgStorage): CredentialsRepo {
  return {
    credentialGeneration: async () => (await one<{ generation: number }>(pool, 'SELECT generation FROM credential_generation WHERE id = 1'))?.generation ?? NaN,
    localChanges: () => 0,
    appByPublicKey: async (publicKey) => (await db.select().from(apps).where(and(eq(apps.publicKey, publicKey), isNull(apps.deletedAt))))[0],
    publicKeyOf: async (appId) => (await one<{ publicKey: string }>(pool, 'SELECT public_key AS "publicKey" FROM apps WHERE id = $1 AND deleted_at IS NULL', [appId]))?.publicKey,
    keyByHash: (hash) => one<{ id: string; orgId: string }>(pool, 'SELECT id, org_id AS "orgId" FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL', [hash]),
    allowedOriginLists: async () => (await many<{ o: string }>(pool, 'SELECT allowed_origins AS o FROM apps WHERE deleted_at IS NULL ORDER BY id')).map((r) => r.o),
  }
}
