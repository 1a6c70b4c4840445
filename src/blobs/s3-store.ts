/**
 * S3/MinIO blob storage through the minio client: the client PUTs straight to the bucket with a
 * presigned URL; fixloop checks the object's real size and type with a HEAD (statObject) on submission.
 */
import http from 'node:http'
import https from 'node:https'
import type { Client } from 'minio'
import type { S3Config } from '../config'
import type { BlobStore, PresignedPut, StoredObject } from './blob-store'
import { StartupError } from '../core/startup-error'
import { systemClock, type Clock } from '../core/clock'

/**
 * How long an S3 request may go without a byte from the server (waiting for its answer, or between two
 * chunks of a body). The minio client has no timeout of its own: a server that takes the connection and
 * never answers (stalled, a network partition without a reset) held a submission that references an
 * upload, a download's read or a background job for as long as it stalled. Past it the request fails
 * with ETIMEDOUT: the request answers 503 with Retry-After and a job waits without spending an attempt
 * (db/unavailable.ts). An inactivity bound, so a large object that keeps arriving is never cut; below the
 * HTTP server's 30 s idle timeout.
 */
export const S3_IDLE_TIMEOUT_MS = 10_000

/**
 * S3 answering that it cannot do the work now (503 SlowDown or ServiceUnavailable, 500 InternalError, a
 * MinIO node starting up or out of room), after the minio client's own retry: the service away for the
 * moment, not a bug, so a 503 with Retry-After (db/unavailable.ts knows this code) and not a 500.
 */
export class S3Unavailable extends Error {
  readonly code = 'S3_UNAVAILABLE'
  constructor(readonly cause: unknown) {
    super(`S3 storage is unavailable: ${cause instanceof Error ? cause.message : String(cause)}`)
  }
}

/** The minio client's error for a 5xx after its retries, or an S3 error code that means "not now". */
const S3_BUSY_MESSAGE = /Retryable HTTP status|Request failed after \d+ retries/
const S3_BUSY_CODES = new Set(['SlowDown', 'ServiceUnavailable', 'InternalError', 'RequestTimeout', 'XMinioServerNotInitialized', 'XMinioStorageFull', 'XMinioReadQuorum', 'XMinioWriteQuorum'])

function unavailableOrSame(e: unknown): unknown {
  const err = e as { code?: unknown; message?: unknown } | null
  if (typeof err?.code === 'string' && S3_BUSY_CODES.has(err.code)) return new S3Unavailable(e)
  if (typeof err?.message === 'string' && S3_BUSY_MESSAGE.test(err.message)) return new S3Unavailable(e)
  return e
}

/** node:http(s) with S3_IDLE_TIMEOUT_MS on every request: what the minio client sends its requests through. */
function boundedTransport(base: typeof http | typeof https): Pick<typeof http, 'request'> {
  return {
    request: ((options: http.RequestOptions, callback?: (res: http.IncomingMessage) => void) => {
      const req = base.request(options, callback)
      req.setTimeout(S3_IDLE_TIMEOUT_MS, () => {
        req.destroy(Object.assign(new Error(`S3 storage did not answer within ${S3_IDLE_TIMEOUT_MS / 1000} s`), { code: 'ETIMEDOUT' }))
      })
      return req
    }) as typeof http.request,
  }
}

/** What the minio client's getRequestOptions builds and its presignSignatureV4 signs. */
type SignableRequest = { protocol: string; method: string; path: string; headers: Record<string, string> }

/** The minio module (for its option classes), its SigV4 presigner and the client made from it. */
type Connection = { client: Client; minio: typeof import('minio'); signing: typeof import('minio/dist/esm/signing.mjs') }

export class S3BlobStore implements BlobStore {
  readonly kind = 's3' as const
  /**
   * The minio module and client, loaded on first use: evaluating minio (with its XML and stream
   * dependencies) takes tens of milliseconds, which every process importing the blob stores paid, S3 or not.
   */
  private connection: Promise<Connection> | null = null
  private readonly endpoint: URL

