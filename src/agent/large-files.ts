/**
 * The agent's files over the size limit, found by their size alone BEFORE fixloop's git reads them. git
 * hashes every file it stages: a 50 GB sparse file written by the agent (costing it nothing) cost git its
 * whole 120 s timeout of CPU on every run, only to be refused afterwards as too large. The walk lstats
 * (never follows a symlink), skips the top `.git`, and is bounded in entries and time like
 * src/agent/unsafe-entries.ts, which has already refused anything stranger than files, folders and links.
 */
import { lstat, opendir, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { UNSAFE_WALK_LIMITS, type WalkLimits } from './unsafe-entries'

export interface LargeFile {
  /** Relative to the work tree, as git prints it (decoded as UTF-8). */
  path: string
  bytes: number
  /** The name is not UTF-8: it cannot be named to git exactly, so it is never excused as ignored. */
  undecodable: boolean
}

/** A name Bun decoded with a replacement character: the string no longer names the file. */
const LOSSY = '\uFFFD'

/** The regular files larger than `limit` bytes in the work tree, or why the tree cannot be read. */
export async function largeFiles(workTree: string, limit: number, limits: WalkLimits = UNSAFE_WALK_LIMITS): Promise<LargeFile[] | string> {
  const deadline = Date.now() + limits.ms
  let entries = 0
  const out: LargeFile[] = []
  const pending: string[] = ['']
  for (let rel = pending.pop(); rel !== undefined; rel = pending.pop()) {
    const dirPath = join(workTree, rel)
    let lossy = false
    try {
      for await (const e of await opendir(dirPath)) {
        if (++entries > limits.entries) return `the agent left more than ${limits.entries} files and folders in its clone`
        if (Date.now() > deadline) return `reading the agent's clone took longer than ${limits.ms / 1000} s`
        if (rel === '' && e.name === '.git') continue
        const path = rel ? `${rel}/${e.name}` : e.name
        if (e.isDirectory()) pending.push(path)
        else if (!e.isFile()) continue
        else if (e.name.includes(LOSSY)) lossy = true
        else {
          const bytes = (await lstat(join(workTree, path))).size
          if (bytes > limit) out.push({ path, bytes, undecodable: false })
        }
      }
      // Names that are not UTF-8 are read again as bytes: their decoded string opens no file.
      if (lossy) {
        const dirBytes = Buffer.from(dirPath)
        for (const name of await readdir(dirBytes, { encoding: 'buffer' })) {
          const decoded = name.toString('utf8')
          if (!decoded.includes(LOSSY)) continue
          const st = await lstat(Buffer.concat([dirBytes, Buffer.from('/'), name]))
          if (st.isFile() && st.size > limit) out.push({ path: rel ? `${rel}/${decoded}` : decoded, bytes: st.size, undecodable: true })
        }
      }
    } catch (e) {
      return `the agent left a file fixloop cannot read (${rel || '.'}: ${(e as NodeJS.ErrnoException).code ?? 'error'})`
    }
  }
  return out
}
