/**
 * Where screenshots and attachments live. Two implementations behind one interface: the embedded store
 * (files under the data dir, uploaded to fixloop itself) and S3/MinIO (presigned by the minio client).
 */
export interface PresignedPut {
  url: string
  headers: Record<string, string>
}

export interface StoredObject {
  size: number
  contentType: string | null
  /** The store's version tag of the content (S3 ETag); null where objects cannot change (embedded). */
  etag: string | null
}

export interface BlobStore {
  readonly kind: 'embedded' | 's3'
  /** Checked at start: fails with an operator-readable message when the store cannot be used. */
  check(): Promise<void>
  /**
   * Bytes free where the store writes, for a store on this machine's disk (the embedded one, beside the
   * database); absent for a remote store, whose space is not fixloop's to guard.
   */
  freeBytes?(): number
  /** `base` is the absolute URL the client reached fixloop at; the embedded store's URLs start with it. */
  presignPut(key: string, contentType: string, byteSize: number, expiresAtMs: number, base: string): Promise<PresignedPut>
  presignGet(key: string, contentType: string, filename: string, expiresAtMs: number, base: string): Promise<string>
  /** The object's real size and type, or null when nothing was uploaded under the key. */
  stat(key: string): Promise<StoredObject | null>
  /**
   * Fixes the object a submission referenced so no later PUT can replace it: S3 copies it (only if its
   * ETag is still the one checked) to `sealedKey(key)`, which no presigned URL ever names; the embedded
   * store needs nothing (an object there is never overwritten). False when the object changed meanwhile.
   */
  seal(key: string, etag: string | null): Promise<boolean>
  /** Where a referenced object is read from after `seal`. */
  sealedKey(key: string): string
  /** Removes the object and its sealed copy. */
  remove(key: string): Promise<void>
  /**
   * The object's bytes, or null when nothing is stored under the key or it holds more than `maxBytes`
   * (never more than `maxBytes` are read into memory). For fixloop's own use (the agent's attachments
   * folder): clients download through presigned URLs.
   */
  read(key: string, maxBytes: number): Promise<Uint8Array | null>
  /**
   * Replaces a referenced object with new content (a session replay's scrubbed version): written to
   * `sealedKey(key)`, and whatever else the store held for the key (S3's unsealed upload) removed, so the
   * raw bytes are gone. No presigned URL can write there.
   */
  replaceSealed(key: string, bytes: Uint8Array, contentType: string): Promise<void>
}

/** Content types a widget may upload. Nothing a browser could run as a page (HTML, SVG, JavaScript). */
export const ALLOWED_CONTENT_TYPES: readonly string[] = [
  'image/png',
  'image/jpeg',
  'image/webp',
  'image/gif',
  'image/avif',
  'text/plain',
  'application/json',
  'application/pdf',
  'video/webm',
  'video/mp4',
  // Session replays only (kind 'replay', REPLAY_CONTENT_TYPES): gzip of rrweb JSON.
  'application/gzip',
]

/** The types a session replay (kind 'replay') is uploaded as: gzip of UTF-8 JSON, or the JSON itself. */
export const REPLAY_CONTENT_TYPES: readonly string[] = ['application/gzip', 'application/json']
/** Types only a session replay may use: anything else uploaded as gzip could be anything. */
export const REPLAY_ONLY_CONTENT_TYPES: readonly string[] = ['application/gzip']

/** Upload keys are "<appId>/<32 hex>": unguessable, scoped to the App, and safe as a file path. */
export const UPLOAD_KEY_RE = /^[0-9a-f]{24}\/[0-9a-f]{32}$/

/** The media type without parameters, lower-cased ("Image/PNG; q=1" → "image/png"). */
export function baseContentType(value: string): string {
  return value.split(';')[0].trim().toLowerCase()
}

/** A filename safe to put in a Content-Disposition header. */
export function safeFilename(name: string | null | undefined, fallback: string): string {
  const cleaned = (name ?? '').replace(/[^A-Za-z0-9._ -]/g, '_').replace(/^[.\s]+/, '').slice(0, 100).trim()
  return cleaned || fallback
}

/** The extensions a download of each allowed type may keep (the first one is given when it has none of them). */
const EXTENSIONS: Record<string, readonly string[]> = {
  'image/png': ['png'],
  'image/jpeg': ['jpg', 'jpeg'],
  'image/webp': ['webp'],
  'image/gif': ['gif'],
  'image/avif': ['avif'],
  'text/plain': ['txt', 'log', 'text'],
  'application/json': ['json'],
  'application/pdf': ['pdf'],
  'video/webm': ['webm'],
  'video/mp4': ['mp4'],
  'application/gzip': ['gz'],
}

/**
 * The name a download is saved under: `safeFilename`, with an extension that matches its stored type.
 * The uploader names the file, so `checkout.html` or `invoice.exe` declared as `image/png` would be saved
 * with an extension a desktop opens as a page or a program; it is saved as `checkout.png` instead.
 */
export function downloadFilename(name: string | null | undefined, contentType: string, fallback: string): string {
  const safe = safeFilename(name, fallback)
  const allowed = EXTENSIONS[baseContentType(contentType)]
  if (!allowed) return safe
  const dot = safe.lastIndexOf('.')
  const stem = dot > 0 ? safe.slice(0, dot) : safe
  const ext = dot > 0 ? safe.slice(dot + 1).toLowerCase() : ''
  return allowed.includes(ext) ? safe : `${stem}.${allowed[0]}`
}
