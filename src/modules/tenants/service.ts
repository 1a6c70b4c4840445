/**
 * Org, API-key and App administration: what the admin CLI (and the admin dashboard) does. The server
 * only reads these rows (through the credential directory), so every change here is visible to a
 * running server at once. Failures are ApiError: 4xx codes (org_not_found, app_not_found,
 * key_not_found, invalid_argument, slug_taken) with a message meant for the operator.
 */
import { ApiError } from '../../core/errors'
import type { Store } from '../../db/store'
import type { SecretBox } from '../../core/crypto'
import type { Clock } from '../../core/clock'
import { newId } from '../../core/ids'
import { isoUtc } from '../../core/clock'
import { newApiKey, newPublicKey, newSigningSecret, sha256Hex } from '../../core/secrets'
import { toApp, type AppRow } from '../apps/repo'
import { isProofOfWorkLevel, PROOF_OF_WORK_LEVELS, type ProofOfWorkLevel } from '../../abuse/difficulty'
import { isReplayMode, REPLAY_MODES, REPLAY_SECONDS_DEFAULT, REPLAY_SECONDS_MAX, REPLAY_SECONDS_MIN, RETENTION_DAYS_DEFAULT, RETENTION_DAYS_MAX, SPAM_RETENTION_DAYS_DEFAULT, SPAM_RETENTION_DAYS_MAX, type ProcessingMode, type ReplayMode } from '../apps/values'
import type { App } from '../apps/model'
import { auditEntry, type ActedBy, type AuditEntry } from '../audit/entry'

const invalid = (message: string) => new ApiError('invalid_argument', undefined, message)

export interface AppSettings {
  slug?: string
  name?: string
  description?: string
  publicSubmissionEnabled?: boolean
  allowedOrigins?: string[]
  processingMode?: ProcessingMode
  batchEnabled?: boolean
  batchWindowHours?: number
  proofOfWork?: ProofOfWorkLevel
  spamEvents?: boolean
  spamRetentionDays?: number
  retentionDays?: number
  /** Session replay; either part may be left out of an update (the other keeps its value). */
  replay?: { mode?: ReplayMode; seconds?: number }
}

/** What this service is given: the repositories and values it uses (a Context has them all). */
export interface TenantsDeps {
  store: Pick<Store, 'tenants'>
  box: SecretBox
  clock: Clock
}

/** C0 and C1 control characters and DEL (line breaks and tabs among them). */
const CONTROL_CHARACTERS = /[\x00-\x1f\x7f-\x9f]/

/** The slug of an App whose name has no letter a-z or digit to make one of ("Доставка", "配送"). */
export const FALLBACK_SLUG = 'app'

export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
  return slug || FALLBACK_SLUG
}

/** Normalises an origin ("https://A.example/" → "https://a.example"); rejects anything but an origin. */
export function normalizeOrigin(text: string): string {
  let url: URL
  try {
    url = new URL(text.trim())
  } catch {
    throw invalid(`not an origin: "${text}" (expected e.g. https://app.example.com)`)
  }
  if (!['http:', 'https:'].includes(url.protocol) || url.pathname.replace(/\/$/, '') !== '' || url.search || url.hash || url.username) {
    throw invalid(`not an origin: "${text}" (scheme://host[:port] only, no path)`)
  }
  // The URL parser keeps `*` in a host, but no browser sends it in an Origin: a pattern stored as given
  // matched no page at all, so the App silently refused its own widget.
  if (url.hostname.includes('*')) throw invalid(`not an origin: "${text}" (wildcards are not supported: list each origin, e.g. https://app.example.com,https://www.example.com)`)
  return url.origin
}