  /**
   * `clock` is the one the callers' expiry times come from: S3 takes a lifetime in seconds, so a URL meant
   * to live 5 minutes lives 5 minutes whatever clock the service runs on (a test's manual one included).
   */
  constructor(
    private readonly cfg: S3Config,
    private readonly clock: Clock = systemClock,
  ) {
    this.endpoint = new URL(cfg.endpoint)
  }

  private connect(): Promise<Connection> {
    const url = this.endpoint
    this.connection ??= Promise.all([import('minio'), import('minio/dist/esm/signing.mjs')]).then(([minio, signing]) => ({
      minio,
      signing,
      client: new minio.Client({
        endPoint: url.hostname,
        port: url.port ? Number(url.port) : undefined,
        useSSL: url.protocol === 'https:',
        accessKey: this.cfg.accessKey,
        secretKey: this.cfg.secretKey,
        region: this.cfg.region,
        // MinIO and most self-hosted S3 servers want path-style URLs (http://host:9000/bucket/key).
        pathStyle: true,
        transport: boundedTransport(url.protocol === 'https:' ? https : http),
      }),
    }))
    return this.connection
  }

  private async client(): Promise<Client> {
    return (await this.connect()).client
  }

  async check(): Promise<void> {
    let exists: boolean
    let minio: Connection['minio'] | undefined
    try {
      // Inside the try: building the client throws too, for an endpoint it does not take (an IPv6 literal,
      // `http://[::1]:9000`), and that is a setting's error (exit 2 naming it), not a stack trace.
      const connection = await this.connect()
      minio = connection.minio
      exists = await connection.client.bucketExists(this.cfg.bucket)
    } catch (e) {
      const err = e as { code?: string; message?: string }
      // The client refuses a name S3 does not allow before any request ("My_Bucket", "b"): that is the
      // bucket setting's fault, not a bucket that cannot be reached (the credentials are not the cause).
      if (minio && e instanceof minio.InvalidBucketNameError) {
        throw new StartupError(`FIXLOOP_S3_BUCKET: "${this.cfg.bucket}" is not a bucket name (3 to 63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit)`)
      }
      // A StartupError: `serve` exits 2 with this sentence, not 1 with a stack.
      throw new StartupError(
        `S3 storage: cannot reach bucket "${this.cfg.bucket}" at ${this.cfg.endpoint}: ${err.code ?? ''} ${err.message ?? String(e)}`.trim() +
          ' (check FIXLOOP_S3_ENDPOINT, FIXLOOP_S3_ACCESS_KEY and FIXLOOP_S3_SECRET_KEY)',
      )
    }
    if (!exists) throw new StartupError(`S3 storage: bucket "${this.cfg.bucket}" does not exist at ${this.cfg.endpoint}; create it first (mcli mb ALIAS/${this.cfg.bucket}, or aws --endpoint-url ${this.cfg.endpoint} s3 mb s3://${this.cfg.bucket}; docs/uploads.md)`)
  }

  /**
   * A PUT URL signed for exactly `byteSize` bytes: `content-length` is among its signed headers
   * (X-Amz-SignedHeaders=content-length;host), so S3 and MinIO refuse a body of any other length with
   * 403 SignatureDoesNotMatch. The minio client's presignedPutObject signs `host` only, and then a holder of
   * an App's public key could ask for a 1-byte upload and PUT up to S3's 5 GB into the bucket.
   */
  async presignPut(key: string, contentType: string, byteSize: number, expiresAtMs: number, _base: string): Promise<PresignedPut> {
    const seconds = Math.max(1, Math.round((expiresAtMs - this.clock.now()) / 1000))
    const { client, signing } = await this.connect()
    const region = await client.getBucketRegionAsync(this.cfg.bucket)
    // The request presignedUrl signs (host, path-style path, escaped key, Amazon's regional endpoint),
    // built by the client's own getRequestOptions (protected in its types, public in its code).
    const request = (client as unknown as { getRequestOptions(opts: { method: string; region: string; bucketName: string; objectName: string }): SignableRequest }).getRequestOptions({
      method: 'PUT',
      region,
      bucketName: this.cfg.bucket,
      objectName: key,
    })
    // minio's signer leaves out the lower-case `content-length` (getSignedHeaders' ignore list compares
    // names as given); this spelling passes it and is signed as `content-length`. The only other header
    // it signs is `host`, which sorts after it either way. test/uploads.test.ts recomputes the
    // signature with an independent SigV4 implementation, so a minio that dropped it would fail there.
    const headers = { host: request.headers.host, 'Content-Length': String(byteSize) }
    const url = signing.presignSignatureV4({ ...request, headers }, this.cfg.accessKey, this.cfg.secretKey, undefined, region, new Date(), seconds)
    return { url, headers: { 'Content-Type': contentType } }
  }

