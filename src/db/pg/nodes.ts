/** PostgreSQL side of src/nodes/nodes-repo.ts: every time is `clock_timestamp()` of the server. */
import { MAX_NODE_LEASE_MS } from '../../nodes/nodes-repo'
import type { NodesRepo, NodeRow, LeaseRow } from '../../nodes/nodes-repo'
import { exec, many, one, type PgStorage } from './storage'
import { DB_NOW } from './db-clock'
import { PARTITION_OF_APP } from './jobs'

const BEAT = `INSERT INTO cluster_nodes (id, host, pid, version, started_at, heartbeat_at, roles, lease_ms)
  VALUES ($1, $2, $3, $4, ${DB_NOW}, ${DB_NOW}, $5, $6)
  ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, roles = excluded.roles, lease_ms = excluded.lease_ms`
// A node is alive while its last beat is within its own lease ($1: for a node that recorded none).
// A recorded lease counts up to the longest a node can be set to (FIXLOOP_NODE_LEASE_SECONDS 60): a row
// written otherwise (by hand, a bug) cannot keep a dead node alive and its job leases held.
const ALIVE = `heartbeat_at >= ${DB_NOW} - LEAST(COALESCE(lease_ms, $1), ${MAX_NODE_LEASE_MS})`
// Renewed by its holder; taken by another only once expired. The token rises with each new holder.
const ACQUIRE = `INSERT INTO leases (name, holder, token, expires_at, acquired_at) VALUES ($1, $2, 1, ${DB_NOW} + $3, ${DB_NOW})
  ON CONFLICT (name) DO UPDATE SET
    token = CASE WHEN leases.holder = excluded.holder THEN leases.token ELSE leases.token + 1 END,
    acquired_at = CASE WHEN leases.holder = excluded.holder THEN leases.acquired_at ELSE excluded.acquired_at END,
    holder = excluded.holder, expires_at = excluded.expires_at
  WHERE leases.holder = excluded.holder OR leases.expires_at < ${DB_NOW}
  RETURNING token`
// A job lease whose owner is not a live node (the owner is "<node id>" or "<node id>:<role>").
export const FREE_DEAD_JOBS = `UPDATE jobs SET lease_until = NULL, lease_owner = NULL
  WHERE lease_until IS NOT NULL
    AND split_part(COALESCE(lease_owner, ''), ':', 1) NOT IN (SELECT id FROM cluster_nodes WHERE ${ALIVE})`
// Of the partitions $1, those with a processing job of one of their Apps under a lease not run out, whoever holds it.
export const IN_HAND = `SELECT DISTINCT ${PARTITION_OF_APP('app_id')} AS p FROM jobs
  WHERE kind IN ('process', 'batch_release') AND app_id IS NOT NULL AND lease_until >= ${DB_NOW} AND ${PARTITION_OF_APP('app_id')} = ANY($1::int[])`

/**
 * Of `partitions`, those whose Apps have `process` or `batch_release` jobs in someone's hands (a lease not
 * run out): a node that takes such a partition waits before it clusters its Apps (src/nodes/partitions.ts).
 * A node counted dead still counts until the sweep frees its leases: it may only be stalled (SIGSTOP, a
 * frozen VM), and write the batch it had in hand when it resumes. Once freed, that write is refused
 * (lifecycle-batch.ts `finishJobsOf`), so the partition's new holder is the only one that clusters its Apps.
 */
export async function partitionsInHand({ pool }: PgStorage, partitions: readonly number[]): Promise<number[]> {
  if (partitions.length === 0) return []
  return (await many<{ p: number }>(pool, IN_HAND, [partitions])).map((r) => Number(r.p))
}

const NODE_COLUMNS = 'id, host, pid, version, started_at AS "startedAt", heartbeat_at AS "heartbeatAt", roles, lease_ms AS "leaseMs"'

export function createPgNodesRepo({ pool }: PgStorage): NodesRepo {
  return {
    now: async () => (await one<{ now: number }>(pool, `SELECT ${DB_NOW} AS now`))!.now,
    beat: async (node, roles, leaseMs) => void (await exec(pool, BEAT, [node.id, node.host, node.pid, node.version, roles.join(','), leaseMs ?? null])),
    async leave(nodeId) {
      await exec(pool, `UPDATE leases SET expires_at = 0 WHERE holder = $1`, [nodeId])
      await exec(pool, 'DELETE FROM cluster_nodes WHERE id = $1', [nodeId])
    },
    alive: (aliveMs) => many<NodeRow>(pool, `SELECT ${NODE_COLUMNS} FROM cluster_nodes WHERE ${ALIVE} ORDER BY started_at, id`, [aliveMs]),
    acquire: async (name, holder, ttlMs) => (await one<{ token: number }>(pool, ACQUIRE, [name, holder, ttlMs]))?.token ?? null,
    release: async (name, holder) => void (await exec(pool, 'UPDATE leases SET expires_at = 0 WHERE name = $1 AND holder = $2', [name, holder])),
    leases: () => many<LeaseRow>(pool, 'SELECT name, holder, token, expires_at AS "expiresAt" FROM leases ORDER BY name'),
    async sweep(deadMs, forgetMs) {
      const deadNodes = (await many<{ id: string }>(pool, `SELECT id FROM cluster_nodes WHERE NOT (${ALIVE}) ORDER BY id`, [deadMs])).map((r) => r.id)
      const jobs = await exec(pool, FREE_DEAD_JOBS, [deadMs])
      await exec(pool, `DELETE FROM cluster_nodes WHERE heartbeat_at < ${DB_NOW} - $1`, [forgetMs])
      return { jobs, deadNodes }
    },
  }
}
