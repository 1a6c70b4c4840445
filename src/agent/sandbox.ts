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
 * It runs with no capabilities in new PID/IPC/UTS/cgroup namespaces and a new session, as fixloop's uid,
 * or as a uid leased for the run when fixloop is root (`runAs`: never uid 0); the network is shared or unshared
 * (FIXLOOP_AGENT_NETWORK). `--die-with-parent` plus the PID namespace mean that
 * killing the outer bwrap process ends every process the agent started, `setsid` or not.
 */
import { existsSync, lstatSync, readlinkSync } from 'node:fs'
import type { AgentUids } from './agent-uid'
import { ETC, SYSTEM_DIRS } from '../core/sandbox-shown'

export type SandboxMode = 'bwrap' | 'off'

export interface SandboxOptions {
  mode: SandboxMode
  /** Whether the agent may use the network (agent CLIs need their model API). */
  network: boolean
  /** Extra host paths the agent may read (a CLI installed under /opt or a home directory). */
  readOnlyPaths: readonly string[]
  /** Why bwrap cannot sandbox on this machine (checked once at start), or null: no run starts while set. */
  unavailable?: string | null
  /**
   * Whom the agents run as: fixloop's own uid, or (fixloop is root) a uid leased for each run, or nobody
   * where the leased range is not mapped (src/agent/agent-uid.ts).
   */
  agentUids?: AgentUids
  /** The uid (and gid) this run's agent runs as instead of fixloop's: its lease. The workspace is handed to it for each command (run.ts). */
  runAs?: number
  /** With `runAs`: the run's limit of processes and threads (RLIMIT_NPROC), `AGENT_MAX_PROCESSES` unless set. */
  maxProcesses?: number
}

/** util-linux's setpriv: drops from root to the agent's uid inside the sandbox (bwrap keeps only SETUID/SETGID for it). */
const SETPRIV = '/usr/bin/setpriv'
/** util-linux's prlimit: sets the run's process limit before setpriv takes the uid. */
const PRLIMIT = '/usr/bin/prlimit'
/** perl (Debian's perl-base, always installed): the one tool at hand that makes the keyctl calls below. */
const PERL = '/usr/bin/perl'

/** keyctl(2)'s syscall number where fixloop runs (x86-64, arm64); undefined elsewhere (no keyring step then). */
const KEYCTL_SYSCALL: number | undefined = { x64: 250, arm64: 219 }[process.arch as string]

/**
 * What each sandboxed command starts with, as the agent's uid, before the agent's own command: a new,
 * empty, anonymous session keyring (KEYCTL_JOIN_SESSION_KEYRING), and the uid's user keyrings cleared
 * (KEYCTL_CLEAR of @u and @us). A process inherits its parent's session keyring whatever its uid: an
 * audit's agents read and planted keys in fixloop's own (a root service or a login session has one),
 * each run passing them to the next. The user keyrings outlive a run; cleared, a later run drawing the
 * same uid (or sharing nobody) finds nothing. keyctl refused outright (ENOSYS, EPERM: Docker's seccomp
 * profile) means no keyring at all, which is as safe; any other failure stops the command.
 */
const KEYRING_PRELUDE = (nr: number) =>
  `my $j = syscall(${nr}, 1, 0); die "fixloop: no session keyring of its own: $!\n" if $j < 0 && !$!{ENOSYS} && !$!{EPERM}; ` +
  `if ($j >= 0) { syscall(${nr}, 7, -4); syscall(${nr}, 7, -5); } exec { $ARGV[0] } @ARGV or die "fixloop: exec $ARGV[0]: $!\n"`

/**
 * The most processes and threads an agent of its own uid (fixloop is root) may have at once: the kernel
 * counts RLIMIT_NPROC per uid, and the uid is the run's alone, so this bounds one run (a fork bomb stops
 * there instead of taking the host's PIDs: 32,768 by default). Agent CLIs and builds use a few hundred.
 * (Where runs share nobody, the count is of every nobody process on the host.) Not set for a fixloop that
 * is not root: the count would be of fixloop's own user, the server included (the systemd unit's
 * TasksMax bounds the service).
 */
export const AGENT_MAX_PROCESSES = 4096

