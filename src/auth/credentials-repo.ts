/**
 * The credential directory's queries (src/auth/directory.ts): live Apps by public key or id, live API
 * keys by hash, every App's allowed origins, and a version that moves on every commit that may change
 * them — another connection's (SQLite's data_version) or this connection's own (TEMP triggers).
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

/** Prepared once per connection; the directory keeps one and asks it on every cache miss. */
export class CredentialsRepo {
  private readonly dataVersion: Statement
  private readonly appByKey: Statement
  private readonly publicKeyById: Statement
  private readonly keyHashes: Statement
  private readonly allOrigins: Statement

  constructor(sqlite: Database) {
    watchOwnWrites(sqlite)
    this.dataVersion = sqlite.query('SELECT (SELECT data_version FROM pragma_data_version()) AS v, (SELECT n FROM temp.credential_writes) AS n')
    this.appByKey = sqlite.query('SELECT * FROM apps WHERE public_key = ? AND deleted_at IS NULL')
    this.publicKeyById = sqlite.query('SELECT public_key FROM apps WHERE id = ? AND deleted_at IS NULL')
    this.keyHashes = sqlite.query('SELECT id, org_id FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL')
    this.allOrigins = sqlite.query('SELECT allowed_origins FROM apps WHERE deleted_at IS NULL')
  }

  /** Changes whenever apps or api_keys may have changed (any connection's commit, or this one's writes). */
  writeVersion(): string {
    const row = this.dataVersion.get() as { v: number; n: number }
    return `${row.v}:${row.n}`
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
