/**
 * The credential directory's queries (src/auth/directory.ts): live Apps by public key or id, live API
 * keys by hash, every App's allowed origins, and the credential generation (SQLite migration 0013_intake,
 * PostgreSQL 0001_credential_generation): a number triggers raise on every write to `apps` or `api_keys`,
 * from any connection, process or node.
 *
 * The port: one interface, a SQLite (src/db/sqlite/credentials.ts) and a PostgreSQL
 * (src/db/pg/credentials.ts) implementation, both held to test/repos/credentials.test.ts.
 */
import type { AppRow } from '../modules/apps/repo'

export interface CredentialsRepo {
  /**
   * Rises with every committed write to apps or api_keys, whoever made it (this connection, another
   * thread's, the CLI's, another node's). Other tables' commits leave it alone, so the cache survives
   * the worker's writes. NaN when the row is missing (NaN equals nothing: the cache is never trusted).
   */
  credentialGeneration(): Promise<number>
  /**
   * A count that moves when this process may itself have written apps or api_keys since the last look,
   * read synchronously and without a statement lock. SQLite: the connection's `total_changes()`.
   * PostgreSQL: constant (every write is awaited, so it commits in an earlier event-loop turn than the
   * requests that may see it: the per-turn generation read covers it).
   */
  localChanges(): number
  /** The live App with this public key. */
  appByPublicKey(publicKey: string): Promise<AppRow | undefined>
  /** The public key of the live App with this id. */
  publicKeyOf(appId: string): Promise<string | undefined>
  /** The live (unrevoked) key with this SHA-256. */
  keyByHash(hash: string): Promise<{ id: string; orgId: string } | undefined>
  /** The allowed_origins JSON of every live App. */
  allowedOriginLists(): Promise<string[]>
}

