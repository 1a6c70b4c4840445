/**
 * The credential directory's queries (src/auth/directory.ts): live Apps by public key or id, live API
 * keys by hash, every App's allowed origins, and the credential generation (migration 0013_intake):
 * a number its triggers raise on every write to `apps` or `api_keys`, from any connection or process.
 */
import type { Database, Statement } from 'bun:sqlite'

/** An `apps` row as stored (snake_case, integers for booleans). */
export interface RawApp {
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

/** Prepared once per connection; the directory keeps one and asks it on every cache miss. */
export class CredentialsRepo {
  private readonly generation: Statement<{ generation: number }, []>
  private readonly totalChanges: Statement<{ n: number }, []>
  private readonly appByKey: Statement
  private readonly publicKeyById: Statement
  private readonly keyHashes: Statement
  private readonly allOrigins: Statement

  constructor(sqlite: Database) {
    this.generation = sqlite.prepare('SELECT generation FROM credential_generation WHERE id = 1')
    // No table: no read transaction, no lock (a fraction of a microsecond).
    this.totalChanges = sqlite.prepare('SELECT total_changes() AS n')
    this.appByKey = sqlite.query('SELECT * FROM apps WHERE public_key = ? AND deleted_at IS NULL')
    this.publicKeyById = sqlite.query('SELECT public_key FROM apps WHERE id = ? AND deleted_at IS NULL')
    this.keyHashes = sqlite.query('SELECT id, org_id FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL')
    this.allOrigins = sqlite.query('SELECT allowed_origins FROM apps WHERE deleted_at IS NULL')
  }

  /**
   * Rises with every committed write to apps or api_keys, whoever made it (this connection, another
   * thread's, the CLI's). Other tables' commits leave it alone, so the cache survives the worker's writes.
   */
  credentialGeneration(): number {
    // No row (it is never deleted, but if it were): NaN equals nothing, so the cache is never trusted.
    return this.generation.get()?.generation ?? NaN
  }

  /** Rows this connection has inserted, updated or deleted since it opened (triggers included). */
  connectionChanges(): number {
    return this.totalChanges.get()!.n
  }

  appByPublicKey(publicKey: string): RawApp | null {
    return this.appByKey.get(publicKey) as RawApp | null
  }

  publicKeyOf(appId: string): string | null {
    return (this.publicKeyById.get(appId) as { public_key: string } | null)?.public_key ?? null
  }

  keyByHash(hash: string): { id: string; org_id: string } | null {
    return this.keyHashes.get(hash) as { id: string; org_id: string } | null
  }

  /** The allowed_origins JSON of every live App. */
  allowedOriginLists(): string[] {
    return (this.allOrigins.all() as { allowed_origins: string }[]).map((r) => r.allowed_origins)
  }
}
