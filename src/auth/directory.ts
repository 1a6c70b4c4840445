/**
 * In-memory lookup of credentials: `pub_` key → App (with its decoded signing secret) and
 * `sk_` key hash → Org. Apps and keys change through the API (this connection), the dashboard, and the
 * admin CLI (another process), so the cache reads the credential generation, which triggers raise on
 * every committed write to apps or api_keys whoever makes it; a change empties the cache, so a revoked
 * key, a deleted App or a rotated secret fails on the very next request. Commits to other tables (every
 * report, the worker's writes) do not move it, so they never empty the cache.
 *
 * The generation is read once per event-loop turn, not per request: the requests of one turn were read
 * from their sockets together, before that read, so a request that arrives after a revocation commits
 * is judged in a later turn, with a fresh read. Within a turn, a write on this connection (an API call
 * that rotated or revoked, `SELECT total_changes()`, no lock taken) makes the next use read it again.
 * A read is a SQLite read transaction (~3.5 µs, 5 % of a widget submission's CPU) saved on every
 * request but the first of a turn.
 */
import type { Database } from 'bun:sqlite'
import type { SecretBox } from '../core/crypto'
import { sha256Hex } from '../core/secrets'
import type { AppRow } from '../modules/apps/repo'
import { CredentialsRepo, type RawApp } from './credentials-repo'

export interface KnownApp {
  row: AppRow
  allowedOrigins: ReadonlySet<string>
  signingSecret: Uint8Array
}

export interface KnownKey {
  keyId: string
  orgId: string
}

const MAX_CACHED = 10_000

export class CredentialDirectory {
  private apps = new Map<string, KnownApp | null>()
  private keys = new Map<string, KnownKey | null>()
  private originIndex: { anyOrigin: boolean; origins: Set<string> } | undefined
  private generation = -1
  /** The generation was read in this event-loop turn, when this connection's change count was `changesAtCheck`. */
  private checkedThisTurn = false
  private changesAtCheck = -1
  private readonly repo: CredentialsRepo

  constructor(
    sqlite: Database,
    private readonly box: SecretBox,
  ) {
    this.repo = new CredentialsRepo(sqlite)
  }

  /** Drops everything cached if apps or api_keys were written since the last look (see the module comment). */
  private refresh(): void {
    const changes = this.repo.connectionChanges()
    if (this.checkedThisTurn && changes === this.changesAtCheck) return
    if (!this.checkedThisTurn) {
      this.checkedThisTurn = true
      setImmediate(this.endTurn)
    }
    this.changesAtCheck = changes
    const g = this.repo.credentialGeneration()
    if (g !== this.generation) {
      this.generation = g
      this.invalidate()
    }
  }

  private readonly endTurn = (): void => {
    this.checkedThisTurn = false
  }

  invalidate(): void {
    this.apps.clear()
    this.keys.clear()
    this.originIndex = undefined
  }

  appByPublicKey(publicKey: string): KnownApp | null {
    this.refresh()
    const hit = this.apps.get(publicKey)
    if (hit !== undefined) return hit
    const raw = this.repo.appByPublicKey(publicKey)
    const known = raw ? this.toKnown(raw) : null
    if (this.apps.size >= MAX_CACHED) this.apps.clear()
    this.apps.set(publicKey, known)
    return known
  }

  /** The live App with this id (for routes that name the App in the path, like embedded uploads). */
  appById(id: string): KnownApp | null {
    const publicKey = this.repo.publicKeyOf(id)
    return publicKey ? this.appByPublicKey(publicKey) : null
  }

  /** Looks an `sk_` key up by its SHA-256: the index lookup on the digest is the comparison. */
  orgForApiKey(plaintext: string): KnownKey | null {
    this.refresh()
    const hash = sha256Hex(plaintext)
    const hit = this.keys.get(hash)
    if (hit !== undefined) return hit
    const raw = this.repo.keyByHash(hash)
    const known = raw ? { keyId: raw.id, orgId: raw.org_id } : null
    if (this.keys.size >= MAX_CACHED) this.keys.clear()
    this.keys.set(hash, known)
    return known
  }

  /** For CORS preflights, which carry no key: is this origin accepted by at least one live App? */
  anyAppAcceptsOrigin(origin: string): boolean {
    this.refresh()
    if (!this.originIndex) {
      const index = { anyOrigin: false, origins: new Set<string>() }
      for (const originsJson of this.repo.allowedOriginLists()) {
        const list = JSON.parse(originsJson) as string[]
        if (list.length === 0) index.anyOrigin = true
        for (const o of list) index.origins.add(o)
      }
      this.originIndex = index
    }
    return this.originIndex.anyOrigin || this.originIndex.origins.has(origin)
  }

  private toKnown(raw: RawApp): KnownApp {
    const row: AppRow = {
      id: raw.id,
      orgId: raw.org_id,
      slug: raw.slug,
      name: raw.name,
      description: raw.description,
      publicKey: raw.public_key,
      publicSubmissionEnabled: !!raw.public_submission_enabled,
      processingMode: raw.processing_mode,
      batchEnabled: !!raw.batch_enabled,
      batchWindowHours: raw.batch_window_hours,
      allowedOrigins: raw.allowed_origins,
      signingSecretEnc: raw.signing_secret_enc,
      createdAt: raw.created_at,
      updatedAt: raw.updated_at,
      deletedAt: raw.deleted_at,
    }
    return {
      row,
      allowedOrigins: new Set(JSON.parse(raw.allowed_origins) as string[]),
      signingSecret: this.box.open(raw.signing_secret_enc),
    }
  }
}
