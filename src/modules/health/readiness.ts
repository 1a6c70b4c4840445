/**
 * What GET /readyz checks, each with a reason an operator can act on: the database (SQLite: takes a
 * write, so a full disk, a read-only mount or an I/O error fail it; PostgreSQL: answers `SELECT 1` within
 * 2 s), and every embedded migration is applied; the data dir's filesystem has room; the job worker is
 * running and not stuck on one job; the WAL checkpointer is alive (SQLite only: PostgreSQL checkpoints
 * itself); the master key matched its check value.
 */
import { statfsSync } from 'node:fs'

export interface Check {
  ok: boolean
  reason?: string
  /** The `node` check of cluster mode: which node answered, its roles, the live nodes it counts. */
  node?: string
  roles?: string[]
  /** The partitions of Apps this node clusters (src/nodes/partitions.ts). */
  partitions?: number[]
  liveNodes?: number
  /**
   * Advisory: shown, never a reason for 503 (readiness is about this node). The `trackers` check: how
   * many issue-tracker connections' last call failed (docs/trackers.md "Failures").
   */
  advisory?: boolean
  failing?: number
  /**
   * The `trackers` check, for the operator only (FIXLOOP_METRICS_TOKEN): which connections fail, with the
   * tracker's answer. /readyz is public (proxies pass it): Apps and their trackers are the tenants' business.
   */
  connections?: FailingTracker[]
  /** The `node` check: live nodes this node does not hear on its Redis (src/nodes/peer-check.ts). */
  unheardPeers?: string[]
  /** Something to look at that does not make the node unready. */
  warning?: string
}

/** The `node` check of cluster mode: the coordinator's status, and the peers not heard on this Redis (a warning). */
export function nodeCheck(status: { ok: boolean; roles: string[]; partitions?: number[]; liveNodes: number; reason?: string }, nodeId: string, unheardPeers: string[]): Check {
  const check: Check = { ...status, node: nodeId }
  if (unheardPeers.length === 0) return check
  return {
    ...check,
    unheardPeers,
    warning: `${unheardPeers.length} live node(s) are not heard on this node's Redis: their Redis is down, or they use another FIXLOOP_REDIS_URL (every node must use the same one)`,
  }
}

/** A failing issue-tracker connection, as the operator's /readyz lists it. */
export interface FailingTracker {
  appId: string
  kind: string
  lastError: string | null
  lastErrorAt: string | null
  retryAt: string | null
}

/**
 * The `trackers` check: a count for everyone, the connections for the operator (stripped by `check`).
 * `total` counts every failing connection; `failing` lists the first 100 (the count was the list's
 * length, so it stopped at 100 however many failed).
 */
export function trackersCheck(failing: FailingTracker[], total = failing.length): Check {
  if (total === 0) return { ok: true, failing: 0 }
  return { ok: false, reason: `${total} issue-tracker connection(s) failing (advisory: docs/trackers.md "Failures")`, failing: total, connections: failing }
}

export interface ReadinessDeps {
  /** The store answers, holds every migration and takes a write (src/db/store.ts `databaseCheck`). */
  database: () => Check | Promise<Check>
  dataDir: string
  /** Below this many free bytes on the data dir's filesystem the server is not ready. */
  minFreeBytes: number
  worker: () => Check
  /** The SQLite WAL checkpointer; absent on PostgreSQL (no check of that name there). */
  checkpointer?: () => Check
  masterKey: () => Check
  /** Cluster mode: Valkey/Redis answers a PING (shared rate limits; a fallback runs meanwhile). */
  redis?: () => Promise<Check>
  /** Cluster mode: this node's heartbeat reached the database; its roles. */
  node?: () => Check
  /** Issue-tracker connections whose last call failed (advisory). */
  trackers?: () => Promise<Check>
}

export type ReadinessReport = { ready: boolean; checks: Record<string, Check> }

/**
 * The longest /readyz waits for one check. A balancer's probe must get an answer: a check that reads the
 * database (the advisory trackers check) waited on a stalled PostgreSQL (a paused VM, a route dropped
 * without a reset: sockets open, nothing answers) until the HTTP server cut the probe unanswered at 30 s.
 * Above the database check's own 2 s bound (db/pg/readiness.ts), so its reason is the one shown there.
 */
export const CHECK_TIMEOUT_MS = 3_000

async function probe(fn: () => Check | Promise<Check>): Promise<Check> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<Check>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, reason: `no answer within ${CHECK_TIMEOUT_MS} ms` }), CHECK_TIMEOUT_MS)
  })
  try {
    // The check goes on in the background when it is late; its outcome is then ignored.
    return await Promise.race([Promise.resolve().then(fn), late])
  } catch (e) {
    return { ok: false, reason: e instanceof Error ? e.message : String(e) }
  } finally {
    clearTimeout(timer)
  }
}

function withoutConnections(check: Check): Check {
  const { connections: _private, ...rest } = check
  return rest
}

/** Fewer free inodes than this and the `disk` check fails (an upload alone makes three files). */
export const MIN_FREE_INODES = 64

export function createReadiness(d: ReadinessDeps) {
  const { database } = d
  const disk = (): Check => {
    const s = statfsSync(d.dataDir)
    const free = Number(s.bavail) * Number(s.bsize)
    if (free < d.minFreeBytes) return { ok: false, reason: `only ${free} bytes free on the data dir's filesystem (need ${d.minFreeBytes}; FIXLOOP_MIN_FREE_DISK_MB)` }
    // Out of inodes (many small files, a tmpfs with nr_inodes) the bytes say nothing: no upload, WAL or
    // journal file can be made. File systems that do not count inodes (btrfs) report 0 of 0.
    if (d.minFreeBytes > 0 && Number(s.files) > 0 && Number(s.ffree) < MIN_FREE_INODES) {
      return { ok: false, reason: `only ${Number(s.ffree)} inodes free on the data dir's filesystem (need ${MIN_FREE_INODES}): no new file can be made there` }
    }
    return { ok: true }
  }
  return {
    /** Every check; `details` (the operator's token was given) keeps what names tenants: the failing trackers. */
    async check({ details = false }: { details?: boolean } = {}): Promise<ReadinessReport> {
      const checkpointer = d.checkpointer
      const [database_, disk_, worker, checkpointer_, masterKey, redis, node, trackers] = await Promise.all([
        probe(database),
        probe(disk),
        probe(d.worker),
        checkpointer ? probe(checkpointer) : undefined,
        probe(d.masterKey),
        d.redis ? probe(d.redis) : undefined,
        d.node ? probe(d.node) : undefined,
        d.trackers ? probe(d.trackers).then((c) => ({ ...c, advisory: true })) : undefined,
      ])
      const checks: Record<string, Check> = {
        database: database_,
        disk: disk_,
        worker,
        ...(checkpointer_ ? { checkpointer: checkpointer_ } : {}),
        masterKey,
        ...(redis ? { redis } : {}),
        ...(node ? { node } : {}),
        ...(trackers ? { trackers: details ? trackers : withoutConnections(trackers) } : {}),
      }
      return { ready: Object.values(checks).every((c) => c.ok || c.advisory === true), checks }
    },
  }
}
export type Readiness = ReturnType<typeof createReadiness>
