/**
 * SQLite side of src/nodes/nodes-repo.ts. The embedded mode never registers nodes (one process per data
 * dir); this side exists so the port holds on both dialects and the tables stay alike. Times are the
 * database's clock here too (`unixepoch('subsec')`).
 */
import { MAX_NODE_LEASE_MS, type LeaseRow, type NodeRow, type NodesRepo } from '../../nodes/nodes-repo'
import type { SqliteStorage } from './storage'

const DB_NOW = "CAST(unixepoch('subsec') * 1000 AS INTEGER)"
const NODE_COLUMNS = 'id, host, pid, version, started_at AS startedAt, heartbeat_at AS heartbeatAt, roles, lease_ms AS leaseMs'
// A node is alive while its last beat is within its own lease (?1: for a node that recorded none).
// A recorded lease counts up to the longest a node can be set to (FIXLOOP_NODE_LEASE_SECONDS 60): a row
// written otherwise (by hand, a bug) cannot keep a dead node alive and its job leases held.
const ALIVE = `heartbeat_at >= ${DB_NOW} - MIN(COALESCE(lease_ms, ?1), ${MAX_NODE_LEASE_MS})`

export function createSqliteNodesRepo({ sqlite }: SqliteStorage): NodesRepo {
  const beat = sqlite.prepare(`INSERT INTO cluster_nodes (id, host, pid, version, started_at, heartbeat_at, roles, lease_ms) VALUES (?, ?, ?, ?, ${DB_NOW}, ${DB_NOW}, ?, ?)
    ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, roles = excluded.roles, lease_ms = excluded.lease_ms`)
  const acquire = sqlite.prepare<{ token: number }, [string, string, number]>(`INSERT INTO leases (name, holder, token, expires_at, acquired_at) VALUES (?1, ?2, 1, ${DB_NOW} + ?3, ${DB_NOW})
    ON CONFLICT (name) DO UPDATE SET
      token = CASE WHEN leases.holder = excluded.holder THEN leases.token ELSE leases.token + 1 END,
      acquired_at = CASE WHEN leases.holder = excluded.holder THEN leases.acquired_at ELSE excluded.acquired_at END,
      holder = excluded.holder, expires_at = excluded.expires_at
    WHERE leases.holder = excluded.holder OR leases.expires_at < ${DB_NOW}
    RETURNING token`)
  const sweep = sqlite.transaction((deadMs: number, forgetMs: number) => {
    const deadNodes = (sqlite.query(`SELECT id FROM cluster_nodes WHERE NOT (${ALIVE}) ORDER BY id`).all(deadMs) as { id: string }[]).map((r) => r.id)
    const jobs = sqlite
      .query(`UPDATE jobs SET lease_until = NULL, lease_owner = NULL WHERE lease_until IS NOT NULL
        AND substr(COALESCE(lease_owner, ''), 1, instr(COALESCE(lease_owner, '') || ':', ':') - 1) NOT IN (SELECT id FROM cluster_nodes WHERE ${ALIVE})`)
      .run(deadMs).changes
    sqlite.query(`DELETE FROM cluster_nodes WHERE heartbeat_at < ${DB_NOW} - ?`).run(forgetMs)
    return { jobs, deadNodes }
  })
  return {
    now: async () => (sqlite.query(`SELECT ${DB_NOW} AS now`).get() as { now: number }).now,
    beat: async (node, roles, leaseMs) => void beat.run(node.id, node.host, node.pid, node.version, roles.join(','), leaseMs ?? null),
    leave: async (nodeId) =>
      sqlite.transaction(() => {
        sqlite.query('UPDATE leases SET expires_at = 0 WHERE holder = ?').run(nodeId)
        sqlite.query('DELETE FROM cluster_nodes WHERE id = ?').run(nodeId)
      }).immediate(),
    alive: async (aliveMs) => sqlite.query(`SELECT ${NODE_COLUMNS} FROM cluster_nodes WHERE ${ALIVE} ORDER BY started_at, id`).all(aliveMs) as NodeRow[],
    acquire: async (name, holder, ttlMs) => acquire.get(name, holder, ttlMs)?.token ?? null,
    release: async (name, holder) => void sqlite.query('UPDATE leases SET expires_at = 0 WHERE name = ? AND holder = ?').run(name, holder),
    leases: async () => sqlite.query('SELECT name, holder, token, expires_at AS expiresAt FROM leases ORDER BY name').all() as LeaseRow[],
    sweep: async (deadMs, forgetMs) => sweep.immediate(deadMs, forgetMs),
  }
}
