/**
 * Upload rules: issuing keys and presigned PUTs, accepting embedded PUTs, checking the objects a
 * submission references, presenting download URLs, and removing objects no submission ever used.
 */
import { randomBytes } from 'node:crypto'
import { closeSync, openSync } from 'node:fs'
import { StoredFileUnreadable } from '../../db/unavailable'
import type { Clock } from '../../core/clock'
import { isoUtc } from '../../core/clock'
import { ApiError, serviceUnavailable } from '../../core/errors'
import { LIMITS } from '../../core/limits'
import { type ReplayState, type UploadRow, type UploadsRepo } from './repo'
import type { BlobStore } from '../../blobs/blob-store'
import { ALLOWED_CONTENT_TYPES, baseContentType, downloadFilename, REPLAY_CONTENT_TYPES, REPLAY_ONLY_CONTENT_TYPES, UPLOAD_KEY_RE } from '../../blobs/blob-store'
import { REPLAY_MAX_STORED_BYTES } from './replay-blob'
import { scrubReplayOffThread } from './replay-scrubber'
import type { EmbeddedBlobStore } from '../../blobs/embedded-store'
import type { Logger } from '../../core/logger'
import { storageUnavailable } from '../../db/unavailable'

/** How long an upload URL stays valid. */
export const UPLOAD_URL_TTL_MS = 15 * 60 * 1000
/** How long a download URL in GET /v1/feedback/:id stays valid. */
export const DOWNLOAD_URL_TTL_MS = 10 * 60 * 1000

export type { UploadRow }

export interface AttachmentLike {
  key: string
  contentType?: string
  byteSize?: number
}

/** An upload a submission references, as checked: sealed already when another report referenced it first. */
export interface CheckedReference {
  path: string
  key: string
  etag: string | null
  sealed: boolean
}

const invalid = (path: string, message: string) => new ApiError('invalid_body', { issues: [{ path, message }] })

/**
 * `committer`: the process's intake committer (services.ts), which the upload rows' writes join.
 * Marking a submission's uploads as referenced is part of the submission's own transaction
 * (modules/feedback/repo.ts).
 */
/** How session replays are scrubbed: when to queue a run, and how strictly an App's replays are masked. */
export interface ReplayScrubHooks {
  /** Queues a `replay_scrub` run now (the composition root: a job of the lifecycle). */
  schedule(): Promise<void>
  /** The App's replay mode now; 'masked' (the strictest) when it is off or the App is gone. */
  masking(orgId: string, appId: string): Promise<'masked' | 'inputs'>
}

const NO_REPLAY_HOOKS: ReplayScrubHooks = { schedule: async () => {}, masking: async () => 'masked' }

/**
 * What uploads may take, so that anyone holding an App's public key (it is in every page) cannot fill the
 * disk the database lives on (an audit wrote 1.8 GB a minute of objects no report ever referenced).
 */
export interface UploadBudget {
  /** Bytes an App's uploads that no report references (yet) may announce per hour; 0: no limit. */
  appHourlyBytes: number
  /** Bytes that must stay free on a local store's disk after an upload; 0: not checked. */
  minFreeBytes: number
}

const NO_BUDGET: UploadBudget = { appHourlyBytes: 0, minFreeBytes: 0 }
const HOUR_MS = 3_600_000

