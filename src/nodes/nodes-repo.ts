/**
 * Cluster mode's bookkeeping (docs/operations.md "Cluster"): the nodes serving a database and their
 * heartbeats, the singleton leases (`processing`, `maintenance`, `dispatch`) with their fencing tokens,
 * and the sweep that frees what a dead node held. Every time is read from the database's clock (never a
 * node's): nodes whose clocks drift cannot expire each other's leases early.
 *
 * The port: one interface, a SQLite (src/db/sqlite/nodes.ts) and a PostgreSQL (src/db/pg/nodes.ts)
 * implementation, both held to test/repos/nodes.test.ts. The embedded mode runs one process per data dir
 * (its lock): it never registers, and holds every role itself (src/nodes/coordinator.ts `soloNodes`).
 */

/** The longest lease a node can be set to (FIXLOOP_NODE_LEASE_SECONDS is 1-60): a recorded one counts up to it. */
export const MAX_NODE_LEASE_MS = 60_000

export interface NodeInfo {
  id: string
  host: string
  pid: number
  version: string
}

export interface NodeRow extends NodeInfo {
  startedAt: number
  heartbeatAt: number
  /** The roles it held at its last beat, comma-separated. */
  roles: string
  /** Its own lease (ms), as it recorded it with its beat; null for a node of a version that did not. */
  leaseMs: number | null
}

export interface LeaseRow {
  name: string
  holder: string
  token: number
  expiresAt: number
}

/** What a sweep freed: job leases and agent runs of nodes that stopped beating. */
export interface SweepResult {
  jobs: number
  deadNodes: string[]
}

export interface NodesRepo {
  /** The database clock, epoch ms. */
  now(): Promise<number>
  /**
   * Registers the node (first beat) or records a beat and its roles. `leaseMs`: its own lease (it beats
   * every third of it), by which every other node judges it alive or dead.
   */
  beat(node: NodeInfo, roles: string[], leaseMs?: number): Promise<void>
  /** A node that stops cleanly leaves: its row goes, and the leases it held expire now. */
  leave(nodeId: string): Promise<void>
  /**
   * Nodes that beat within their own lease (`aliveMs` for a node that did not record one), oldest first.
   * By its own, not the asking node's: a node with FIXLOOP_NODE_LEASE_SECONDS=60 (a beat every 20 s) is not
   * dead to one with 5 between its beats.
   */
  alive(aliveMs: number): Promise<NodeRow[]>
  /**
   * Takes or renews the lease `name` for `holder` for `ttlMs` (database clock): renewed while the holder
   * has it, taken when it expired (or never existed). Answers the fencing token (it rises with every new
   * holder), or null when another holder has it.
   */
  acquire(name: string, holder: string, ttlMs: number): Promise<number | null>
  /** Lets a held lease go at once (its token is kept: the next holder's is higher). */
  release(name: string, holder: string): Promise<void>
  leases(): Promise<LeaseRow[]>
  /**
   * Frees the job leases held by nodes that have not beaten within their own lease (`deadMs` for a node
   * that did not record one), or that are unknown, and forgets nodes silent for `forgetMs`. Answers what it freed.
   */
  sweep(deadMs: number, forgetMs: number): Promise<SweepResult>
}

