/**
 * Upload rules: issuing keys and presigned PUTs, accepting embedded PUTs, checking the objects a
 * submission references, presenting download URLs, and removing objects no submission ever used.
 */
import { randomBytes } from 'node:crypto'
import type { Clock } from '../../core/clock'
import { isoUtc } from '../../core/clock'
import { ApiError } from '../../core/errors'
import { LIMITS } from '../../core/limits'
import { type UploadRow, type UploadsRepo } from './repo'
import type { BlobStore } from '../../blobs/blob-store'
import { ALLOWED_CONTENT_TYPES, baseContentType, safeFilename, UPLOAD_KEY_RE } from '../../blobs/blob-store'
import type { EmbeddedBlobStore } from '../../blobs/embedded-store'
import type { Logger } from '../../core/logger'

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
export function createUploadsService(repo: UploadsRepo, store: BlobStore, clock: Clock, log: Logger, graceMs: number) {
  /** Keys an embedded PUT is streaming to right now: a second PUT to one of them is refused at once. */
  const inFlight = new Set<string>()

  return {
    store,

    /** Issues a key and a presigned PUT for exactly `byteSize` bytes of `contentType`. */
    async issue(app: { id: string; orgId: string }, body: { contentType: string; byteSize: number; kind: string; filename?: string }, base: string) {
      const contentType = baseContentType(body.contentType)
      if (!ALLOWED_CONTENT_TYPES.includes(contentType)) {
        throw invalid('/contentType', `not an allowed upload type; allowed: ${ALLOWED_CONTENT_TYPES.join(', ')}`)
      }
      if (body.byteSize > LIMITS.attachmentMaxBytes) {
        throw new ApiError('payload_too_large', { limitBytes: LIMITS.attachmentMaxBytes })
      }
      const now = clock.now()
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
      })
      const put = await store.presignPut(key, contentType, body.byteSize, expiresAt, base)
      return { key, url: put.url, method: 'PUT' as const, headers: put.headers, expiresAt: isoUtc(expiresAt) }
    },

    /** The embedded store's PUT: signature, expiry, type and size are all checked before and while streaming. */
    async acceptEmbeddedPut(embedded: EmbeddedBlobStore, key: string, query: { expires?: string; sig?: string }, request: Request): Promise<void> {
      if (!UPLOAD_KEY_RE.test(key)) throw new ApiError('not_found')
      const row = await repo.byKey(key)
      const expires = Number(query.expires)
      if (!row || !query.sig || !Number.isInteger(expires) || !embedded.verify('PUT', key, row.content_type, row.byte_size, expires, query.sig)) {
        throw new ApiError('invalid_signature')
      }
      if (expires * 1000 < clock.now()) throw new ApiError('url_expired')
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
      const file = Bun.file(embedded.pathOf(key))
      if (!(await file.exists())) throw new ApiError('not_found')
      const name = safeFilename(row.filename, key.split('/')[1])
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
    async checkReferences(appId: string, refs: { path: string; key: string; contentType?: string; byteSize?: number }[]): Promise<CheckedReference[]> {
      const checked: CheckedReference[] = []
      for (const ref of refs) {
        const row = UPLOAD_KEY_RE.test(ref.key) ? await repo.byKey(ref.key) : undefined
        if (!row || row.app_id !== appId) throw invalid(ref.path, 'unknown upload key: not issued to this App')
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

    async downloadUrl(key: string, base: string): Promise<string | undefined> {
      const row = await repo.byKey(key)
      if (!row) return undefined
      return store.presignGet(row.feedback_id === null ? key : store.sealedKey(key), row.content_type, safeFilename(row.filename, key.split('/')[1]), clock.now() + DOWNLOAD_URL_TTL_MS, base)
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
      const bytes = await store.read(store.sealedKey(key), maxBytes)
      return bytes === null ? null : { bytes, contentType: row.content_type }
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

  async function discard(keys: readonly string[]): Promise<number> {
    let removed = 0
    for (const key of keys) {
      try {
        await store.remove(key)
        await repo.deleteUnreferenced(key)
        removed++
      } catch (e) {
        log.warn('could not remove unreferenced upload', { key, error: e instanceof Error ? e.message : String(e) })
      }
    }
    return removed
  }
}
export type UploadsService = ReturnType<typeof createUploadsService>