/** Host paths of one run's workspace, mounted into the sandbox. */
export interface WorkspacePaths {
  repo: string
  home: string
  taskFile: string
  outDir: string
  resultFile: string
  /** The report's screenshots and images (read-only to the agent: a read-only bind, files 0444, dir 0555). */
  attachmentsDir: string
  /** The sandbox's /etc/passwd and /etc/group when the agent runs as another uid (agent-uid.ts `accountFiles`). */
  passwdFile: string
  groupFile: string
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
  // The capabilities setpriv needs to become the agent's uid and empty every capability set (bounding and
  // inheritable too); a uid change from root clears the rest, and bwrap's no_new_privs keeps a setuid
  // binary from bringing any back.
  if (opts.runAs !== undefined) a.push('--cap-add', 'CAP_SETUID', '--cap-add', 'CAP_SETGID', '--cap-add', 'CAP_SETPCAP')
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
  // /proc/sys read-only: a sysctl file only asks for its owner, root, and bwrap covers /proc/sys itself only
  // where the directory answers a write test, which procfs's /proc/sys never does. When an agent ran as uid
  // 0 (fixloop as root, before `runAs`), it set kernel.core_pattern, and the kernel ran its program as host
  // root on the next crash (an audit did it). Kept beside `runAs` as a second wall; no capability undoes it.
  // An agent of another uid (fixloop is root) needs a /tmp anyone may write, as on a host.
  a.push('--proc', '/proc', '--ro-bind', '/proc/sys', '/proc/sys', '--dev', '/dev', ...(opts.runAs !== undefined ? ['--perms', '1777'] : []), '--tmpfs', '/tmp')
  // bwrap makes a missing parent folder 0700: an agent of another uid could not enter /etc (or /fixloop).
  if (opts.runAs !== undefined) a.push('--perms', '0755', '--dir', '/etc')
  // An agent of another uid sees accounts of the sandbox's own (itself, root, nobody), not the host's.
  const accounts = opts.runAs !== undefined ? ['passwd', 'group'] : []
  for (const name of ETC) if (!accounts.includes(name)) a.push('--ro-bind-try', `/etc/${name}`, `/etc/${name}`)
  if (opts.runAs !== undefined) a.push('--ro-bind', ws.passwdFile, '/etc/passwd', '--ro-bind', ws.groupFile, '/etc/group')
  for (const p of opts.readOnlyPaths) {
    // bwrap makes a bound path's missing parents 0700: an agent of another uid could not reach the path the
    // operator listed for it. The parents are empty folders of the sandbox's own (only the listed path is
    // bound), so they are made 0755.
    if (opts.runAs !== undefined) for (const dir of parentsToCreate(p)) a.push('--perms', '0755', '--dir', dir)
    a.push('--ro-bind-try', p, p)
  }
  if (opts.runAs !== undefined) a.push('--perms', '0755', '--dir', '/fixloop')
  a.push('--bind', ws.repo, INSIDE.repo, '--bind', ws.home, INSIDE.home, '--bind', ws.outDir, INSIDE.outDir, '--ro-bind', ws.taskFile, INSIDE.taskFile)
  // Read-only bind: the agent (root in its namespace or not) can neither write, delete, rename nor chmod
  // there (EROFS), whatever the files' modes.
  a.push('--ro-bind', ws.attachmentsDir, INSIDE.attachmentsDir)
  a.push('--remount-ro', '/', '--chdir', INSIDE.repo)
  if (opts.runAs !== undefined) a.push(PRLIMIT, `--nproc=${opts.maxProcesses ?? AGENT_MAX_PROCESSES}`, '--')
  if (opts.runAs !== undefined) a.push(SETPRIV, `--reuid=${opts.runAs}`, `--regid=${opts.runAs}`, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--')
  if (KEYCTL_SYSCALL !== undefined) a.push(PERL, '-e', KEYRING_PRELUDE(KEYCTL_SYSCALL), '--')
  a.push('/bin/sh', '-c', command)
  return a
}

/** Top-level folders the sandbox already has (bound or made above): what is under them is the host's, or /tmp's. */
const PRESENT_TOP = new Set(['/usr', '/etc', '/proc', '/dev', '/tmp', ...SYSTEM_DIRS])

/** The folders bwrap would create for `path`'s parents: from the first one not already in the sandbox down. */
function parentsToCreate(path: string): string[] {
  const parts = path.split('/').filter(Boolean)
  const out: string[] = []
  for (let i = 1; i < parts.length; i++) {
    const dir = '/' + parts.slice(0, i).join('/')
    if (i === 1 && PRESENT_TOP.has(dir)) {
      // Under /tmp the sandbox's tmpfs: its sub-folders are created; under a bound system folder, the host's.
      if (dir !== '/tmp') return []
      continue
    }
    out.push(dir)
  }
  return out
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
  const missing = [SETPRIV, PRLIMIT].find((tool) => !existsSync(tool))
  if (exitCode === 0 && process.getuid?.() === 0 && missing) return `${missing} (util-linux) is missing: as root, fixloop runs agents as a uid of their own through it (apt-get install util-linux)`
  if (exitCode === 0 && KEYCTL_SYSCALL !== undefined && !existsSync(PERL)) return `${PERL} (perl-base) is missing: every agent command starts with a keyring of its own through it (apt-get install perl-base)`
  if (exitCode === 0) return null
  return `bubblewrap (${bwrap}) cannot create a sandbox here: ${stderr.trim().slice(0, 300)} (user namespaces may be disabled: sysctl kernel.unprivileged_userns_clone=1, or run as root; or set FIXLOOP_AGENT_SANDBOX=off, which is unsafe)`
}
