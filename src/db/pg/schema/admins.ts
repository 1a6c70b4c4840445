/** Administrators, memberships, sessions, setup tokens, read marks, audit: the twin of src/db/schema/admins.ts. */
import { boolean, index, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { counter, epochMs } from './columns'

export const admins = pgTable(
  'admins',
  {
    id: text('id').primaryKey(),
    email: text('email').notNull(),
    passwordHash: text('password_hash').notNull(),
    isOwner: boolean('is_owner').notNull().default(false),
    totpSecretEnc: text('totp_secret_enc'),
    totpLastStep: counter('totp_last_step'),
    createdAt: epochMs('created_at').notNull(),
    updatedAt: epochMs('updated_at').notNull(),
  },
  (t) => [uniqueIndex('admins_email_uq').on(t.email)],
)

export const adminMemberships = pgTable(
  'admin_memberships',
  {
    adminId: text('admin_id').notNull(),
    orgId: text('org_id').notNull(),
    role: text('role').notNull(),
    createdAt: epochMs('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.adminId, t.orgId] }), index('admin_memberships_org_idx').on(t.orgId)],
)

export const adminSessions = pgTable(
  'admin_sessions',
  {
    id: text('id').primaryKey(),
    tokenHash: text('token_hash').notNull(),
    adminId: text('admin_id').notNull(),
    csrfToken: text('csrf_token').notNull(),
    userAgent: text('user_agent').notNull().default(''),
    ip: text('ip').notNull().default(''),
    createdAt: epochMs('created_at').notNull(),
    lastSeenAt: epochMs('last_seen_at').notNull(),
    expiresAt: epochMs('expires_at').notNull(),
    revokedAt: epochMs('revoked_at'),
    reauthPurpose: text('reauth_purpose'),
    reauthAt: epochMs('reauth_at'),
    idTokenSealed: text('id_token_sealed'),
  },
  (t) => [uniqueIndex('admin_sessions_token_uq').on(t.tokenHash), index('admin_sessions_admin_idx').on(t.adminId)],
)

export const adminSetupTokens = pgTable('admin_setup_tokens', {
  tokenHash: text('token_hash').primaryKey(),
  createdAt: epochMs('created_at').notNull(),
  expiresAt: epochMs('expires_at').notNull(),
  usedAt: epochMs('used_at'),
})

export const adminReads = pgTable(
  'admin_reads',
  {
    adminId: text('admin_id').notNull(),
    feedbackId: text('feedback_id').notNull(),
    readAt: epochMs('read_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.adminId, t.feedbackId] }), index('admin_reads_feedback_idx').on(t.feedbackId)],
)

export const auditLog = pgTable(
  'audit_log',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id'),
    actor: text('actor').notNull(),
    action: text('action').notNull(),
    targetId: text('target_id'),
    data: text('data').notNull().default('{}'),
    ip: text('ip'),
    createdAt: epochMs('created_at').notNull(),
  },
  // audit_log_org_time_idx serves the oldest-first export (GET /v1/audit): by created_at, ids tie-breaking.
  (t) => [index('audit_log_org_idx').on(t.orgId, t.id), index('audit_log_org_time_idx').on(t.orgId, t.createdAt, t.id)],
)

export const apiKeyActivity = pgTable('api_key_activity', {
  keyId: text('key_id').primaryKey(),
  createdBy: text('created_by'),
  lastUsedAt: epochMs('last_used_at'),
})
