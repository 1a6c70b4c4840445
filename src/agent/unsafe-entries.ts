/**
 * What fixloop's own git must never meet in the agent's clone, found before it runs there (as root when
 * fixloop is root): a symlink, FIFO, socket or device anywhere under `.git` (git follows a ref that is a
 * symlink: `refs/heads/x → /dev/zero` ran it out of memory, `packed-refs → /etc/shadow` quoted a line of
 * the file in its error), a nested `.git` in the work tree (`git add -A` resolves a nested repository's
 * HEAD and refs the same way), and a FIFO, socket or device anywhere (a reader of a FIFO blocks). The walk
 * is asynchronous and bounded in entries and time, since the agent decides how big the tree is; a bound
 * hit, or a folder that cannot be read (a path too deep), is a refusal too, never a pass.
 */
import { opendir } from 'node:fs/promises'
import { join } from 'node:path'

export interface WalkLimits {
  entries: number
  ms: number
}
export const UNSAFE_WALK_LIMITS: WalkLimits = { entries: 1_000_000, ms: 60_000 }

/** Why the clone at `repo` cannot be read by fixloop's git, or null. */
export async function unsafeEntry(repo: string, limits: WalkLimits = UNSAFE_WALK_LIMITS): Promise<string | null> {
  const deadline = Date.now() + limits.ms
  let entries = 0
  const pending: string[] = ['']
  for (let rel = pending.pop(); rel !== undefined; rel = pending.pop()) {
    let dir
    try {
      dir = await opendir(join(repo, rel))
    } catch (e) {
      return `the agent left a folder fixloop cannot read (${rel || '.'}: ${(e as NodeJS.ErrnoException).code ?? 'error'})`
    }
    const inGit = rel === '.git' || rel.startsWith('.git/')
    for await (const e of dir) {
      if (++entries > limits.entries) return `the agent left more than ${limits.entries} files and folders in its clone`
      if (Date.now() > deadline) return `reading the agent's clone took longer than ${limits.ms / 1000} s`
      const path = rel ? `${rel}/${e.name}` : e.name
      // A nested `.git` of any type: a folder, a gitfile, or a SYMLINK, which git follows as root outside
      // the sandbox (`sub/.git -> ../fake`, whose packed-refs links to a host file: git quoted a line of
      // the file in its error, and a ref linked to /dev/zero ran it out of memory).
      if (e.name === '.git' && rel !== '') return `a nested git repository (${path})`
      if (e.isDirectory()) pending.push(path)
      else if (e.isSymbolicLink()) {
        if (inGit) return `a symlink in git metadata (${path})`
      } else if (!e.isFile()) return inGit ? `a special file in git metadata (${path})` : `a special file (FIFO, socket or device): ${path}`
    }
  }
  return null
}
