/** SQLite side of auth/credentials-repo.ts: prepared once per connection, asked on every cache miss. */
import type { CredentialsRepo } from '../../auth/credentials-repo'
import type { AppRow } from '../../modules/apps/repo'
import type { SqliteStorage } from './storage'

/** An `apps` row as stored (snake_case, integers for booleans). */
interface RawApp {
  id: string
  org_id: string
  slug: string
  name: string
  description: string
  public_key: string
  public_submission_enabled: number
  processing_mode: string
  batch_enabled: number
  batch_window_hours: number
  allowed_origins: string
  proof_of_work: string
  spam_events: number
  spam_retention_days: number
  retention_days: number
  replay_mode: string
  replay_seconds: number
  signing_secret_enc: string
  created_at: number
  updated_at: number
  deleted_at: number | null
}

const toAppRow = (raw: RawApp): AppRow => ({
  id: raw.id,
  orgId: raw.org_id,
  slug: raw.slug,
  name: raw.name,
  description: raw.description,
  publicKey: raw.public_key,
  publicSubmissionEnabled: !!raw.public_submission_enabled,
  processingMode: raw.processing_mode,
  batchEnabled: !!raw.batch_enabled,
  batchWindowHours: raw.batch_window_hours,
  allowedOrigins: raw.allowed_origins,
  proofOfWork: raw.proof_of_work,
  spamEvents: !!raw.spam_events,
  spamRetentionDays: raw.spam_retention_days,
  retentionDays: raw.retention_days,
  replayMode: raw.replay_mode,
  replaySeconds: raw.replay_seconds,
  signingSecretEnc: raw.signing_secret_enc,
  createdAt: raw.created_at,
  updatedAt: raw.updated_at,
  deletedAt: raw.deleted_at,
})

export function createSqliteCredentialsRepo({ sqlite }: SqliteStorage): CredentialsRepo {
  const generation = sqlite.prepare<{ generation: number }, []>('SELECT generation FROM credential_generation WHERE id = 1')
  // No table: no read transaction, no lock (a fraction of a microsecond).
  const totalChanges = sqlite.prepare<{ n: number }, []>('SELECT total_changes() AS n')
  const appByKey = sqlite.query('SELECT * FROM apps WHERE public_key = ? AND deleted_at IS NULL')
  const publicKeyById = sqlite.query('SELECT public_key FROM apps WHERE id = ? AND deleted_at IS NULL')
  const keyHashes = sqlite.query('SELECT id, org_id FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL')
  const allOrigins = sqlite.query('SELECT allowed_origins FROM apps WHERE deleted_at IS NULL')
  return {
    // No row (it is never deleted, but if it were): NaN equals nothing, so the cache is never trusted.
    credentialGeneration: async () => generation.get()?.generation ?? NaN,
    // Rows this connection has inserted, updated or deleted since it opened (triggers included).
    localChanges: () => totalChanges.get()!.n,
    appByPublicKey: async (publicKey) => {
      const raw = appByKey.get(publicKey) as RawApp | null
      return raw ? toAppRow(raw) : undefined
    },
    publicKeyOf: async (appId) => (publicKeyById.get(appId) as { public_key: string } | null)?.public_key,
    keyByHash: async (hash) => {
      const raw = keyHashes.get(hash) as { id: string; org_id: string } | null
      return raw ? { id: raw.id, orgId: raw.org_id } : undefined
    },
    allowedOriginLists: async () => (allOrigins.all() as { allowed_origins: string }[]).map((r) => r.allowed_origins),
  }
}
