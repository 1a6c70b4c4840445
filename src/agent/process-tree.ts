/**
 * Process identity and ending a run's processes after a crash. A PID alone can be reused, so a run row
 * records the sandbox's PID with its identity (`<boot id>:<start time>`, from /proc); recovery kills the
 * process only when both still match. Killing the outer bwrap ends the sandbox's whole PID namespace
 * (`--die-with-parent`); its process group goes too (what is left with FIXLOOP_AGENT_SANDBOX=off).
 */
import { existsSync, readFileSync } from 'node:fs'

function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
  } catch {
    return 'unknown-boot'
  }
}

/** `<boot id>:<start time in clock ticks since boot>` of a live process, or null when it is gone. */
export function processIdentity(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name (field 2) may hold spaces and parentheses: fields after the last ')' are fixed.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    if (fields[0] === 'Z') return null
    return `${bootId()}:${fields[19]}`
  } catch {
    return null
  }
}

/** Kills the recorded process (and its group) if it is still the same process. True when it was alive. */
export function killRecorded(pid: number | null, identity: string | null): boolean {
  if (!pid || !identity || processIdentity(pid) !== identity) return false
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, 'SIGKILL')
    } catch {
      // already gone, or not a group leader
    }
  }
  return true
}

/** True while the process exists and is not a zombie. */
export function isRunning(pid: number): boolean {
  return existsSync(`/proc/${pid}`) && processIdentity(pid) !== null
}
