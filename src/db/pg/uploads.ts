/** PostgreSQL side of modules/uploads/repo.ts. */
import type { PoolClient } from 'pg'
import { attachableSql, markReferencedSql, retireUnreferencedSql } from '../sql/upload-shares'
import type { PgGroupCommitter } from './group-commit'
import { exec, many, one, type PgStorage } from './storage'
import { UploadGoneError, type UploadRow, type UploadsRepo } from '../../modules/uploads/repo'

/**
 * Marks the objects as the report's, in the submission's transaction (src/db/pg/feedback.ts), one statement
 * each for all keys: owned when nobody owned them, else shared (src/db/sql/upload-shares.ts).
 */
const [OWN, SHARE] = markReferencedSql('$1', 'ANY($2::text[])')
// Locked (in key order, like every lock on uploads) until the submission commits: a removal deciding
// what to hand over or delete waits for it, and a removal that went first has retired the row.
const ATTACHABLE = `${attachableSql('ANY($1::text[])')} ORDER BY key COLLATE "C" FOR NO KEY UPDATE`
export async function markReferencedPg(client: PoolClient, feedbackId: string, keys: string[]): Promise<void> {
  if (keys.length === 0) return
  const attachable = new Set((await client.query<{ key: string }>(ATTACHABLE, [keys])).rows.map((r) => r.key))
  const gone = [...new Set(keys)].filter((k) => !attachable.has(k))
  if (gone.length > 0) throw new UploadGoneError(gone)
  const owned = (await client.query(OWN, [feedbackId, keys])).rowCount ?? 0
  // Almost always every key is new and now this report's: the second round trip only when one was not.
  if (owned < new Set(keys).size) await client.query(SHARE, [feedbackId, keys])
}

export function createPgUploadsRepo({ pool }: PgStorage, committer: PgGroupCommitter): UploadsRepo {
  return {
    insert: (r) =>
      committer.run(async ({ client }) => {
        await client.query(
          `INSERT INTO uploads (key, app_id, org_id, kind, content_type, byte_size, filename, created_at, expires_at, replay_state)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
          [r.key, r.appId, r.orgId, r.kind, r.contentType, r.byteSize, r.filename, r.createdAt, r.expiresAt, r.replayState ?? null],
        )
      }),
    byKey: (key) => one<UploadRow>(pool, 'SELECT * FROM uploads WHERE key = $1', [key]),
    markUploaded: (key, at) => committer.run(async ({ client }) => void (await client.query('UPDATE uploads SET uploaded_at = $1 WHERE key = $2', [at, key]))),
    unreferenced: async (before, limit) =>
      (await many<{ key: string }>(pool, 'SELECT key FROM uploads WHERE feedback_id IS NULL AND created_at < $1 ORDER BY created_at, key LIMIT $2', [before, limit])).map((r) => r.key),
    unreferencedBytesSince: async (appId, since) =>
      Number((await one<{ bytes: string | null }>(pool, 'SELECT SUM(byte_size) AS bytes FROM uploads WHERE feedback_id IS NULL AND app_id = $1 AND created_at >= $2', [appId, since]))?.bytes ?? 0),
    retireUnreferenced: async (key) => (await exec(pool, retireUnreferencedSql('$1'), [key])) > 0,
    deleteUnreferenced: async (key) => (await exec(pool, 'DELETE FROM uploads WHERE key = $1 AND feedback_id IS NULL', [key])) > 0,
    pendingReplays: (limit) => many<UploadRow>(pool, "SELECT * FROM uploads WHERE replay_state = 'pending' AND feedback_id IS NOT NULL ORDER BY created_at, key LIMIT $1", [limit]),
    settleReplay: async (key, state, contentType, byteSize) =>
      (await exec(pool, "UPDATE uploads SET replay_state = $1, content_type = $2, byte_size = $3 WHERE key = $4 AND replay_state = 'pending'", [state, contentType, byteSize, key])) > 0,
  }
}
