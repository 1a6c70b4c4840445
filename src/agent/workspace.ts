/**
 * Run workspaces live OUTSIDE the data dir (FIXLOOP_WORK_DIR, default `<tmp>/fixloop-work-<uid>`), one
 * 0700 directory per fixloop instance (named from a hash of its data dir, so two instances sharing the
 * root never clean up each other's runs) and one per run inside it:
 *   repo/   the clone (the agent's, read-write)      home/  the agent's HOME
 *   out/    where the agent writes result.json        task.md  the task (read-only to the agent)
 *   attachments/  the report's screenshots and images (dir 0555, files 0444, bound read-only)
 *   base.git/  fixloop's own bare clone: the base commit's objects, then the judged tree and the commit
 *              that is pushed (never mounted into the sandbox, shares no file with repo/ or the remote)
 *   cred/   the credential helper during clone/push   (never mounted into the sandbox)
 *   passwd, group  the sandbox's accounts when the agent runs as a uid of its own (fixloop is root)
 */
import { createHash } from 'node:crypto'
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readSync, existsSync } from 'node:fs'
import { chmod } from 'node:fs/promises'
import { join } from 'node:path'
import { execCommand } from './exec'
import { StartupError } from '../core/startup-error'
import type { WorkspacePaths } from './sandbox'

export interface Workspace extends WorkspacePaths {
  root: string
  credDir: string
  judgeIndex: string
  /** fixloop's private bare clone, which the agent never sees (src/agent/change.ts). */
  baseRepo: string
  /**
   * HOME of fixloop's own git commands: empty, never mounted into the sandbox. Not the agent's HOME, where
   * the agent could plant `~/.config/git/ignore` (files left out of the judged change) or a `~/.netrc`.
   */
  gitHome: string
}

/**
 * A private directory: created 0700, refused when it is a symlink or someone else's. A refusal is the
 * operator's to fix (FIXLOOP_WORK_DIR set to a file, a shared folder): a StartupError, so `serve` exits 2
 * with the message instead of 1 with a stack.
 */
function privateDir(path: string): void {
  try {
    mkdirSync(path, { recursive: true, mode: 0o700 })
  } catch (e) {
    // A file there: said below as "not a plain directory".
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
  }
  const st = lstatSync(path)
  if (st.isSymbolicLink() || !st.isDirectory()) throw new StartupError(`work dir ${path} is not a plain directory (FIXLOOP_WORK_DIR)`)
  if (process.getuid && st.uid !== process.getuid()) throw new StartupError(`work dir ${path} belongs to another user (FIXLOOP_WORK_DIR)`)
  if ((st.mode & 0o077) !== 0) throw new StartupError(`work dir ${path} is readable by others (mode ${(st.mode & 0o777).toString(8)}); use a 0700 directory (chmod 700 ${path}, or another FIXLOOP_WORK_DIR)`)
}

/** The directory holding this instance's workspaces. */
export function instanceDir(workDir: string, dataDir: string): string {
  privateDir(workDir)
  const dir = join(workDir, createHash('sha256').update(dataDir).digest('hex').slice(0, 16))
  privateDir(dir)
  return dir
}

export function createWorkspace(instance: string, runId: string): Workspace {
  const root = join(instance, runId)
  const ws: Workspace = {
    root,
    repo: join(root, 'repo'),
    home: join(root, 'home'),
    outDir: join(root, 'out'),
    resultFile: join(root, 'out', 'result.json'),
    taskFile: join(root, 'task.md'),
    credDir: join(root, 'cred'),
    judgeIndex: join(root, 'judge.index'),
    baseRepo: join(root, 'base.git'),
    attachmentsDir: join(root, 'attachments'),
    gitHome: join(root, 'git-home'),
    passwdFile: join(root, 'passwd'),
    groupFile: join(root, 'group'),
  }
  for (const d of [root, ws.home, ws.outDir, ws.gitHome]) mkdirSync(d, { recursive: true, mode: 0o700 })
  return ws
}

/** Reads a file the agent wrote, never following a symlink it planted, at most `max` bytes; null when absent. */
export function readAgentFile(path: string, max = 64 * 1024): string | null {
  if (!existsSync(path)) return null
  let fd: number
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  } catch {
    return null
  }
  try {
    if (!fstatSync(fd).isFile()) return null
    const buf = Buffer.alloc(max)
    const n = readSync(fd, buf, 0, max, 0)
    return buf.subarray(0, n).toString('utf8')
  } finally {
    closeSync(fd)
  }
}

/** coreutils, from the system's folders only. */
const SYSTEM_PATH = { PATH: '/usr/bin:/bin' }

/**
 * Hands the folders the agent writes (its clone, HOME and out folder) to `uid` (its own gid too), and makes
 * the task file readable to it: before a sandboxed command that runs as another uid, and back to fixloop's
 * own afterwards (every process of the run is gone by then). Symlinks are changed, never followed.
 */
export async function handWorkspace(ws: Workspace, uid: number): Promise<void> {
  const r = await execCommand(['chown', '-R', '-h', `${uid}:${uid}`, '--', ws.repo, ws.home, ws.outDir], { cwd: ws.root, env: SYSTEM_PATH, timeoutMs: 120_000 })
  if (r.code !== 0) throw new Error(`could not hand the workspace to uid ${uid}: ${r.output.trim().split('\n').slice(-2).join(' | ')}`)
  await chmod(ws.taskFile, 0o644).catch(() => undefined)
  // bwrap enters the clone (--chdir) before the agent's uid is taken, as root without capabilities: it
  // needs the folder's search bit for others (a umask of 077 left none). The workspace's own folder stays
  // 0700 on the host, so nobody else comes this far.
  await chmod(ws.repo, 0o755).catch(() => undefined)
}

/**
 * Removes a run's workspace. Every folder in it is made the owner's first: the agent may have left folders
 * it took every permission from (`chmod 000`), which `rm -r` cannot enter as a non-root user, and a
 * workspace left behind would hold the App's code. coreutils' `chmod -R` and `rm -rf` walk by file
 * descriptor, so a chain of folders deeper than PATH_MAX (an audit built one) is removed too; symlinks are
 * never followed. The attachments folder's 0555 is undone the same way. Asynchronous: the agent decides
 * how many files the workspace holds.
 */
export async function removeWorkspace(root: string): Promise<void> {
  await execCommand(['chmod', '-R', 'u+rwx', '--', root], { cwd: '/', env: SYSTEM_PATH, timeoutMs: 300_000 }).catch(() => undefined)
  await execCommand(['rm', '-rf', '--', root], { cwd: '/', env: SYSTEM_PATH, timeoutMs: 300_000 }).catch(() => undefined)
}

/** `removeWorkspace`, synchronously (the reclaim at start, before any run); throws when it cannot. */
export function removeWorkspaceSync(root: string): void {
  Bun.spawnSync(['chmod', '-R', 'u+rwx', '--', root], { env: SYSTEM_PATH, stdout: 'ignore', stderr: 'ignore' })
  const removed = Bun.spawnSync(['rm', '-rf', '--', root], { env: SYSTEM_PATH, stdout: 'ignore', stderr: 'pipe' })
  if (removed.exitCode !== 0 || existsSync(root)) throw new Error(`could not remove ${root}: ${removed.stderr.toString().trim().split('\n').slice(-1)[0] ?? ''}`)
}
