/** Upload keys issued by POST /v1/feedback/upload-url: the PostgreSQL twin of src/db/schema/uploads.ts. */
import { sql } from 'drizzle-orm'
import { index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { epochMs } from './columns'

export const uploads = pgTable(
  'uploads',
  {
    key: text('key').primaryKey(),
    appId: text('app_id').notNull(),
    orgId: text('org_id').notNull(),
    kind: text('kind').notNull(),
    contentType: text('content_type').notNull(),
    byteSize: integer('byte_size').notNull(),
    filename: text('filename'),
    createdAt: epochMs('created_at').notNull(),
    expiresAt: epochMs('expires_at').notNull(),
    uploadedAt: epochMs('uploaded_at'),
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

/** The other reports that reference an upload: the twin of src/db/schema/uploads.ts `uploadShares`. */
export const uploadShares = pgTable(
  'upload_shares',
  {
    key: text('key').notNull(),
    feedbackId: text('feedback_id').notNull(),
  },
  (t) => [primaryKey({ columns: [t.key, t.feedbackId] }), index('upload_shares_feedback_idx').on(t.feedbackId)],
)
