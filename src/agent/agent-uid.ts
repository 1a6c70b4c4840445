/**
 * Whom a sandboxed agent runs as when fixloop is root: a host uid of its own for each run, never uid 0.
 *
 * As root without capabilities an agent could still write what the kernel lets root's uid write without one
 * (a setting under /proc/sys, which an audit used to run a program as host root; a root-owned socket's peer
 * checks; root's keyring). One shared uid (nobody) fixed that, but left what the kernel keeps per uid shared
 * between runs and Apps: the user keyring (a key one run added, a later run of another App read) and the
 * per-uid process and key quotas. So each run leases a uid no one else has: drawn at random from a range far
 * above regular, system, systemd-dynamic and the usual subordinate (container) uids, and never two at once
 * in one process. The agent CLIs ask who they are (`os.userInfo()`), so the sandbox gets a /etc/passwd and
 * /etc/group naming it (`accountFiles`).
 *
 * A user namespace that does not map the range (rootless Podman, Docker with userns-remap, usually 65,536
 * uids) cannot chown to it or become it: there every agent runs as nobody (65534), shared, as before; one
 * that maps only root (`unshare --map-root-user`) runs them as fixloop's own uid, root of that namespace
 * and an unprivileged user outside it.
 */
import { chmodSync, readFileSync, writeFileSync } from 'node:fs'

/** The uids runs lease from: 2,113,929,216 (0x7E000000) and the 1,048,576 after it; below 2^31, which some tools mishandle. */
export const AGENT_UID_RANGE = { first: 0x7e000000, count: 1 << 20 } as const

/** The shared uid when the range is not mapped here: nobody. */
export const NOBODY = 65534

/** How a fixloop running as `uid` picks its agents' uid: its own (not root), a leased one per run, or nobody. */
export type AgentUids = 'own' | 'per-run' | 'nobody'

export function agentUidsFor(mode: 'bwrap' | 'off', uid: number | undefined, mapped: (first: number, count: number) => boolean = rangeIsMapped): AgentUids {
  if (mode !== 'bwrap' || uid !== 0) return 'own'
  if (mapped(AGENT_UID_RANGE.first, AGENT_UID_RANGE.count)) return 'per-run'
  // A namespace mapping root alone (`unshare --map-root-user`): nobody cannot be become either, and root
  // here is an unprivileged user outside, like a fixloop that is not root.
  return mapped(NOBODY, 1) ? 'nobody' : 'own'
}

/** Whether this process's user namespace maps every uid and gid of [first, first+count) (/proc/self/uid_map). */
export function rangeIsMapped(first: number, count: number): boolean {
  const covers = (file: string) => {
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch {
      return false
    }
    return text
      .trim()
      .split('\n')
      .some((line) => {
        const [inside, , length] = line.trim().split(/\s+/).map(Number)
        return inside <= first && first + count <= inside + length
      })
  }
  return covers('/proc/self/uid_map') && covers('/proc/self/gid_map')
}

/** The uids leased by this process's runs now. */
const leased = new Set<number>()

export interface AgentUidLease {
  uid: number
  release(): void
}

/**
 * A uid for one run: `nobody` shared when the range is not mapped, else one drawn at random that no run of
 * this process holds. Another fixloop process on the host (cluster nodes side by side) draws from the same
 * million: two runs at once on one uid are about one chance in a million per pair of concurrent runs.
 */
export function leaseAgentUid(uids: Exclude<AgentUids, 'own'>, random: () => number = Math.random): AgentUidLease {
  if (uids === 'nobody') return { uid: NOBODY, release() {} }
  if (leased.size >= AGENT_UID_RANGE.count) throw new Error('every agent uid is leased')
  let uid: number
  do uid = AGENT_UID_RANGE.first + Math.floor(random() * AGENT_UID_RANGE.count)
  while (leased.has(uid))
  leased.add(uid)
  return { uid, release: () => void leased.delete(uid) }
}

/** The name the agent's uid has inside the sandbox. */
export const AGENT_USER = 'agent'

/**
 * The sandbox's /etc/passwd and /etc/group: root, nobody and the agent (HOME its own folder), nothing of the
 * host's accounts. Tools that look themselves up (`whoami`, `os.userInfo()`, ssh, git's author fallback)
 * find a name.
 */
export function accountFiles(uid: number, home: string): { passwd: string; group: string } {
  const agent = uid === NOBODY ? [] : [`${AGENT_USER}:x:${uid}:${uid}:fixloop agent:${home}:/bin/sh`]
  const agentGroup = uid === NOBODY ? [] : [`${AGENT_USER}:x:${uid}:`]
  return {
    passwd: ['root:x:0:0:root:/root:/usr/sbin/nologin', `nobody:x:${NOBODY}:${NOBODY}:nobody:/nonexistent:/usr/sbin/nologin`, ...agent, ''].join('\n'),
    group: ['root:x:0:', `nogroup:x:${NOBODY}:`, ...agentGroup, ''].join('\n'),
  }
}

/**
 * Writes the run's passwd and group (bound over /etc/passwd and /etc/group in the sandbox). chmod, not only
 * `mode`: the server runs with umask 077 (main.ts), which a create mode cannot undo, and the agent's uid
 * must read them (whoami, os.userInfo()).
 */
export function writeAccountFiles(files: { passwdFile: string; groupFile: string }, uid: number, home: string): void {
  const accounts = accountFiles(uid, home)
  for (const [file, text] of [[files.passwdFile, accounts.passwd], [files.groupFile, accounts.group]] as const) {
    writeFileSync(file, text, { mode: 0o644 })
    chmodSync(file, 0o644)
  }
}
