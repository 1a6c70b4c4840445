/** SQLite side of modules/uploads/repo.ts. */
import type { Database } from 'bun:sqlite'
import { attachableSql, markReferencedSql, retireUnreferencedSql } from '../sql/upload-shares'
import type { GroupCommitter } from './group-commit'
import type { SqliteStorage } from './storage'
import { UploadGoneError, type UploadRow, type UploadsRepo } from '../../modules/uploads/repo'

/**
 * `run(feedbackId, key)`: the object now belongs to a report and is kept. Run inside the submission's
 * write (src/db/sqlite/feedback.ts); an upload another report referenced first keeps its report, and this
 * one is recorded as sharing it (src/db/sql/upload-shares.ts). An upload removed since the submission
 * checked it throws UploadGoneError (the write is undone alone: group-commit.ts).
 */
export function prepareMarkReferenced(sqlite: Database) {
  const [own, share] = markReferencedSql('?1', '?2').map((sql) => sqlite.query<unknown, [string, string]>(sql))
  const attachable = sqlite.query<{ key: string }, [string]>(attachableSql('?1'))
  return {
    run: (feedbackId: string, key: string) => {
      if (attachable.get(key) === null) throw new UploadGoneError([key])
      // The share only when the key was someone's already (the update changed nothing): almost never.
      if (own.run(feedbackId, key).changes === 0) share.run(feedbackId, key)
    },
  }
}

export function createSqliteUploadsRepo({ sqlite }: SqliteStorage, committer: GroupCommitter): UploadsRepo {
  const insert = sqlite.query(
    `INSERT INTO uploads (key, app_id, org_id, kind, content_type, byte_size, filename, created_at, expires_at, replay_state)
     VALUES ($key, $appId, $orgId, $kind, $contentType, $byteSize, $filename, $createdAt, $expiresAt, $replayState)`,
  )
  const byKey = sqlite.query<UploadRow, [string]>('SELECT * FROM uploads WHERE key = ?')
  const markUploaded = sqlite.query('UPDATE uploads SET uploaded_at = ? WHERE key = ?')
  const unreferenced = sqlite.query<{ key: string }, [number, number]>('SELECT key FROM uploads WHERE feedback_id IS NULL AND created_at < ? ORDER BY created_at LIMIT ?')
  const unreferencedBytes = sqlite.query<{ bytes: number | null }, [string, number]>(
    'SELECT SUM(byte_size) AS bytes FROM uploads INDEXED BY uploads_unreferenced_idx WHERE feedback_id IS NULL AND app_id = ? AND created_at >= ?',
  )
  const deleteRow = sqlite.query('DELETE FROM uploads WHERE key = ? AND feedback_id IS NULL')
  const retire = sqlite.query<unknown, [string]>(retireUnreferencedSql('?1'))
  const pendingReplays = sqlite.query<UploadRow, [number]>(
    "SELECT * FROM uploads WHERE replay_state = 'pending' AND feedback_id IS NOT NULL ORDER BY created_at, key LIMIT ?",
  )
  const settleReplay = sqlite.query("UPDATE uploads SET replay_state = ?, content_type = ?, byte_size = ? WHERE key = ? AND replay_state = 'pending'")
  return {
    insert: (row) => committer.run(() => void insert.run({ ...row, replayState: row.replayState ?? null })),
    byKey: async (key) => byKey.get(key) ?? undefined,
    markUploaded: (key, at) => committer.run(() => void markUploaded.run(at, key)),
    unreferenced: async (before, limit) => unreferenced.all(before, limit).map((r) => r.key),
    unreferencedBytesSince: async (appId, since) => unreferencedBytes.get(appId, since)?.bytes ?? 0,
    retireUnreferenced: async (key) => retire.run(key).changes > 0,
    deleteUnreferenced: async (key) => deleteRow.run(key).changes > 0,
    pendingReplays: async (limit) => pendingReplays.all(limit),
    settleReplay: async (key, state, contentType, byteSize) => settleReplay.run(state, contentType, byteSize, key).changes > 0,
  }
}