export function createTenantsService(ctx: TenantsDeps) {
  const { box, clock } = ctx
  const repo = ctx.store.tenants
  /** The audit rows of a change made by `by` (none when the caller records nobody, e.g. a test fixture). */
  const note = (by: ActedBy | undefined, orgId: string, action: string, targetId: string, data?: Record<string, unknown>): AuditEntry[] => {
    const e = auditEntry(by, orgId, action, targetId, data)
    return e ? [e] : []
  }
  const settingNames = (s: AppSettings) => Object.keys(s).filter((k) => s[k as keyof AppSettings] !== undefined)

  async function requireOrg(orgId: string) {
    const org = await repo.org(orgId)
    if (!org) throw new ApiError('org_not_found', { orgId }, `unknown org: ${orgId}`)
    return org
  }

  /**
   * An Org's or App's name: not empty, and one line of text. A name is written into mail subjects, pages and
   * terminals; a line break there ("Shop\r\nBcc: …") was folded or escaped wherever an audit looked, and is
   * now never stored.
   */
  function checkName(name: string): void {
    if (!name.trim()) throw invalid('the name must not be empty')
    if (CONTROL_CHARACTERS.test(name)) throw invalid('the name must be one line of text: no line breaks, tabs or other control characters')
  }

  async function requireApp(orgId: string, appId: string): Promise<AppRow> {
    const row = await repo.appInOrg(orgId, appId)
    if (!row) throw new ApiError('app_not_found', { appId }, `unknown app: ${appId}`)
    return row
  }

  function checkSettings(s: AppSettings): void {
    if (s.name !== undefined) checkName(s.name)
    if (s.slug !== undefined && !/^[a-z0-9][a-z0-9-]{0,63}$/.test(s.slug)) {
      throw invalid(`--slug must be lowercase letters, digits and dashes (max 64), got "${s.slug}"`)
    }
    if (s.batchWindowHours !== undefined && (!Number.isInteger(s.batchWindowHours) || s.batchWindowHours < 1 || s.batchWindowHours > 720)) {
      throw invalid(`--batch-window-hours must be an integer from 1 to 720, got "${s.batchWindowHours}"`)
    }
    if (s.proofOfWork !== undefined && !isProofOfWorkLevel(s.proofOfWork)) throw invalid(`--proof-of-work must be one of ${PROOF_OF_WORK_LEVELS.join(', ')}, got "${s.proofOfWork}"`)
    if (s.spamRetentionDays !== undefined && (!Number.isInteger(s.spamRetentionDays) || s.spamRetentionDays < 0 || s.spamRetentionDays > SPAM_RETENTION_DAYS_MAX)) {
      throw invalid(`--spam-retention-days must be an integer from 0 (keep forever) to ${SPAM_RETENTION_DAYS_MAX}, got "${s.spamRetentionDays}"`)
    }
    if (s.retentionDays !== undefined && (!Number.isInteger(s.retentionDays) || s.retentionDays < 0 || s.retentionDays > RETENTION_DAYS_MAX)) {
      throw invalid(`--retention-days must be an integer from 0 (keep forever) to ${RETENTION_DAYS_MAX}, got "${s.retentionDays}"`)
    }
    if (s.replay?.mode !== undefined && !isReplayMode(s.replay.mode)) throw invalid(`--replay must be one of ${REPLAY_MODES.join(', ')}, got "${s.replay.mode}"`)
    const seconds = s.replay?.seconds
    if (seconds !== undefined && (!Number.isInteger(seconds) || seconds < REPLAY_SECONDS_MIN || seconds > REPLAY_SECONDS_MAX)) {
      throw invalid(`--replay-seconds must be an integer from ${REPLAY_SECONDS_MIN} to ${REPLAY_SECONDS_MAX}, got "${seconds}"`)
    }
  }

  async function slugTaken(orgId: string, slug: string, exceptId?: string): Promise<boolean> {
    const row = await repo.appBySlug(orgId, slug)
    return !!row && row.id !== exceptId
  }

  /**
   * The slug of a new App: the one asked for, else its name's. A name with nothing to make a slug of gets
   * the first free of app, app-2, app-3, …: every App named in Cyrillic, Chinese or Arabic came out "app",
   * so an Org's second one was refused as slug_taken, and the dashboard's form has no slug field to get
   * past it. A Latin name keeps its one slug (a second "Shop" is refused: --slug tells them apart).
   */
  async function newAppSlug(orgId: string, s: { name: string; slug?: string }): Promise<string> {
    if (s.slug !== undefined) return s.slug
    const slug = slugify(s.name)
    if (slug !== FALLBACK_SLUG) return slug
    const used = new Set((await repo.apps(orgId)).map((a) => a.slug))
    let n = 1
    while (used.has(n === 1 ? slug : `${slug}-${n}`)) n++
    return n === 1 ? slug : `${slug}-${n}`
  }

  return {
    /** The Org of a live App, for callers that hold only an App id (the operator's CLI). */
    async orgOfApp(appId: string): Promise<string> {
      const row = await repo.liveApp(appId)
      if (!row) throw new ApiError('app_not_found', { appId }, `unknown app: ${appId}`)
      return row.orgId
    },

    /** The Org of an API key, for callers that hold only a key id (the operator's CLI). */
    async orgOfKey(keyId: string): Promise<string> {
      const key = await repo.key(keyId)
      if (!key) throw new ApiError('key_not_found', { keyId }, `unknown key: ${keyId}`)
      return key.orgId
    },

    /** Changes made `by` someone are audited in their own transaction. */
    async createOrg(name: string, by?: ActedBy): Promise<{ id: string; name: string; createdAt: string }> {
      checkName(name)
      const row = { id: newId(clock), name: name.trim(), createdAt: clock.now() }
      await repo.insertOrg(row, note(by, row.id, 'org.created', row.id, { name: row.name }))
      return { id: row.id, name: row.name, createdAt: isoUtc(row.createdAt) }
    },

    async listOrgs() {
      return (await repo.orgs()).map((o) => ({ id: o.id, name: o.name, createdAt: isoUtc(o.createdAt) }))
    },

    /** Creates an `sk_` key; the plaintext is returned once and only its hash is stored. */
    async createKey(orgId: string, name = '', by?: ActedBy): Promise<{ id: string; key: string; orgId: string; name: string }> {
      await requireOrg(orgId)
      const key = newApiKey()
      const id = newId(clock)
      await repo.insertKey({ id, orgId, name, keyHash: sha256Hex(key), keyPrefix: key.slice(0, 7), createdAt: clock.now() }, by ? (by.label ?? by.actor) : null, note(by, orgId, 'key.created', id, { name }))
      return { id, key, orgId, name }
    },

    async listKeys(orgId: string) {
      await requireOrg(orgId)
      return (await repo.keys(orgId)).map((k) => ({ id: k.id, name: k.name, prefix: k.keyPrefix, createdAt: isoUtc(k.createdAt), revokedAt: k.revokedAt ? isoUtc(k.revokedAt) : null }))
    },

    async revokeKey(orgId: string, keyId: string, by?: ActedBy): Promise<{ id: string; revokedAt: string }> {
      const key = await repo.key(keyId)
      if (!key || key.orgId !== orgId) throw new ApiError('key_not_found', { keyId }, `unknown key: ${keyId}`)
      const at = key.revokedAt ?? (await repo.revokeKey(orgId, keyId, clock.now(), note(by, orgId, 'key.revoked', keyId)))
      return { id: keyId, revokedAt: isoUtc(at) }
    },

    /** A new key with the old one's name, and the old one revoked, in one transaction. */
    async rotateKey(keyId: string, by?: ActedBy): Promise<{ id: string; key: string; revoked: string }> {
      const old = await repo.key(keyId)
      if (!old) throw new ApiError('key_not_found', { keyId }, `unknown key: ${keyId}`)
      if (old.revokedAt) throw invalid(`key ${keyId} is already revoked; create a new one with "fixloop key create"`)
      const key = newApiKey()
      const id = newId(clock)
      const now = clock.now()
      await repo.rotateKey({ id, orgId: old.orgId, name: old.name, keyHash: sha256Hex(key), keyPrefix: key.slice(0, 7), createdAt: now }, keyId, now, [
        ...note(by, old.orgId, 'key.created', id, { name: old.name, rotatedFrom: keyId }),
        ...note(by, old.orgId, 'key.revoked', keyId, { rotatedTo: id }),
      ])
      return { id, key, revoked: keyId }
    },

    async createApp(orgId: string, s: AppSettings & { name: string }, by?: ActedBy): Promise<App & { signingSecret: string }> {
      await requireOrg(orgId)
      checkSettings(s)
      const slug = await newAppSlug(orgId, s)
      const taken = () => new ApiError('slug_taken', { slug }, `slug "${slug}" is already used in this org; pass --slug`)
      if (await slugTaken(orgId, slug)) throw new ApiError('slug_taken', { slug }, `slug "${slug}" is already used in this org; pass --slug`)
      const secret = newSigningSecret()
      const now = clock.now()
      const row = {
        id: newId(clock),
        orgId,
        slug,
        name: s.name.trim(),
        description: s.description ?? '',
        publicKey: newPublicKey(),
        publicSubmissionEnabled: s.publicSubmissionEnabled ?? true,
        processingMode: s.processingMode ?? 'manual',
        batchEnabled: s.batchEnabled ?? false,
        batchWindowHours: s.batchWindowHours ?? 24,
        proofOfWork: s.proofOfWork ?? 'off',
        spamEvents: s.spamEvents ?? false,
        spamRetentionDays: s.spamRetentionDays ?? SPAM_RETENTION_DAYS_DEFAULT,
        retentionDays: s.retentionDays ?? RETENTION_DAYS_DEFAULT,
        replayMode: s.replay?.mode ?? 'off',
        replaySeconds: s.replay?.seconds ?? REPLAY_SECONDS_DEFAULT,
        allowedOrigins: JSON.stringify((s.allowedOrigins ?? []).map(normalizeOrigin)),
        signingSecretEnc: box.seal(secret),
        createdAt: now,
        updatedAt: now,
      }
      // The check above gives the usual answer; the unique index settles a race with another writer.
      if (!(await repo.insertApp(row, note(by, orgId, 'app.created', row.id, { settings: settingNames(s) })))) throw taken()
      return { ...toApp(await requireApp(orgId, row.id)), signingSecret: secret.toString('hex') }
    },

    async listApps(orgId: string): Promise<App[]> {
      await requireOrg(orgId)
      return (await repo.apps(orgId)).map(toApp)
    },

    async updateApp(orgId: string, appId: string, s: AppSettings, by?: ActedBy): Promise<App> {
      await requireApp(orgId, appId)
      checkSettings(s)
      const taken = () => new ApiError('slug_taken', { slug: s.slug }, `slug "${s.slug}" is already used in this org`)
      if (s.slug !== undefined && (await slugTaken(orgId, s.slug, appId))) throw taken()
      const patch: Partial<AppRow> = { updatedAt: clock.now() }
      if (s.slug !== undefined) patch.slug = s.slug
      if (s.name !== undefined) patch.name = s.name.trim()
      if (s.description !== undefined) patch.description = s.description
      if (s.publicSubmissionEnabled !== undefined) patch.publicSubmissionEnabled = s.publicSubmissionEnabled
      if (s.processingMode !== undefined) patch.processingMode = s.processingMode
      if (s.batchEnabled !== undefined) patch.batchEnabled = s.batchEnabled
      if (s.batchWindowHours !== undefined) patch.batchWindowHours = s.batchWindowHours
      if (s.proofOfWork !== undefined) patch.proofOfWork = s.proofOfWork
      if (s.spamEvents !== undefined) patch.spamEvents = s.spamEvents
      if (s.spamRetentionDays !== undefined) patch.spamRetentionDays = s.spamRetentionDays
      if (s.retentionDays !== undefined) patch.retentionDays = s.retentionDays
      if (s.replay?.mode !== undefined) patch.replayMode = s.replay.mode
      if (s.replay?.seconds !== undefined) patch.replaySeconds = s.replay.seconds
      if (s.allowedOrigins !== undefined) patch.allowedOrigins = JSON.stringify(s.allowedOrigins.map(normalizeOrigin))
      if (!(await repo.updateApp(orgId, appId, patch, note(by, orgId, 'app.updated', appId, { settings: settingNames(s) })))) throw taken()
      return toApp(await requireApp(orgId, appId))
    },

    /** Replaces the signing secret: every token signed with the old one fails at once. */
    async rotateSecret(orgId: string, appId: string, by?: ActedBy): Promise<{ signingSecret: string }> {
      await requireApp(orgId, appId)
      const secret = newSigningSecret()
      await repo.updateApp(orgId, appId, { signingSecretEnc: box.seal(secret), updatedAt: clock.now() }, note(by, orgId, 'app.secret_rotated', appId))
      return { signingSecret: secret.toString('hex') }
    },

    /** Soft-deletes: the public key stops working (401 unknown_app); stored feedback stays readable. */
    async deleteApp(orgId: string, appId: string, by?: ActedBy): Promise<{ id: string; deletedAt: string }> {
      await requireApp(orgId, appId)
      const at = clock.now()
      await repo.updateApp(orgId, appId, { deletedAt: at, updatedAt: at }, note(by, orgId, 'app.deleted', appId))
      return { id: appId, deletedAt: isoUtc(at) }
    },
  }
}
export type TenantsService = ReturnType<typeof createTenantsService>
