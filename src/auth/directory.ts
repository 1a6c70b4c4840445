/**
 * In-memory lookup of credentials: `pub_` key → App (with its decoded signing secret) and
 * `sk_` key hash → Org. The admin CLI writes to the same database from another process, so before
 * every use the cache compares SQLite's `PRAGMA data_version`, which changes whenever another
 * connection commits; a change empties the cache, so a revoked key or a rotated secret fails at once.
 * data_version does not move for commits made on this same connection (an in-process admin, as in the
 * tests), so TEMP triggers on this connection count its own writes to apps and api_keys as well.
 */
import type { Database, Statement } from 'bun:sqlite'
import type { SecretBox } from '../core/crypto'
import { sha256Hex } from '../core/secrets'
import type { AppRow } from '../modules/apps/repo'

export interface KnownApp {
  row: AppRow
  allowedOrigins: ReadonlySet<string>
  signingSecret: Uint8Array
}

export interface KnownKey {
  keyId: string
  orgId: string
}

interface RawApp {
  id: string
  org_id: string
  slug: string
  name: string
  description: string
  public_key: string
  public_submission_enabled: number
  processing_mode: string
  batch_enabled: number
  batch_window_hours: number
  allowed_origins: string
  signing_secret_enc: string
  created_at: number
  updated_at: number
  deleted_at: number | null
}

const MAX_CACHED = 10_000

/** TEMP objects live only in this connection, so these triggers fire for this connection's writes alone. */
function watchOwnWrites(sqlite: Database): void {
  sqlite.run('CREATE TEMP TABLE IF NOT EXISTS credential_writes (n INTEGER NOT NULL)')
  if (!sqlite.query('SELECT 1 FROM temp.credential_writes').get()) sqlite.run('INSERT INTO temp.credential_writes (n) VALUES (0)')
  for (const table of ['apps', 'api_keys']) {
    for (const op of ['INSERT', 'UPDATE', 'DELETE']) {
      sqlite.run(
        `CREATE TEMP TRIGGER IF NOT EXISTS credential_writes_${table}_${op.toLowerCase()} AFTER ${op} ON main.${table} ` +
          'BEGIN UPDATE temp.credential_writes SET n = n + 1; END',
      )
    }
  }
}

export class CredentialDirectory {
  private apps = new Map<string, KnownApp | null>()
  private keys = new Map<string, KnownKey | null>()
  private originIndex: { anyOrigin: boolean; origins: Set<string> } | undefined
  private version = ''
  private readonly dataVersion: Statement
  private readonly appByKey: Statement
  private readonly publicKeyById: Statement
  private readonly keyByHash: Statement
  private readonly allOrigins: Statement

  constructor(
    sqlite: Database,
    private readonly box: SecretBox,
  ) {
    watchOwnWrites(sqlite)
    this.dataVersion = sqlite.query('SELECT (SELECT data_version FROM pragma_data_version()) AS v, (SELECT n FROM temp.credential_writes) AS n')
    this.appByKey = sqlite.query('SELECT * FROM apps WHERE public_key = ? AND deleted_at IS NULL')
    this.publicKeyById = sqlite.query('SELECT public_key FROM apps WHERE id = ? AND deleted_at IS NULL')
    this.keyByHash = sqlite.query('SELECT id, org_id FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL')
    this.allOrigins = sqlite.query('SELECT allowed_origins FROM apps WHERE deleted_at IS NULL')
  }

  /** Drops everything cached if another connection has committed since the last look. */
  private refresh(): void {
    const row = this.dataVersion.get() as { v: number; n: number }
    const v = `${row.v}:${row.n}`
    if (v !== this.version) {
      this.version = v
      this.invalidate()
    }
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
    const raw = this.appByKey.get(publicKey) as RawApp | null
    const known = raw ? this.toKnown(raw) : null
    if (this.apps.size >= MAX_CACHED) this.apps.clear()
    this.apps.set(publicKey, known)
    return known
  }

  /** The live App with this id (for routes that name the App in the path, like embedded uploads). */
  appById(id: string): KnownApp | null {
    const row = this.publicKeyById.get(id) as { public_key: string } | null
    return row ? this.appByPublicKey(row.public_key) : null
  }

  /** Looks an `sk_` key up by its SHA-256: the index lookup on the digest is the comparison. */
  orgForApiKey(plaintext: string): KnownKey | null {
    this.refresh()
    const hash = sha256Hex(plaintext)
    const hit = this.keys.get(hash)
    if (hit !== undefined) return hit
    const raw = this.keyByHash.get(hash) as { id: string; org_id: string } | null
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
      for (const r of this.allOrigins.all() as { allowed_origins: string }[]) {
        const list = JSON.parse(r.allowed_origins) as string[]
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
