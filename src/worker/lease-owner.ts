/**
 * Who holds a job's lease: this host, this process id and the process's start time. With the start
 * time a reused pid is not mistaken for the owner. A starting server hands back at once the leases of
 * owners that are gone (kill -9, power loss) instead of letting them run out (60 s).
 */
import { readFileSync } from 'node:fs'
import { hostname } from 'node:os'

/** The process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), or null off Linux. */
function startTicks(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name (field 2) may hold spaces and parentheses: count fields after its closing ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null
  } catch {
    return null
  }
}

/** `host:pid:start` of this process. */
export function currentLeaseOwner(): string {
  return `${hostname()}:${process.pid}:${startTicks(process.pid) ?? 'unknown'}`
}

/**
 * True when the lease owner surely no longer runs: it is on this host and its pid is gone or now
 * belongs to a process started at another time. An owner on another host (a data dir on shared
 * storage) cannot be checked from here: its lease runs out as before.
 */
export function isLeaseOwnerGone(owner: string): boolean {
  const [host, pidText, start] = owner.split(':')
  const pid = Number(pidText)
  if (host !== hostname() || !Number.isInteger(pid) || pid <= 0) return false
  if (pid === process.pid) return start !== (startTicks(pid) ?? 'unknown')
  const now = startTicks(pid)
  if (now !== null) return now !== start
  if (start !== 'unknown') return true // /proc works (it told us our own start) and has no such pid
  try {
    process.kill(pid, 0)
    return false
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH'
  }
}