  async presignGet(key: string, contentType: string, filename: string, expiresAtMs: number, _base: string): Promise<string> {
    const seconds = Math.max(1, Math.round((expiresAtMs - this.clock.now()) / 1000))
    return (await this.client()).presignedGetObject(this.cfg.bucket, key, seconds, {
      'response-content-type': contentType,
      'response-content-disposition': `attachment; filename="${filename}"`,
    })
  }

  async stat(key: string): Promise<StoredObject | null> {
    try {
      const s = await (await this.client()).statObject(this.cfg.bucket, key)
      const meta = s.metaData as Record<string, string>
      return { size: s.size, contentType: meta['content-type'] ?? null, etag: s.etag ?? null }
    } catch (e) {
      const code = (e as { code?: string }).code
      if (code === 'NotFound' || code === 'NoSuchKey') return null
      throw unavailableOrSame(e)
    }
  }

  /** A presigned PUT stays usable for 15 minutes: what a submission referenced is copied out of its reach. */
  async seal(key: string, etag: string | null): Promise<boolean> {
    try {
      const { client, minio } = await this.connect()
      await client.copyObject(
        new minio.CopySourceOptions({ Bucket: this.cfg.bucket, Object: key, ...(etag ? { MatchETag: etag } : {}) }),
        new minio.CopyDestinationOptions({ Bucket: this.cfg.bucket, Object: this.sealedKey(key) }),
      )
      return true
    } catch (e) {
      const code = (e as { code?: string }).code
      if (code === 'PreconditionFailed' || code === 'NoSuchKey' || code === 'NotFound') return false
      throw unavailableOrSame(e)
    }
  }

  sealedKey(key: string): string {
    return `sealed/${key}`
  }

  async read(key: string, maxBytes: number): Promise<Uint8Array | null> {
    let body: NodeJS.ReadableStream
    try {
      body = await (await this.client()).getObject(this.cfg.bucket, key)
    } catch (e) {
      const code = (e as { code?: string }).code
      if (code === 'NotFound' || code === 'NoSuchKey') return null
      throw unavailableOrSame(e)
    }
    // Counted as it streams: an object larger than announced stops the read at the bound.
    const chunks: Buffer[] = []
    let size = 0
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.length
      if (size > maxBytes) {
        ;(body as unknown as { destroy?: () => void }).destroy?.()
        return null
      }
      chunks.push(chunk)
    }
    return new Uint8Array(Buffer.concat(chunks))
  }

  /** Writes the sealed copy, then removes the unsealed upload (a presigned PUT's target, raw bytes). */
  async replaceSealed(key: string, bytes: Uint8Array, contentType: string): Promise<void> {
    try {
      const client = await this.client()
      await client.putObject(this.cfg.bucket, this.sealedKey(key), Buffer.from(bytes), bytes.byteLength, { 'Content-Type': contentType })
      await client.removeObject(this.cfg.bucket, key)
    } catch (e) {
      throw unavailableOrSame(e)
    }
  }

  async remove(key: string): Promise<void> {
    try {
      const client = await this.client()
      await client.removeObject(this.cfg.bucket, key)
      await client.removeObject(this.cfg.bucket, this.sealedKey(key))
    } catch (e) {
      throw unavailableOrSame(e)
    }
  }
}