export function createUploadsService(repo: UploadsRepo, store: BlobStore, clock: Clock, log: Logger, graceMs: number, replayHooks: ReplayScrubHooks = NO_REPLAY_HOOKS, budget: UploadBudget = NO_BUDGET) {
  /** Keys an embedded PUT is streaming to right now: a second PUT to one of them is refused at once. */
  const inFlight = new Set<string>()

  /**
   * Refuses an upload URL past the budget: 429 when the App's unreferenced uploads of the last hour would
   * pass `appHourlyBytes` (a submission referencing its uploads frees its share at once); 503 when a local
   * store's disk would keep less than `minFreeBytes`, so the database keeps room to write (report texts go
   * on being taken). Both say when to try again; the widget keeps the report queued meanwhile.
   */
  async function withinBudget(appId: string, byteSize: number, now: number): Promise<void> {
    if (budget.minFreeBytes > 0 && store.freeBytes) {
      const free = store.freeBytes()
      if (free - byteSize < budget.minFreeBytes) {
        log.warn('upload refused: the disk is nearly full', { freeBytes: free, minFreeBytes: budget.minFreeBytes })
        throw serviceUnavailable('uploads are paused: the server\'s disk is nearly full (FIXLOOP_UPLOAD_MIN_FREE_MB)', 'Uploads are paused: the server\'s disk is nearly full. Try again later.', 300)
      }
    }
    if (budget.appHourlyBytes > 0) {
      const pending = await repo.unreferencedBytesSince(appId, now - HOUR_MS)
      if (pending + byteSize > budget.appHourlyBytes) {
        throw new ApiError('rate_limited', { retryAfterSeconds: 300, limit: 'bytes of unreferenced uploads per App and hour (FIXLOOP_UPLOAD_APP_HOURLY_MB)' }).withHeaders({ 'retry-after': '300' })
      }
    }
  }

  return {
    store,

    /**
     * Issues a key and a presigned PUT for exactly `byteSize` bytes of `contentType`. A session replay
     * (kind 'replay') only for an App that records them, as gzip or JSON.
     */
    async issue(app: { id: string; orgId: string; replayMode: string }, body: { contentType: string; byteSize: number; kind: string; filename?: string }, base: string) {
      const contentType = baseContentType(body.contentType)
      const replay = body.kind === 'replay'
      if (replay && app.replayMode !== 'masked' && app.replayMode !== 'inputs') {
        throw invalid('/kind', 'this App does not record session replays (its replay mode is off; fixloop app update --replay masked|inputs turns it on)')
      }
      if (replay && !REPLAY_CONTENT_TYPES.includes(contentType)) throw invalid('/contentType', `a replay is uploaded as ${REPLAY_CONTENT_TYPES.join(' or ')}`)
      if (!replay && REPLAY_ONLY_CONTENT_TYPES.includes(contentType)) throw invalid('/contentType', `${contentType} is for session replays only (kind "replay")`)
      if (!ALLOWED_CONTENT_TYPES.includes(contentType)) {
        throw invalid('/contentType', `not an allowed upload type; allowed: ${ALLOWED_CONTENT_TYPES.join(', ')}`)
      }
      if (body.byteSize > LIMITS.attachmentMaxBytes) {
        throw new ApiError('payload_too_large', { limitBytes: LIMITS.attachmentMaxBytes })
      }
      const now = clock.now()
      await withinBudget(app.id, body.byteSize, now)
      const key = `${app.id}/${randomBytes(16).toString('hex')}`
      const expiresAt = now + UPLOAD_URL_TTL_MS
      await repo.insert({
        key,
        appId: app.id,
        orgId: app.orgId,
        kind: body.kind,
        contentType,
        byteSize: body.byteSize,
        filename: body.filename ?? null,
        createdAt: now,
        expiresAt,
        replayState: replay ? 'pending' : null,
      })
      const put = await store.presignPut(key, contentType, body.byteSize, expiresAt, base)
      return { key, url: put.url, method: 'PUT' as const, headers: put.headers, expiresAt: isoUtc(expiresAt) }
    },

    /** The embedded store's PUT: signature, expiry, type and size are all checked before and while streaming. */
    async acceptEmbeddedPut(embedded: EmbeddedBlobStore, key: string, query: { expires?: string; sig?: string }, request: Request, appIsLive?: (appId: string) => Promise<boolean>): Promise<void> {
      if (!UPLOAD_KEY_RE.test(key)) throw new ApiError('not_found')
      const row = await repo.byKey(key)
      const expires = Number(query.expires)
      if (!row || !query.sig || !Number.isInteger(expires) || !embedded.verify('PUT', key, row.content_type, row.byte_size, expires, query.sig)) {
        throw new ApiError('invalid_signature')
      }
      if (expires * 1000 < clock.now()) throw new ApiError('url_expired')
      // A URL issued before its App was deleted stores nothing: deleting an App (an abused public key)
      // stops its uploads at once, not 15 minutes later.
      if (appIsLive && !(await appIsLive(row.app_id))) throw new ApiError('unknown_app')
      if (row.uploaded_at !== null) throw new ApiError('already_uploaded')
      const type = baseContentType(request.headers.get('content-type') ?? '')
      if (type !== row.content_type) throw invalid('header:Content-Type', `must be ${row.content_type}`)
      const length = request.headers.get('content-length')
      if (length !== null && Number(length) > row.byte_size) {
        throw new ApiError(Number(length) > LIMITS.attachmentMaxBytes ? 'payload_too_large' : 'invalid_body', {
          issues: [{ path: 'header:Content-Length', message: `must be exactly ${row.byte_size}` }],
        })
      }
      if (length !== null && Number(length) !== row.byte_size) throw invalid('header:Content-Length', `must be exactly ${row.byte_size}`)
      if (!request.body) throw invalid('/', `expected ${row.byte_size} bytes`)
      // One PUT per key: a concurrent one here is refused before it streams; one in another process
      // loses at the link (writeStream), so two PUTs never both succeed.
      if (inFlight.has(key)) throw new ApiError('already_uploaded')
      inFlight.add(key)
      try {
        const outcome = await embedded.writeStream(key, request.body, row.byte_size, row.content_type)
        if (outcome === 'exists') throw new ApiError('already_uploaded')
        if (outcome === 'too_large') throw invalid('/', `more than the ${row.byte_size} bytes announced`)
        if (outcome === 'size_mismatch') throw invalid('/', `fewer than the ${row.byte_size} bytes announced`)
        await repo.markUploaded(key, clock.now())
      } finally {
        inFlight.delete(key)
      }
    },

    /** Serves an embedded object for a signed, unexpired GET URL. */
    async serveEmbedded(embedded: EmbeddedBlobStore, key: string, query: { expires?: string; sig?: string }): Promise<Response> {
      if (!UPLOAD_KEY_RE.test(key)) throw new ApiError('not_found')
      const row = await repo.byKey(key)
      const expires = Number(query.expires)
      if (!row || !query.sig || !Number.isInteger(expires) || !embedded.verify('GET', key, row.content_type, 0, expires, query.sig)) {
        throw new ApiError('invalid_signature')
      }
      if (expires * 1000 < clock.now()) throw new ApiError('url_expired')
      // A session replay is readable only once scrubbed (no URL is issued before; this holds a URL made
      // for another state of it too).
      if (row.kind === 'replay' && row.replay_state !== 'ready') throw new ApiError('not_found')
      const path = embedded.pathOf(key)
      const file = Bun.file(path)
      if (!(await file.exists())) throw new ApiError('not_found')
      // Opened here, not only once the answer streams: a file Bun cannot open then (EACCES: a restore or a
      // copy made as root; EIO) became Bun's own text/plain "Something went wrong!" 500, logged nowhere.
      try {
        closeSync(openSync(path, 'r'))
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code
        if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') throw new ApiError('not_found')
        throw new StoredFileUnreadable(`cannot read the stored file ${path} (${code ?? (e as Error).message}): check that fixloop's user owns the data dir's blobs/`, { cause: e })
      }
      const name = downloadFilename(row.filename, row.content_type, key.split('/')[1])
      return new Response(file, {
        headers: {
          'content-type': row.content_type,
          'x-content-type-options': 'nosniff',
          'content-disposition': `attachment; filename="${name}"`,
          // Even if a browser were tricked into rendering it, the object runs no script.
          'content-security-policy': "default-src 'none'; sandbox",
          'cache-control': 'private, max-age=300',
        },
      })
    },

    /**
     * Checks every key a submission references: issued to this App, uploaded, within 15 MB, and of the
     * declared type and size. Throws 400 invalid_body (or 413) naming the offending field.
     */
    async checkReferences(appId: string, refs: { path: string; key: string; kind?: string; contentType?: string; byteSize?: number }[]): Promise<CheckedReference[]> {
      const checked: CheckedReference[] = []
      const replays = refs.filter((r) => r.kind === 'replay')
      if (replays.length > 1) throw invalid(replays[1].path.replace(/key$/, 'kind'), 'at most one replay per report')
      for (const ref of refs) {
        const row = UPLOAD_KEY_RE.test(ref.key) ? await repo.byKey(ref.key) : undefined
        if (!row || row.app_id !== appId) throw invalid(ref.path, 'unknown upload key: not issued to this App')
        // On its way out (its report erased or expired, or collected unreferenced: src/db/sql/upload-shares.ts).
        if (row.feedback_id === null && row.created_at === 0) throw invalid(ref.path, 'this upload was removed: upload the file again')
        // A replay is scrubbed before anyone reads it: it is attached as one, to one report, and nothing
        // else is attached as a replay (it would skip neither check, but would be listed as one).
        if ((ref.kind === 'replay') !== (row.kind === 'replay')) {
          throw invalid(ref.path, row.kind === 'replay' ? 'this upload is a session replay: attach it with kind "replay"' : 'kind "replay" needs an upload issued with kind "replay"')
        }
        // A replay a report already references (an idempotent retry) may have been scrubbed and replaced
        // since: its stored size and type are the scrubbed object's, not the upload's.
        if (row.kind === 'replay' && row.feedback_id !== null) {
          checked.push({ path: ref.path, key: ref.key, etag: null, sealed: true })
          continue
        }
        // An object another report already references was sealed then: that copy is the object.
        const sealed = row.feedback_id !== null
        const stored = await store.stat(sealed ? store.sealedKey(ref.key) : ref.key)
        if (!stored) throw invalid(ref.path, 'nothing was uploaded under this key')
        if (stored.size > LIMITS.attachmentMaxBytes) throw new ApiError('payload_too_large', { path: ref.path, limitBytes: LIMITS.attachmentMaxBytes })
        if (stored.size !== row.byte_size) throw invalid(ref.path, `uploaded object has ${stored.size} bytes, ${row.byte_size} were announced`)
        if (stored.contentType !== null && baseContentType(stored.contentType) !== row.content_type) {
          throw invalid(ref.path, `uploaded object is ${stored.contentType}, ${row.content_type} was announced`)
        }
        if (ref.byteSize !== undefined && ref.byteSize !== stored.size) throw invalid(ref.path, `byteSize ${ref.byteSize} does not match the uploaded ${stored.size} bytes`)
        if (ref.contentType !== undefined && baseContentType(ref.contentType) !== row.content_type) {
          throw invalid(ref.path, `contentType ${ref.contentType} does not match the uploaded ${row.content_type}`)
        }
        checked.push({ path: ref.path, key: ref.key, etag: stored.etag, sealed })
      }
      return checked
    },

    /**
     * Before the submission commits: fixes each checked object (BlobStore.seal), so a PUT on a still
     * valid upload URL cannot replace what the report references. An object replaced between the check
     * and now is refused like a mismatching one.
     */
    async seal(checked: CheckedReference[]): Promise<void> {
      for (const c of checked) {
        if (c.sealed) continue
        if (!(await store.seal(c.key, c.etag))) throw invalid(c.path, 'the uploaded object changed while the report was submitted; submit again')
      }
    },

    /** A short-lived download URL; none for a replay not scrubbed yet (or unreadable). */
    async downloadUrl(key: string, base: string): Promise<string | undefined> {
      const row = await repo.byKey(key)
      if (!row || (row.kind === 'replay' && row.replay_state !== 'ready')) return undefined
      return store.presignGet(row.feedback_id === null ? key : store.sealedKey(key), row.content_type, downloadFilename(row.filename, row.content_type, key.split('/')[1]), clock.now() + DOWNLOAD_URL_TTL_MS, base)
    },

    /**
     * A referenced object's bytes, for the agent's attachments folder: only a key of the App that a report
     * referenced (its sealed copy, the object the report points at, as the dashboard's download link
     * serves it), with its content type as checked at upload; null when it is not that or holds more than
     * `maxBytes`.
     */
    async readReferenced(appId: string, key: string, maxBytes: number): Promise<{ bytes: Uint8Array; contentType: string } | null> {
      if (!UPLOAD_KEY_RE.test(key)) return null
      const row = await repo.byKey(key)
      if (!row || row.app_id !== appId || row.feedback_id === null || row.byte_size > maxBytes) return null
      // A session replay is read by nobody before it is scrubbed (then it is the gzip of the scrubbed JSON).
      if (row.kind === 'replay' && row.replay_state !== 'ready') return null
      const bytes = await store.read(store.sealedKey(key), maxBytes)
      return bytes === null ? null : { bytes, contentType: row.content_type }
    },

    /**
     * After a report referencing a replay is stored: the scrub is queued now (outside the submission's
     * transaction: it reads and writes the blob store, which must never happen inside a write
     * transaction). If this fails, the recurring safety-net run picks the replay up.
     */
    async replayReferenced(): Promise<void> {
      try {
        await replayHooks.schedule()
      } catch (e) {
        log.warn('replay scrub not queued now; the periodic run will take it', { error: e instanceof Error ? e.message : String(e) })
      }
    },

    /**
     * A replay attachment as GET /v1/feedback/:id lists it: where its scrub stands and, once it is done,
     * the stored object's type and size (always the gzip of the scrubbed JSON) and a download URL.
     */
    async replayView(key: string, base: string): Promise<{ replayState: ReplayState; url?: string; contentType?: string; byteSize?: number }> {
      const row = await repo.byKey(key)
      if (!row) return { replayState: 'unreadable' }
      const state = (row.replay_state ?? 'pending') as ReplayState
      if (state !== 'ready') return { replayState: state }
      const url = await store.presignGet(store.sealedKey(key), row.content_type, downloadFilename(row.filename, row.content_type, key.split('/')[1]), clock.now() + DOWNLOAD_URL_TTL_MS, base)
      return { replayState: state, url, contentType: row.content_type, byteSize: row.byte_size }
    },

    /**
     * Scrubs the session replays reports reference and nobody has scrubbed yet (the `replay_scrub` job):
     * reads each (bounded), scrubs it with the report text's rules and the App's mode, writes the scrubbed
     * gzip over the sealed object (the raw bytes gone), and only then marks it ready, downloadable. An
     * unreadable replay is removed and marked so. The App's replay mode now says how strictly it is
     * masked ('masked' when it was turned off since: the strictest). Returns how many it settled.
     */
    async scrubPendingReplays(limit = 20): Promise<number> {
      let settled = 0
      for (const row of await repo.pendingReplays(limit)) {
        try {
          const sealed = store.sealedKey(row.key)
          const bytes = await store.read(sealed, REPLAY_MAX_STORED_BYTES)
          const outcome = bytes === null ? { kind: 'unreadable' as const, reason: 'nothing stored, or more than 15 MB' } : await scrubReplayOffThread(bytes, await replayHooks.masking(row.org_id, row.app_id))
          if (outcome.kind === 'scrubbed') {
            await store.replaceSealed(row.key, outcome.gzip, 'application/gzip')
            await repo.settleReplay(row.key, 'ready', 'application/gzip', outcome.gzip.byteLength)
          } else {
            // Nothing unscrubbed is kept: the object goes, the attachment stays listed as unreadable.
            await store.remove(row.key)
            await repo.settleReplay(row.key, 'unreadable', row.content_type, 0)
            log.warn('session replay unreadable: removed', { key: row.key, reason: outcome.reason })
          }
          settled++
        } catch (e) {
          // The store failed (not the replay): it stays pending and is tried again at the next run.
          log.warn('session replay not scrubbed yet', { key: row.key, error: e instanceof Error ? e.message : String(e) })
          // The store away: the others of this run would wait out the same timeout one after another.
          if (storageUnavailable(e) !== null) break
        }
      }
      return settled
    },

    /** Removes objects issued more than the grace period ago and never referenced. Returns how many. */
    async collectUnreferenced(limit = 500): Promise<number> {
      return discard(await repo.unreferenced(clock.now() - graceMs, limit))
    },

    /**
     * Removes the objects (and their sealed copies) of upload keys no report references any more, and
     * their rows, now: the spam retention's detached uploads. What fails stays for the collection job.
     */
    discard,
  }

  /**
   * Once the store (or the database) is unavailable, the remaining keys are left for the collection job
   * at once: a stalled S3 costs one timeout (s3-store.ts), not one per key. A reporter's erasure waited
   * 10 s per attachment, and the hourly collection held the job worker for up to 500 of them.
   */
  async function discard(keys: readonly string[]): Promise<number> {
    let removed = 0
    for (const [i, key] of keys.entries()) {
      try {
        // Retired first: a submission that checked this key before now fails instead of listing a removed object.
        if (!(await repo.retireUnreferenced(key))) continue
        await store.remove(key)
        await repo.deleteUnreferenced(key)
        removed++
      } catch (e) {
        log.warn('could not remove unreferenced upload', { key, error: e instanceof Error ? e.message : String(e) })
        if (storageUnavailable(e) !== null) {
          log.warn('uploads left for the next collection: storage unavailable', { left: keys.length - i - 1 })
          break
        }
      }
    }
    return removed
  }
}
export type UploadsService = ReturnType<typeof createUploadsService>
