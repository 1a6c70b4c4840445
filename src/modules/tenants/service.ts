/**
 * Org, API-key and App administration: what the admin CLI (and the admin dashboard) does. The server
 * only reads these rows (through the credential directory), so every change here is visible to a
 * running server at once. Failures are ApiError: 4xx codes (org_not_found, app_not_found,
 * key_not_found, invalid_argument, slug_taken) with a message meant for the operator.
 */
import type { Context } from '../../context'
import { ApiError } from '../../core/errors'
import { newId } from '../../core/ids'
import { isoUtc } from '../../core/clock'
import { newApiKey, newPublicKey, newSigningSecret, sha256Hex } from '../../core/secrets'
import { toApp, type AppRow } from '../apps/repo'
import type { App, ProcessingMode } from '../apps/model'
import { createTenantsRepo } from './repo'

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
}

export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
  return slug || 'app'
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
  return url.origin
}

export function createTenantsService(ctx: Context) {
  const { box, clock } = ctx
  const repo = createTenantsRepo(ctx.db)

  function requireOrg(orgId: string) {
    const org = repo.org(orgId)
    if (!org) throw new ApiError('org_not_found', { orgId }, `unknown org: ${orgId}`)
    return org
  }

  function requireApp(orgId: string, appId: string): AppRow {
    const row = repo.appInOrg(orgId, appId)
    if (!row) throw new ApiError('app_not_found', { appId }, `unknown app: ${appId}`)
    return row
  }

  function checkSettings(s: AppSettings): void {
    if (s.name !== undefined && !s.name.trim()) throw invalid('--name must not be empty')
    if (s.slug !== undefined && !/^[a-z0-9][a-z0-9-]{0,63}$/.test(s.slug)) {
      throw invalid(`--slug must be lowercase letters, digits and dashes (max 64), got "${s.slug}"`)
    }
    if (s.batchWindowHours !== undefined && (!Number.isInteger(s.batchWindowHours) || s.batchWindowHours < 1 || s.batchWindowHours > 720)) {
      throw invalid(`--batch-window-hours must be an integer from 1 to 720, got "${s.batchWindowHours}"`)
    }
  }

  function slugTaken(orgId: string, slug: string, exceptId?: string): boolean {
    const row = repo.appBySlug(orgId, slug)
    return !!row && row.id !== exceptId
  }

  return {
    /** The Org of a live App, for callers that hold only an App id (the operator's CLI). */
    orgOfApp(appId: string): string {
      const row = repo.liveApp(appId)
      if (!row) throw new ApiError('app_not_found', { appId }, `unknown app: ${appId}`)
      return row.orgId
    },

    /** The Org of an API key, for callers that hold only a key id (the operator's CLI). */
    orgOfKey(keyId: string): string {
      const key = repo.key(keyId)
      if (!key) throw new ApiError('key_not_found', { keyId }, `unknown key: ${keyId}`)
      return key.orgId
    },

    createOrg(name: string): { id: string; name: string; createdAt: string } {
      if (!name.trim()) throw invalid('--name must not be empty')
      const row = { id: newId(clock), name: name.trim(), createdAt: clock.now() }
      repo.insertOrg(row)
      return { id: row.id, name: row.name, createdAt: isoUtc(row.createdAt) }
    },

    listOrgs() {
      return repo.orgs().map((o) => ({ id: o.id, name: o.name, createdAt: isoUtc(o.createdAt) }))
    },

    /** Creates an `sk_` key; the plaintext is returned once and only its hash is stored. */
    createKey(orgId: string, name = ''): { id: string; key: string; orgId: string; name: string } {
      requireOrg(orgId)
      const key = newApiKey()
      const id = newId(clock)
      repo.insertKey({ id, orgId, name, keyHash: sha256Hex(key), keyPrefix: key.slice(0, 7), createdAt: clock.now() })
      return { id, key, orgId, name }
    },

    listKeys(orgId: string) {
      requireOrg(orgId)
      return repo
        .keys(orgId)
        .map((k) => ({ id: k.id, name: k.name, prefix: k.keyPrefix, createdAt: isoUtc(k.createdAt), revokedAt: k.revokedAt ? isoUtc(k.revokedAt) : null }))
    },

    revokeKey(orgId: string, keyId: string): { id: string; revokedAt: string } {
      const key = repo.key(keyId)
      if (!key || key.orgId !== orgId) throw new ApiError('key_not_found', { keyId }, `unknown key: ${keyId}`)
      const at = key.revokedAt ?? clock.now()
      if (!key.revokedAt) repo.revokeKey(orgId, keyId, at)
      return { id: keyId, revokedAt: isoUtc(at) }
    },

    createApp(orgId: string, s: AppSettings & { name: string }): App & { signingSecret: string } {
      requireOrg(orgId)
      checkSettings(s)
      const slug = s.slug ?? slugify(s.name)
      if (slugTaken(orgId, slug)) throw new ApiError('slug_taken', { slug }, `slug "${slug}" is already used in this org; pass --slug`)
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
        allowedOrigins: JSON.stringify((s.allowedOrigins ?? []).map(normalizeOrigin)),
        signingSecretEnc: box.seal(secret),
        createdAt: now,
        updatedAt: now,
      }
      repo.insertApp(row)
      return { ...toApp(requireApp(orgId, row.id)), signingSecret: secret.toString('hex') }
    },

    listApps(orgId: string): App[] {
      requireOrg(orgId)
      return repo.apps(orgId).map(toApp)
    },

    updateApp(orgId: string, appId: string, s: AppSettings): App {
      requireApp(orgId, appId)
      checkSettings(s)
      if (s.slug !== undefined && slugTaken(orgId, s.slug, appId)) throw new ApiError('slug_taken', { slug: s.slug }, `slug "${s.slug}" is already used in this org`)
      const patch: Partial<AppRow> = { updatedAt: clock.now() }
      if (s.slug !== undefined) patch.slug = s.slug
      if (s.name !== undefined) patch.name = s.name.trim()
      if (s.description !== undefined) patch.description = s.description
      if (s.publicSubmissionEnabled !== undefined) patch.publicSubmissionEnabled = s.publicSubmissionEnabled
      if (s.processingMode !== undefined) patch.processingMode = s.processingMode
      if (s.batchEnabled !== undefined) patch.batchEnabled = s.batchEnabled
      if (s.batchWindowHours !== undefined) patch.batchWindowHours = s.batchWindowHours
      if (s.allowedOrigins !== undefined) patch.allowedOrigins = JSON.stringify(s.allowedOrigins.map(normalizeOrigin))
      repo.updateApp(orgId, appId, patch)
      return toApp(requireApp(orgId, appId))
    },

    /** Replaces the signing secret: every token signed with the old one fails at once. */
    rotateSecret(orgId: string, appId: string): { signingSecret: string } {
      requireApp(orgId, appId)
      const secret = newSigningSecret()
      repo.updateApp(orgId, appId, { signingSecretEnc: box.seal(secret), updatedAt: clock.now() })
      return { signingSecret: secret.toString('hex') }
    },

    /** Soft-deletes: the public key stops working (401 unknown_app); stored feedback stays readable. */
    deleteApp(orgId: string, appId: string): { id: string; deletedAt: string } {
      requireApp(orgId, appId)
      const at = clock.now()
      repo.updateApp(orgId, appId, { deletedAt: at, updatedAt: at })
      return { id: appId, deletedAt: isoUtc(at) }
    },
  }
}
export type TenantsService = ReturnType<typeof createTenantsService>
