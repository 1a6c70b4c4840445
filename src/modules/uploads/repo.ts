/**
 * Upload keys: issued (POST /v1/feedback/upload-url), marked uploaded by an embedded PUT, marked as a
 * report's by the submission that references them (inside the submission's own transaction: the
 * feedback repository's sides call `markReferenced` of their dialect), and removed when never referenced.
 *
 * The port: this interface, a SQLite side (src/db/sqlite/uploads.ts) and a PostgreSQL side
 * (src/db/pg/uploads.ts), held to test/repos/uploads.test.ts. Writes on the request path go through the
 * intake group commit, like the submission's.
 */

/** An upload row as stored (column names as in the table, on both dialects). */
export interface UploadRow {
  key: string
  app_id: string
  org_id: string
  kind: string
  content_type: string
  byte_size: number
  filename: string | null
  created_at: number
  expires_at: number
  uploaded_at: number | null
  feedback_id: string | null
  /** Kind 'replay' only: 'pending' | 'ready' | 'unreadable' (src/db/schema/uploads.ts). */
  replay_state: string | null
}

/** Where a session replay's scrub stands: pending until the worker has scrubbed it (or found it unreadable). */
export type ReplayState = 'pending' | 'ready' | 'unreadable'

export interface NewUpload {
  key: string
  appId: string
  orgId: string
  kind: string
  contentType: string
  byteSize: number
  filename: string | null
  createdAt: number
  expiresAt: number
  /** 'pending' for kind 'replay', null otherwise. */
  replayState?: ReplayState | null
}

export interface UploadsRepo {
  insert(row: NewUpload): Promise<void>
  byKey(key: string): Promise<UploadRow | undefined>
  markUploaded(key: string, at: number): Promise<void>
  /** Keys issued before `before` that no report references, oldest first. */
  unreferenced(before: number, limit: number): Promise<string[]>
  /** The bytes announced by the App's uploads issued at or after `since` that no report references (yet). */
  unreferencedBytesSince(appId: string, since: number): Promise<number>
  /**
   * Before a never-referenced upload's object is removed: marks it on its way out (src/db/sql/upload-shares.ts),
   * so no submission attaches it any more; false (and nothing changed) when a report referenced it meanwhile.
   */
  retireUnreferenced(key: string): Promise<boolean>
  /** Deletes the row unless a report referenced it meanwhile; whether it did. */
  deleteUnreferenced(key: string): Promise<boolean>
  /** Replays a report references that wait for their scrub, oldest first. */
  pendingReplays(limit: number): Promise<UploadRow[]>
  /**
   * Records a replay's scrub: its state, and the stored object's type and size now (the scrubbed gzip);
   * only while it is still pending, so a second scrub of the same replay changes nothing. Whether it did.
   */
  settleReplay(key: string, state: Exclude<ReplayState, 'pending'>, contentType: string, byteSize: number): Promise<boolean>
}

/**
 * Thrown inside a submission's transaction when a key it checked was removed before the transaction ran
 * (its report erased or expired, or collected as never referenced): the submission is refused (400) and
 * stores nothing; the client uploads the file again.
 */
export class UploadGoneError extends Error {
  constructor(readonly keys: string[]) {
    super('an upload this submission references was removed meanwhile')
  }
}
