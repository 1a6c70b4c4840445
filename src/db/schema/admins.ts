/**
 * Dashboard administrators, their Org memberships and sessions, the first-run setup token, per-admin
 * read marks of the inbox, and the audit log. Timestamps are epoch milliseconds.
 */
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

export const admins = sqliteTable(
  'admins',
  {
    id: text('id').primaryKey(),
    /** Lower-cased; the sign-in name. */
    email: text('email').notNull(),
    /** Bun.password (argon2id) PHC string. */
    passwordHash: text('password_hash').notNull(),
    /** Instance owner: sees and administers every Org (an admin created without --org). */
    isOwner: integer('is_owner', { mode: 'boolean' }).notNull().default(false),
    /** Sealed TOTP secret (core/crypto.ts); null while TOTP is off. */
    totpSecretEnc: text('totp_secret_enc'),
    /**
     * The 30-second TOTP step whose code was last accepted: a code from that step or an earlier one is
     * refused, so a code works once (RFC 6238 section 5.2). Null until a code is used.
     */
    totpLastStep: integer('totp_last_step'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [uniqueIndex('admins_email_uq').on(t.email)],
)

export const adminMemberships = sqliteTable(
  'admin_memberships',
  {
    adminId: text('admin_id').notNull(),
    orgId: text('org_id').notNull(),
    /** owner | member */
    role: text('role').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.adminId, t.orgId] }), index('admin_memberships_org_idx').on(t.orgId)],
)

export const adminSessions = sqliteTable(
  'admin_sessions',
  {
    id: text('id').primaryKey(),
    /** SHA-256 of the cookie value: a stolen database does not hold live session cookies. */
    tokenHash: text('token_hash').notNull(),
    adminId: text('admin_id').notNull(),
    /** Sent back to the page and required on every mutation (X-CSRF-Token). */
    csrfToken: text('csrf_token').notNull(),
    userAgent: text('user_agent').notNull().default(''),
    ip: text('ip').notNull().default(''),
    createdAt: integer('created_at').notNull(),
    lastSeenAt: integer('last_seen_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    revokedAt: integer('revoked_at'),
    /**
     * Step-up re-authentication at the identity provider (SSO admins, in place of a password re-entry):
     * what it was for (one of REAUTH_PURPOSES, src/modules/admins/sessions.ts) and when. Cleared by the action that uses it.
     */
    reauthPurpose: text('reauth_purpose'),
    reauthAt: integer('reauth_at'),
    /**
     * A single sign-on session's ID token, sealed under the master key (SecretBox): the id_token_hint of
     * the provider's logout when the admin signs out (RP-initiated logout). Null for a password session,
     * and cleared when the session is revoked.
     */
    idTokenSealed: text('id_token_sealed'),
  },
  (t) => [uniqueIndex('admin_sessions_token_uq').on(t.tokenHash), index('admin_sessions_admin_idx').on(t.adminId)],
)

export const adminSetupTokens = sqliteTable('admin_setup_tokens', {
  /** SHA-256 of the token printed by `serve`. */
  tokenHash: text('token_hash').primaryKey(),
  createdAt: integer('created_at').notNull(),
  expiresAt: integer('expires_at').notNull(),
  usedAt: integer('used_at'),
})

export const adminReads = sqliteTable(
  'admin_reads',
  {
    adminId: text('admin_id').notNull(),
    feedbackId: text('feedback_id').notNull(),
    readAt: integer('read_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.adminId, t.feedbackId] }), index('admin_reads_feedback_idx').on(t.feedbackId)],
)

export const auditLog = sqliteTable(
  'audit_log',
  {
    id: text('id').primaryKey(),
    /** Null for instance-wide actions (an admin created). */
    orgId: text('org_id'),
    /** "admin:<id>", "cli" or "system". */
    actor: text('actor').notNull(),
    action: text('action').notNull(),
    /** The id acted on (App, key, admin, session). */
    targetId: text('target_id'),
    /** JSON object: ids and settings names, never secrets. */
    data: text('data').notNull().default('{}'),
    ip: text('ip'),
    createdAt: integer('created_at').notNull(),
  },
  // audit_log_org_time_idx serves the oldest-first export (GET /v1/audit): by created_at, ids tie-breaking.
  (t) => [index('audit_log_org_idx').on(t.orgId, t.id), index('audit_log_org_time_idx').on(t.orgId, t.createdAt, t.id)],
)

/**
 * Who created an `sk_` key and when it was last used (written at most once a minute per key). Kept out
 * of api_keys so these writes do not empty the credential cache.
 */
export const apiKeyActivity = sqliteTable('api_key_activity', {
  keyId: text('key_id').primaryKey(),
  /** "admin:<id>" or "cli". */
  createdBy: text('created_by'),
  lastUsedAt: integer('last_used_at'),
})
