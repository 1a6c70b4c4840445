/**
 * The embedded blob store: objects are files under <dataDir>/blobs/<appId>/<name>, uploaded with a PUT
 * to fixloop itself. Upload and download URLs carry an expiry and an HMAC-SHA256 signature over
 * (method, key, content type, size, expiry) under a key derived from the master key, so a URL cannot be
 * stretched to another object, size, type or time.
 */
import { createPrivateFile } from '../db/data-dir'
import { createHmac, timingSafeEqual } from 'node:crypto'
import { linkSync, mkdirSync, writeFileSync, rmSync, statSync, statfsSync, readFileSync, existsSync, renameSync } from 'node:fs'
import { join } from 'node:path'
import type { BlobStore, PresignedPut, StoredObject } from './blob-store'
import { UPLOAD_KEY_RE } from './blob-store'

export class EmbeddedBlobStore implements BlobStore {
  readonly kind = 'embedded' as const
  readonly root: string

  constructor(
    dataDir: string,
    private readonly signingKey: Uint8Array,
  ) {
    this.root = join(dataDir, 'blobs')
  }

  async check(): Promise<void> {
    mkdirSync(this.root, { recursive: true, mode: 0o700 })
  }

  freeBytes(): number {
    // The folder is made at the first upload; until then its parent, the data dir, is where it will be.
    const s = statfsSync(existsSync(this.root) ? this.root : join(this.root, '..'))
    // An upload makes three files (the temp file, the object, its .type): with no inode for them there
    // is no room, whatever the bytes (counted only where the file system counts inodes).
    if (Number(s.files) > 0 && Number(s.ffree) < 3) return 0
    return Number(s.bavail) * Number(s.bsize)
  }

  /** Absolute path of a key's file. The key format is checked first: no traversal is expressible. */
  pathOf(key: string): string {
    if (!UPLOAD_KEY_RE.test(key)) throw new Error('invalid upload key')
    return join(this.root, key)
  }

  sign(method: 'PUT' | 'GET', key: string, contentType: string, size: number, expires: number): string {
    return createHmac('sha256', this.signingKey).update(`${method}\n${key}\n${contentType}\n${size}\n${expires}`).digest('base64url')
  }

  verify(method: 'PUT' | 'GET', key: string, contentType: string, size: number, expires: number, sig: string): boolean {
    const expected = Buffer.from(this.sign(method, key, contentType, size, expires))
    const given = Buffer.from(sig)
    return expected.length === given.length && timingSafeEqual(expected, given)
  }

  async presignPut(key: string, contentType: string, byteSize: number, expiresAtMs: number, base: string): Promise<PresignedPut> {
    const expires = Math.floor(expiresAtMs / 1000)
    const sig = this.sign('PUT', key, contentType, byteSize, expires)
    return {
      url: `${base}/v1/uploads/${key}?expires=${expires}&sig=${sig}`,
      headers: { 'Content-Type': contentType },
    }
  }

  async presignGet(key: string, contentType: string, _filename: string, expiresAtMs: number, base: string): Promise<string> {
    const expires = Math.floor(expiresAtMs / 1000)
    const sig = this.sign('GET', key, contentType, 0, expires)
    return `${base}/v1/uploads/${key}?expires=${expires}&sig=${sig}`
  }

  async stat(key: string): Promise<StoredObject | null> {
    const file = this.pathOf(key)
    if (!existsSync(file)) return null
    const meta = `${file}.type`
    return { size: statSync(file).size, contentType: existsSync(meta) ? readFileSync(meta, 'utf8') : null, etag: null }
  }

  /** Nothing to do: writeStream never replaces an existing object. */
  async seal(): Promise<boolean> {
    return true
  }

  sealedKey(key: string): string {
    return key
  }

  async read(key: string, maxBytes: number): Promise<Uint8Array | null> {
    const file = this.pathOf(key)
    if (!existsSync(file) || statSync(file).size > maxBytes) return null
    // Objects are never rewritten in place (writeStream links a complete file; replaceSealed renames one
    // over it): the read is still bounded after the fact, in case the file was replaced since the stat.
    const bytes = new Uint8Array(await Bun.file(file).arrayBuffer())
    return bytes.length > maxBytes ? null : bytes
  }

  async remove(key: string): Promise<void> {
    const file = this.pathOf(key)
    rmSync(file, { force: true })
    rmSync(`${file}.type`, { force: true })
  }

  /** The object is the sealed one here: replaced whole (temp file, then rename) so no reader sees half. */
  async replaceSealed(key: string, bytes: Uint8Array, contentType: string): Promise<void> {
    const file = this.pathOf(key)
    const tmp = `${file}.scrub-${process.pid}-${Date.now()}`
    createPrivateFile(tmp)
    try {
      await Bun.write(tmp, bytes)
      writeFileSync(`${file}.type`, contentType, { mode: 0o600 })
      renameSync(tmp, file)
    } finally {
      rmSync(tmp, { force: true })
    }
  }

  /**
   * Streams a request body to the key's file, counting bytes as they arrive: more than `expectedSize`
   * aborts at once (nothing near 15 MB is ever buffered), fewer is refused at the end. The file appears
   * under its name only when complete (written to a temp name, then hard-linked). A link never replaces
   * an existing file: of two PUTs racing on one key (in this process or another) only the first to
   * finish lands ('exists' for the other), and an object, once there, is never overwritten.
   */
  async writeStream(key: string, body: ReadableStream<Uint8Array>, expectedSize: number, contentType: string): Promise<'ok' | 'too_large' | 'size_mismatch' | 'exists'> {
    const file = this.pathOf(key)
    mkdirSync(join(file, '..'), { recursive: true, mode: 0o700 })
    const tmp = `${file}.part-${process.pid}-${Date.now()}`
    // Uploaded screenshots and attachments are as private as the database.
    createPrivateFile(tmp)
    const sink = Bun.file(tmp).writer()
    let written = 0
    let outcome: 'ok' | 'too_large' | 'size_mismatch' | 'exists' = 'ok'
    try {
      const reader = body.getReader()
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        written += value.byteLength
        if (written > expectedSize) {
          outcome = 'too_large'
          await reader.cancel().catch(() => {})
          break
        }
        // Awaited: a write Bun flushes later reports a full disk (ENOSPC) through its promise, which
        // would otherwise be an unhandled rejection while the PUT was answered from the end() below.
        await sink.write(value)
      }
      await sink.end()
      if (outcome === 'ok' && written !== expectedSize) outcome = 'size_mismatch'
      if (outcome !== 'ok') {
        rmSync(tmp, { force: true })
        return outcome
      }
      writeFileSync(`${file}.type`, contentType, { mode: 0o600 })
      try {
        linkSync(tmp, file)
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
        outcome = 'exists'
      }
      rmSync(tmp, { force: true })
      return outcome
    } catch (e) {
      rmSync(tmp, { force: true })
      throw e
    }
  }
}
