/**
 * The agent's sandbox: Debian's bubblewrap (`bwrap`). The agent is treated as hostile (its task comes from
 * anonymous end users), so it sees only:
 *   - the clone, read-write, at /fixloop/repo (its working directory), its own HOME at /fixloop/home,
 *     the task file read-only at /fixloop/task.md, a writable /fixloop/out for the result file and the
 *     report's screenshots read-only at /fixloop/attachments (src/agent/report-media.ts);
 *   - a private /tmp, a minimal /dev, a /proc of its own PID namespace;
 *   - the system's tools read-only: /usr, /bin, /sbin, /lib*, a handful of /etc entries (no /etc/fixloop)
 *     and the extra read-only paths the operator lists (FIXLOOP_AGENT_SANDBOX_PATHS);
 * and nothing else: not the data dir, the master key, other workspaces or the server's environment.
 * It runs with no capabilities in new PID/IPC/UTS/cgroup namespaces and a new session; the network is
 * shared or unshared (FIXLOOP_AGENT_NETWORK). `--die-with-parent` plus the PID namespace mean that
 * killing the outer bwrap process ends every process the agent started, `setsid` or not.
 */
import { existsSync, lstatSync, readlinkSync } from 'node:fs'

export type SandboxMode = 'bwrap' | 'off'

export interface SandboxOptions {
  mode: SandboxMode
  /** Whether the agent may use the network (agent CLIs need their model API). */
  network: boolean
  /** Extra host paths the agent may read (a CLI installed under /opt or a home directory). */
  readOnlyPaths: readonly string[]
  /** Why bwrap cannot sandbox on this machine (checked once at start), or null: no run starts while set. */
  unavailable?: string | null
}

/** Host paths of one run's workspace, mounted into the sandbox. */
export interface WorkspacePaths {
  repo: string
  home: string
  taskFile: string
  outDir: string
  resultFile: string
  /** The report's screenshots and images (read-only to the agent: a read-only bind, files 0444, dir 0555). */
  attachmentsDir: string
}

/** Where the agent sees the workspace: fixed paths, so nothing of the host's layout leaks in. */
export const INSIDE = {
  repo: '/fixloop/repo',
  home: '/fixloop/home',
  taskFile: '/fixloop/task.md',
  resultFile: '/fixloop/out/result.json',
  outDir: '/fixloop/out',
  attachmentsDir: '/fixloop/attachments',
} as const

/** /etc entries agents and their tools need (name resolution, TLS roots, users, the linker, Debian alternatives). */
const ETC = ['resolv.conf', 'hosts', 'nsswitch.conf', 'host.conf', 'passwd', 'group', 'localtime', 'ssl', 'ca-certificates', 'ca-certificates.conf', 'alternatives', 'ld.so.cache', 'ld.so.conf', 'ld.so.conf.d', 'mime.types']

/** Top-level system directories: bound read-only, or recreated as the symlinks they are (merged /usr). */
const SYSTEM_DIRS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']

/** The paths the agent sees for the task and result files, depending on the mode. */
export function agentPaths(mode: SandboxMode, ws: WorkspacePaths): { repo: string; home: string; taskFile: string; resultFile: string; attachmentsDir: string } {
  return mode === 'bwrap' ? { repo: INSIDE.repo, home: INSIDE.home, taskFile: INSIDE.taskFile, resultFile: INSIDE.resultFile, attachmentsDir: INSIDE.attachmentsDir } : ws
}

/**
 * The argv that runs `/bin/sh -c command` for the agent: wrapped in bwrap, or bare when the sandbox is
 * off. Nothing secret goes in argv (visible to `ps`): the environment is passed to bwrap's own process.
 */
export function sandboxArgv(opts: SandboxOptions, ws: WorkspacePaths, command: string): string[] {
  if (opts.mode === 'off') return ['/bin/sh', '-c', command]
  const a = ['bwrap', '--die-with-parent', '--new-session', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--cap-drop', 'ALL']
  if (!opts.network) a.push('--unshare-net')
  a.push('--hostname', 'fixloop-agent', '--ro-bind', '/usr', '/usr')
  for (const dir of SYSTEM_DIRS) {
    if (!existsSync(dir)) continue
    const st = lstatSync(dir)
    if (st.isSymbolicLink()) a.push('--symlink', readlinkSync(dir), dir)
    else if (st.isDirectory()) a.push('--ro-bind', dir, dir)
  }
  // The private /tmp first: bwrap applies mounts in order, so a read-only path under /tmp (a checkout
  // in /tmp, say) must be bound after the tmpfs, or the tmpfs would hide it.
  // /proc/sys read-only: when fixloop runs as root the agent is uid 0 (no capabilities), and a sysctl file
  // only asks for its owner, root. bwrap covers /proc/sys itself only where the directory answers a write
  // test, which procfs's /proc/sys never does; a writable kernel.core_pattern runs any program as host root
  // on the next crash (an audit did it). The bind is read-only, and the agent has no capability to undo it.
  a.push('--proc', '/proc', '--ro-bind', '/proc/sys', '/proc/sys', '--dev', '/dev', '--tmpfs', '/tmp')
  for (const name of ETC) a.push('--ro-bind-try', `/etc/${name}`, `/etc/${name}`)
  for (const p of opts.readOnlyPaths) a.push('--ro-bind-try', p, p)
  a.push('--bind', ws.repo, INSIDE.repo, '--bind', ws.home, INSIDE.home, '--bind', ws.outDir, INSIDE.outDir, '--ro-bind', ws.taskFile, INSIDE.taskFile)
  // Read-only bind: the agent (root in its namespace or not) can neither write, delete, rename nor chmod
  // there (EROFS), whatever the files' modes.
  a.push('--ro-bind', ws.attachmentsDir, INSIDE.attachmentsDir)
  a.push('--remount-ro', '/', '--chdir', INSIDE.repo, '/bin/sh', '-c', command)
  return a
}

/**
 * Null when bwrap can start a sandbox here, else why not (missing binary, user namespaces refused).
 * `serve` refuses to start on an error unless FIXLOOP_AGENT_SANDBOX=off. Probed once per process (a
 * sandbox start costs ~40 ms; what the kernel allows does not change while fixloop runs), without
 * blocking the event loop.
 */
export function sandboxProblem(): Promise<string | null> {
  return (probed ??= probeSandbox())
}
let probed: Promise<string | null> | undefined

async function probeSandbox(): Promise<string | null> {
  const bwrap = Bun.which('bwrap')
  if (!bwrap) return 'bubblewrap (bwrap) is not installed: apt-get install bubblewrap (or set FIXLOOP_AGENT_SANDBOX=off, which is unsafe)'
  const probe = Bun.spawn(['bwrap', '--die-with-parent', '--unshare-pid', '--ro-bind', '/usr', '/usr', ...SYSTEM_DIRS.flatMap((d) => (existsSync(d) && lstatSync(d).isSymbolicLink() ? ['--symlink', readlinkSync(d), d] : existsSync(d) ? ['--ro-bind', d, d] : [])), '--proc', '/proc', '--dev', '/dev', '/bin/true'], {
    stdout: 'ignore',
    stderr: 'pipe',
    env: { PATH: '/usr/bin:/bin' },
  })
  const [stderr, exitCode] = await Promise.all([new Response(probe.stderr).text(), probe.exited])
  if (exitCode === 0) return null
  return `bubblewrap (${bwrap}) cannot create a sandbox here: ${stderr.trim().slice(0, 300)} (user namespaces may be disabled: sysctl kernel.unprivileged_userns_clone=1, or run as root; or set FIXLOOP_AGENT_SANDBOX=off, which is unsafe)`
}
