/**
 * Org, API-key and App administration: what the admin CLI does. The server only reads these rows
 * (through the credential directory), so every change here is visible to a running server at once.
 */
import { and, eq, isNull } from 'drizzle-orm'
import type { Context } from '../../context'
import { apiKeys, apps, orgs } from '../../db/schema'
import { newId } from '../../core/ids'
import { isoUtc } from '../../core/clock'
import { newApiKey, newPublicKey, newSigningSecret, sha256Hex } from '../../core/secrets'
import { toApp, type AppRow } from '../apps/repo'
import type { App, ProcessingMode } from '../apps/model'

/** A CLI-facing failure: the message is shown to the operator as is. */
export class AdminError extends Error {}

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
    throw new AdminError(`not an origin: "${text}" (expected e.g. https://app.example.com)`)
  }
  if (!['http:', 'https:'].includes(url.protocol) || url.pathname.replace(/\/$/, '') !== '' || url.search || url.hash || url.username) {
    throw new AdminError(`not an origin: "${text}" (scheme://host[:port] only, no path)`)
  }
  return url.origin
}

export function createTenantsService(ctx: Context) {
  const { db, box, clock } = ctx

  function requireOrg(orgId: string) {
    const org = db.select().from(orgs).where(eq(orgs.id, orgId)).get()
    if (!org) throw new AdminError(`unknown org: ${orgId}`)
    return org
  }

  function requireApp(appId: string): AppRow {
    const row = db.select().from(apps).where(and(eq(apps.id, appId), isNull(apps.deletedAt))).get()
    if (!row) throw new AdminError(`unknown app: ${appId}`)
    return row
  }

  function checkSettings(s: AppSettings): void {
    if (s.name !== undefined && !s.name.trim()) throw new AdminError('--name must not be empty')
    if (s.slug !== undefined && !/^[a-z0-9][a-z0-9-]{0,63}$/.test(s.slug)) {
      throw new AdminError(`--slug must be lowercase letters, digits and dashes (max 64), got "${s.slug}"`)
    }
    if (s.batchWindowHours !== undefined && (!Number.isInteger(s.batchWindowHours) || s.batchWindowHours < 1 || s.batchWindowHours > 720)) {
      throw new AdminError(`--batch-window-hours must be an integer from 1 to 720, got "${s.batchWindowHours}"`)
    }
  }

  function slugTaken(orgId: string, slug: string, exceptId?: string): boolean {
    const row = db.select({ id: apps.id }).from(apps).where(and(eq(apps.orgId, orgId), eq(apps.slug, slug), isNull(apps.deletedAt))).get()
    return !!row && row.id !== exceptId
  }

  return {
    createOrg(name: string): { id: string; name: string; createdAt: string } {
      if (!name.trim()) throw new AdminError('--name must not be empty')
      const row = { id: newId(clock), name: name.trim(), createdAt: clock.now() }
      db.insert(orgs).values(row).run()
      return { id: row.id, name: row.name, createdAt: isoUtc(row.createdAt) }
    },

    listOrgs() {
      return db.select().from(orgs).all().map((o) => ({ id: o.id, name: o.name, createdAt: isoUtc(o.createdAt) }))
    },

    /** Creates an `sk_` key; the plaintext is returned once and only its hash is stored. */
    createKey(orgId: string, name = ''): { id: string; key: string; orgId: string; name: string } {
      requireOrg(orgId)
      const key = newApiKey()
      const id = newId(clock)
      db.insert(apiKeys).values({ id, orgId, name, keyHash: sha256Hex(key), keyPrefix: key.slice(0, 7), createdAt: clock.now() }).run()
      return { id, key, orgId, name }
    },

    listKeys(orgId: string) {
      requireOrg(orgId)
      return db
        .select()
        .from(apiKeys)
        .where(eq(apiKeys.orgId, orgId))
        .all()
        .map((k) => ({ id: k.id, name: k.name, prefix: k.keyPrefix, createdAt: isoUtc(k.createdAt), revokedAt: k.revokedAt ? isoUtc(k.revokedAt) : null }))
    },

    revokeKey(keyId: string): { id: string; revokedAt: string } {
      const key = db.select().from(apiKeys).where(eq(apiKeys.id, keyId)).get()
      if (!key) throw new AdminError(`unknown key: ${keyId}`)
      const at = key.revokedAt ?? clock.now()
      if (!key.revokedAt) db.update(apiKeys).set({ revokedAt: at }).where(eq(apiKeys.id, keyId)).run()
      return { id: keyId, revokedAt: isoUtc(at) }
    },

    createApp(orgId: string, s: AppSettings & { name: string }): App & { signingSecret: string } {
      requireOrg(orgId)
      checkSettings(s)
      const slug = s.slug ?? slugify(s.name)
      if (slugTaken(orgId, slug)) throw new AdminError(`slug "${slug}" is already used in this org; pass --slug`)
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
      db.insert(apps).values(row).run()
      return { ...toApp(requireApp(row.id)), signingSecret: secret.toString('hex') }
    },

    listApps(orgId: string): App[] {
      requireOrg(orgId)
      return db.select().from(apps).where(and(eq(apps.orgId, orgId), isNull(apps.deletedAt))).all().map(toApp)
    },

    updateApp(appId: string, s: AppSettings): App {
      const current = requireApp(appId)
      checkSettings(s)
      if (s.slug !== undefined && slugTaken(current.orgId, s.slug, appId)) throw new AdminError(`slug "${s.slug}" is already used in this org`)
      const patch: Partial<AppRow> = { updatedAt: clock.now() }
      if (s.slug !== undefined) patch.slug = s.slug
      if (s.name !== undefined) patch.name = s.name.trim()
      if (s.description !== undefined) patch.description = s.description
      if (s.publicSubmissionEnabled !== undefined) patch.publicSubmissionEnabled = s.publicSubmissionEnabled
      if (s.processingMode !== undefined) patch.processingMode = s.processingMode
      if (s.batchEnabled !== undefined) patch.batchEnabled = s.batchEnabled
      if (s.batchWindowHours !== undefined) patch.batchWindowHours = s.batchWindowHours
      if (s.allowedOrigins !== undefined) patch.allowedOrigins = JSON.stringify(s.allowedOrigins.map(normalizeOrigin))
      db.update(apps).set(patch).where(eq(apps.id, appId)).run()
      return toApp(requireApp(appId))
    },

    /** Replaces the signing secret: every token signed with the old one fails at once. */
    rotateSecret(appId: string): { signingSecret: string } {
      requireApp(appId)
      const secret = newSigningSecret()
      db.update(apps).set({ signingSecretEnc: box.seal(secret), updatedAt: clock.now() }).where(eq(apps.id, appId)).run()
      return { signingSecret: secret.toString('hex') }
    },

    /** Soft-deletes: the public key stops working (401 unknown_app); stored feedback stays readable. */
    deleteApp(appId: string): { id: string; deletedAt: string } {
      requireApp(appId)
      const at = clock.now()
      db.update(apps).set({ deletedAt: at, updatedAt: at }).where(eq(apps.id, appId)).run()
      return { id: appId, deletedAt: isoUtc(at) }
    },
  }
}
export type TenantsService = ReturnType<typeof createTenantsService>
