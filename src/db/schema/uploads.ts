/** Upload keys issued by POST /v1/feedback/upload-url, so a key can only be used by its own App. */
import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'

export const uploads = sqliteTable(
  'uploads',
  {
    /** The opaque key handed to the client: "<appId>/<32 hex>". Also the object's name in the store. */
    key: text('key').primaryKey(),
    appId: text('app_id').notNull(),
    orgId: text('org_id').notNull(),
    kind: text('kind').notNull(),
    contentType: text('content_type').notNull(),
    byteSize: integer('byte_size').notNull(),
    filename: text('filename'),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    /** Set by the embedded store when the PUT completed (S3 uploads are checked with a stat instead). */
    uploadedAt: integer('uploaded_at'),
    /** The report that references this object; unreferenced objects are removed after a grace period. */
    feedbackId: text('feedback_id'),
    /** A session replay's scrub: 'pending' | 'ready' | 'unreadable' (src/db/schema/uploads.ts); null for other kinds. */
    replayState: text('replay_state'),
  },
  (t) => [
    index('uploads_unreferenced_idx').on(t.createdAt).where(sql`feedback_id IS NULL`),
    // A report's uploads: its attachments listed, and removed with it (src/db/sql/report-removal.ts).
    index('uploads_feedback_idx').on(t.feedbackId).where(sql`feedback_id IS NOT NULL`),
    index('uploads_replay_pending_idx').on(t.createdAt).where(sql`replay_state = 'pending' AND feedback_id IS NOT NULL`),
  ],
)


/**
 * The other reports that reference an upload its owner (`uploads.feedback_id`, the first to reference it)
 * also lists: a client may attach one uploaded object to several reports. When the owner is removed (an
 * erasure, the retention), the oldest of these takes the object over instead of it being deleted with the
 * owner (src/db/sql/upload-shares.ts). Rare, so the common submission writes nothing here.
 */
export const uploadShares = sqliteTable(
  'upload_shares',
  {
    key: text('key').notNull(),
    feedbackId: text('feedback_id').notNull(),
  },
  (t) => [primaryKey({ columns: [t.key, t.feedbackId] }), index('upload_shares_feedback_idx').on(t.feedbackId)],
)
