/**
 * The process's open-files limit (RLIMIT_NOFILE, soft; Bun raises it to the hard limit at start), read
 * from /proc/self/limits; undefined where that is not there (not Linux) or says "unlimited".
 *
 * Every connection is a file descriptor. When they run out, the kernel keeps queueing connections that
 * the server can no longer accept: requests hang without an answer (a load balancer's check too), the
 * runtime's accept loop spins a core, and SQLite, the blob store and agent runs fail to open files. Event
 * streams are the connections that stay open, so their number is bounded by what the limit leaves
 * (`streamsWithin`).
 */
import { readFileSync } from 'node:fs'

export function openFilesLimit(): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'))
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0]
    const n = Number(soft)
    return Number.isSafeInteger(n) && n > 0 ? n : undefined
  } catch {
    return undefined
  }
}

/** Descriptors the server holds whatever the traffic (SQLite's files on three threads, the lock, epoll, …: about 30) and a margin. */
const SERVER_OWN = 48

/**
 * Event streams this server keeps open at most under an open-files limit: what is left past its own
 * descriptors, half of it, at most all but 512 of it, so that requests, SQLite, the blob store, webhook
 * deliveries and agent runs keep descriptors to work with. No limit known: no cap.
 */
export function streamsWithin(limit: number | undefined): number {
  if (limit === undefined) return Number.POSITIVE_INFINITY
  const left = Math.max(0, limit - SERVER_OWN)
  return left - Math.min(Math.floor(left / 2), 512)
}
