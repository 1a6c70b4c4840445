/**
 * A fingerprint of the git metadata an agent must leave alone: the files under its clone's `.git` that
 * change how git behaves (config, hooks, info/: attributes, exclude, grafts, sparse-checkout; objects/info:
 * alternates; shallow, commondir). The agent owns these directories, so it can fill them with 200,000
 * files or gigabytes of data to stall whoever reads them. The walk is therefore asynchronous (the server
 * keeps answering while it runs) and bounded: at most `entries` directory entries, no file larger than
 * `fileBytes`, at most `bytes` hashed in all and `ms` of wall time. Hitting a bound is an answer, not an
 * error: the caller refuses the run with the reason.
 */
import { createHash } from 'node:crypto'
import { constants } from 'node:fs'
import { lstat, open, opendir } from 'node:fs/promises'
import { join } from 'node:path'

export interface MetaLimits {
  /** Directory entries visited, over every directory walked. */
  entries: number
  /** Largest single file read (a clone's hooks and config are a few KB). */
  fileBytes: number
  /** Bytes hashed in all. */
  bytes: number
  /** Wall time of the whole walk. */
  ms: number
}

export const META_LIMITS: MetaLimits = { entries: 2000, fileBytes: 1024 * 1024, bytes: 16 * 1024 * 1024, ms: 10_000 }

/** The paths (relative to the clone) whose content is fingerprinted. */
export const META_PATHS = ['.git/config', '.git/hooks', '.git/info', '.git/objects/info', '.git/shallow', '.git/commondir'] as const

export type MetaFingerprint = { ok: true; files: Map<string, string> } | { ok: false; refused: string }

class Refused extends Error {}

const CHUNK = 256 * 1024

/** Fingerprints every metadata path of `repo`, or says which bound the agent's metadata broke. */
export async function fingerprintMeta(repo: string, limits: MetaLimits = META_LIMITS): Promise<MetaFingerprint> {
  const files = new Map<string, string>()
  const deadline = Date.now() + limits.ms
  let entries = 0
  let hashed = 0
  const inTime = () => {
    if (Date.now() > deadline) throw new Refused(`reading the git metadata took longer than ${limits.ms / 1000} s (the agent filled .git)`)
  }

  async function hashFile(rel: string, full: string, size: number): Promise<string> {
    if (size > limits.fileBytes) throw new Refused(`the agent wrote a ${size}-byte file into git metadata (${rel}; limit ${limits.fileBytes} bytes)`)
    // O_NOFOLLOW | O_NONBLOCK: a symlink or FIFO swapped in after the lstat neither redirects nor blocks the read.
    const fh = await open(full, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
    try {
      const st = await fh.stat()
      if (!st.isFile()) return `special:${st.mode.toString(8)}`
      const hash = createHash('sha256')
      const buf = Buffer.alloc(CHUNK)
      let read = 0
      for (;;) {
        inTime()
        const { bytesRead } = await fh.read(buf, 0, CHUNK, read)
        if (bytesRead === 0) break
        read += bytesRead
        hashed += bytesRead
        if (read > limits.fileBytes) throw new Refused(`the agent wrote a file larger than ${limits.fileBytes} bytes into git metadata (${rel})`)
        if (hashed > limits.bytes) throw new Refused(`the agent filled git metadata with more than ${limits.bytes} bytes (at ${rel})`)
        hash.update(buf.subarray(0, bytesRead))
      }
      return `${st.mode.toString(8)}:${hash.digest('hex')}`
    } finally {
      await fh.close()
    }
  }

  async function walk(rel: string): Promise<void> {
    inTime()
    const full = join(repo, rel)
    const st = await lstat(full).catch(() => null)
    if (!st) return
    if (st.isSymbolicLink()) files.set(rel, 'symlink')
    // Only regular files are opened: a FIFO the agent planted would block a reader.
    else if (st.isDirectory()) {
      const dir = await opendir(full)
      try {
        for await (const d of dir) {
          if (++entries > limits.entries) throw new Refused(`the agent filled git metadata with more than ${limits.entries} entries (at ${rel})`)
          await walk(`${rel}/${d.name}`)
        }
      } finally {
        await dir.close().catch(() => undefined)
      }
    } else if (!st.isFile()) files.set(rel, `special:${st.mode.toString(8)}`)
    else files.set(rel, await hashFile(rel, full, st.size))
  }

  try {
    for (const rel of META_PATHS) await walk(rel)
    return { ok: true, files }
  } catch (e) {
    if (e instanceof Refused) return { ok: false, refused: e.message }
    return { ok: false, refused: `cannot read the git metadata: ${(e as Error).message}` }
  }
}
