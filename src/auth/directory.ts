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
 * request but the first of a turn. On PostgreSQL the read is a round trip, shared by every request of
 * the turn (they wait for the one read in flight); every write this process makes there is awaited, so
 * it commits in an earlier turn than the requests that may see it.
 */
import type { SecretBox } from '../core/crypto'
import { sha256Hex } from '../core/secrets'
import type { AppRow } from '../modules/apps/repo'
import { type CredentialsRepo } from './credentials-repo'

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
  /** The generation was read in this event-loop turn, when the local change count was `changesAtCheck`. */
  private checkedThisTurn = false
  private changesAtCheck = -1
  /** This turn's generation read (every request of the turn waits for the same one). */
  private check: Promise<void> | undefined
  private readonly repo: CredentialsRepo

  constructor(
    repo: CredentialsRepo,
    private readonly box: SecretBox,
  ) {
    this.repo = repo
  }

  /** Drops everything cached if apps or api_keys were written since the last look (see the module comment). */
  private refresh(): Promise<void> | undefined {
    const changes = this.repo.localChanges()
    if (this.checkedThisTurn && changes === this.changesAtCheck) return this.check
    if (!this.checkedThisTurn) {
      this.checkedThisTurn = true
      setImmediate(this.endTurn)
    }
    this.changesAtCheck = changes
    this.check = this.repo.credentialGeneration().then((g) => {
      if (g !== this.generation) {
        this.generation = g
        this.invalidate()
      }
    })
    return this.check
  }

  private readonly endTurn = (): void => {
    this.checkedThisTurn = false
    this.check = undefined
  }

  invalidate(): void {
    this.apps.clear()
    this.keys.clear()
    this.originIndex = undefined
  }

  async appByPublicKey(publicKey: string): Promise<KnownApp | null> {
    await this.refresh()
    const hit = this.apps.get(publicKey)
    if (hit !== undefined) return hit
    const generation = this.generation
    const row = await this.repo.appByPublicKey(publicKey)
    const known = row ? this.toKnown(row) : null
    // A read that overlapped a newer generation's invalidation may be stale: answer it, do not keep it.
    if (generation !== this.generation) return known
    if (this.apps.size >= MAX_CACHED) this.apps.clear()
    this.apps.set(publicKey, known)
    return known
  }

  /** The live App with this id (for routes that name the App in the path, like embedded uploads). */
  async appById(id: string): Promise<KnownApp | null> {
    const publicKey = await this.repo.publicKeyOf(id)
    return publicKey ? this.appByPublicKey(publicKey) : null
  }

  /** Looks an `sk_` key up by its SHA-256: the index lookup on the digest is the comparison. */
  async orgForApiKey(plaintext: string): Promise<KnownKey | null> {
    await this.refresh()
    const hash = sha256Hex(plaintext)
    const hit = this.keys.get(hash)
    if (hit !== undefined) return hit
    const generation = this.generation
    const raw = await this.repo.keyByHash(hash)
    const known = raw ? { keyId: raw.id, orgId: raw.orgId } : null
    if (generation !== this.generation) return known
    if (this.keys.size >= MAX_CACHED) this.keys.clear()
    this.keys.set(hash, known)
    return known
  }

  /** For CORS preflights, which carry no key: is this origin accepted by at least one live App? */
  async anyAppAcceptsOrigin(origin: string): Promise<boolean> {
    await this.refresh()
    if (!this.originIndex) {
      const generation = this.generation
      const index = { anyOrigin: false, origins: new Set<string>() }
      for (const originsJson of await this.repo.allowedOriginLists()) {
        const list = JSON.parse(originsJson) as string[]
        if (list.length === 0) index.anyOrigin = true
        for (const o of list) index.origins.add(o)
      }
      if (generation !== this.generation) return index.anyOrigin || index.origins.has(origin)
      this.originIndex = index
    }
    return this.originIndex.anyOrigin || this.originIndex.origins.has(origin)
  }

  private toKnown(row: AppRow): KnownApp {
    return {
      row,
      allowedOrigins: new Set(JSON.parse(row.allowedOrigins) as string[]),
      signingSecret: this.box.open(row.signingSecretEnc),
    }
  }
}
