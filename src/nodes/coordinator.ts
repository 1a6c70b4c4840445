/**
 * Who does the one-at-a-time work of a cluster (docs/operations.md "Cluster"). Each node beats into
 * `cluster_nodes` and competes for two leases on the database clock (src/nodes/nodes-repo.ts):
 * - `maintenance`: retention, the dead-node sweep (a node silent for a lease period has its job leases
 *   freed: a dead node's jobs are taken over within two lease periods), DB-wide gauges;
 * - `dispatch`: webhook and Slack deliveries (each event to each endpoint once, in order).
 * Sanitizing runs on any node, and clustering per partition of Apps (src/nodes/partitions.ts: leases of their
 * own, spread over the live nodes), so neither is a role here; /readyz and the metrics still name a node that
 * clusters some partitions as holding `processing`.
 * A lease lasts `leaseMs` (15 s by default) and is renewed every third of it; a holder that cannot renew
 * stops the role's work before its lease can have passed to another node (`holds` is false from then).
 * The roles spread over the live nodes: a node holding more than its share (2 / live nodes, rounded up)
 * lets `dispatch`, then `maintenance`, go.
 *
 * The embedded mode has one process per data dir: `soloCoordinator` holds every role, always.
 */
import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import type { OffsetClock } from '../core/clock'
import type { Logger } from '../core/logger'
import { VERSION } from '../version'
import type { NodeInfo, NodesRepo } from './nodes-repo'
import { BeatLoop, beatPeriod } from './beat-loop'

export const ROLES = ['maintenance', 'dispatch'] as const
export type Role = (typeof ROLES)[number]
/** The order in which a node over its share lets roles go. */
const GIVE_UP_ORDER: readonly Role[] = ['dispatch', 'maintenance']
/** A node silent this long after its last beat is forgotten (its row removed) by the sweep. */
const FORGET_MS = 3_600_000

export type RoleListener = (role: Role, held: boolean) => void

export interface Coordinator {
  readonly nodeId: string
  /** True while this node holds the role's lease (and its last renewal is surely still valid). */
  holds(role: Role): boolean
  /** The role's fencing token while held. */
  token(role: Role): number | undefined
  /** Live nodes at the last look (at least 1): the local rate-limit fallback divides by it. */
  liveNodes(): number
  /** Told when this node gains or loses a role (also for the roles held at start). */
  onRoleChange(listener: RoleListener): () => void
  start(): Promise<void>
  stop(): Promise<void>
  /** For /readyz: the roles held, and whether the last beat reached the database. */
  status(): { ok: boolean; roles: Role[]; liveNodes: number; reason?: string }
}

/** The embedded mode: one process, every role. */
export function soloCoordinator(): Coordinator {
  return {
    nodeId: 'embedded',
    holds: () => true,
    token: () => 1,
    liveNodes: () => 1,
    onRoleChange(listener) {
      for (const role of ROLES) listener(role, true)
      return () => {}
    },
    start: async () => {},
    stop: async () => {},
    status: () => ({ ok: true, roles: [...ROLES], liveNodes: 1 }),
  }
}

export interface ClusterCoordinatorOptions {
  leaseMs: number
  /** Told what a sweep freed (the server fails the agent runs of dead nodes there). */
  onSweep?: (deadNodes: string[]) => Promise<void>
  /** This node's clock, set to the database's at each beat (the times it writes for later follow the database). */
  clock?: OffsetClock
  /** After each beat that reached the database: the other nodes alive now (src/nodes/peer-check.ts). */
  onBeat?: (peers: { id: string; leaseMs: number | null }[]) => void
}

/** A fresh node id per process start (`node_` + 16 hex): job leases and agent runs name it. */
export function newNodeInfo(): NodeInfo {
  return { id: `node_${randomBytes(8).toString('hex')}`, host: hostname(), pid: process.pid, version: VERSION }
}

export class ClusterCoordinator implements Coordinator {
  readonly nodeId: string
  private readonly held = new Map<Role, { token: number; validUntil: number }>()
  private readonly listeners = new Set<RoleListener>()
  private readonly beats: BeatLoop
  private live = 1
  private lastBeatOk = false
  private lastError: string | undefined
  /** Dead nodes already named in a warning (those of the last sweep: a forgotten one drops out). */
  private warnedDead = new Set<string>()

  constructor(
    private readonly repo: NodesRepo,
    private readonly node: NodeInfo,
    private readonly log: Logger,
    private readonly opts: ClusterCoordinatorOptions,
  ) {
    this.nodeId = node.id
    this.beats = new BeatLoop(() => this.round(), beatPeriod(opts.leaseMs))
  }

  holds(role: Role): boolean {
    const h = this.held.get(role)
    return h !== undefined && performance.now() < h.validUntil
  }

  token(role: Role): number | undefined {
    return this.holds(role) ? this.held.get(role)!.token : undefined
  }

  liveNodes(): number {
    return this.live
  }

  onRoleChange(listener: RoleListener): () => void {
    this.listeners.add(listener)
    for (const role of ROLES) if (this.holds(role)) listener(role, true)
    return () => this.listeners.delete(listener)
  }

  /** Registers the node and takes what roles it can before the server starts its work. */
  async start(): Promise<void> {
    await this.beats.start()
  }

  async stop(): Promise<void> {
    await this.beats.stop()
    for (const role of ROLES) if (this.held.has(role)) this.lose(role)
    try {
      // The leases go at once, so another node takes the roles without waiting for them to run out.
      await this.repo.leave(this.nodeId)
    } catch (e) {
      this.log.warn('could not leave the cluster cleanly; its leases run out instead', { error: errorText(e) })
    }
  }

  status() {
    const roles = ROLES.filter((r) => this.holds(r))
    return this.lastBeatOk ? { ok: true, roles, liveNodes: this.live } : { ok: false, roles, liveNodes: this.live, reason: this.lastError ?? 'no heartbeat yet' }
  }



  /** One beat: record this node, renew or take leases, spread the roles, sweep when maintaining. */
  private async round(): Promise<void> {
    const { leaseMs } = this.opts
    try {
      await this.repo.beat(this.node, ROLES.filter((r) => this.holds(r)), leaseMs)
      if (this.opts.clock) {
        const before = Date.now()
        const dbNow = await this.repo.now()
        this.opts.clock.observe(dbNow, before, Date.now())
      }
      const alive = await this.repo.alive(leaseMs)
      this.live = Math.max(1, alive.length)
      this.lastBeatOk = true
      this.lastError = undefined
      this.opts.onBeat?.(alive.filter((n) => n.id !== this.nodeId).map((n) => ({ id: n.id, leaseMs: n.leaseMs })))
    } catch (e) {
      this.lastBeatOk = false
      this.lastError = `heartbeat failed: ${errorText(e)}`
      this.expireLocally()
      return
    }
    const share = Math.ceil(ROLES.length / this.live)
    for (const role of ROLES) {
      const mine = this.held.has(role)
      const count = ROLES.filter((r) => this.held.has(r)).length
      // Over its share: let the first giveable role go (one per round), so another node picks it up.
      if (mine && count > share && this.live > 1 && role === GIVE_UP_ORDER.find((r) => this.held.has(r))) {
        await this.repo.release(role, this.nodeId).catch(() => {})
        this.lose(role)
        this.log.info('gave a role to another node', { role, liveNodes: this.live })
        continue
      }
      if (!mine && count >= share) continue
      // Valid from before the statement: the lease began no earlier than this.
      const asked = performance.now()
      try {
        const token = await this.repo.acquire(role, this.nodeId, leaseMs)
        if (token === null) {
          if (mine) this.lose(role)
          continue
        }
        // A safety margin: act on the lease only while it surely has not run out on the database clock.
        this.held.set(role, { token, validUntil: asked + leaseMs - Math.min(2_000, leaseMs / 5) })
        if (!mine) this.gain(role)
      } catch (e) {
        this.lastError = `lease ${role}: ${errorText(e)}`
      }
    }
    this.expireLocally()
    if (this.holds('maintenance')) await this.sweep()
  }

  private async sweep(): Promise<void> {
    try {
      const { jobs, deadNodes } = await this.repo.sweep(this.opts.leaseMs, FORGET_MS)
      // A dead node stays in the table (and in every sweep's answer) until it is forgotten, an hour later:
      // warned about when first seen dead or when work was freed, not again at every beat.
      const newlyDead = deadNodes.filter((id) => !this.warnedDead.has(id))
      this.warnedDead = new Set(deadNodes)
      if (jobs > 0 || newlyDead.length > 0) this.log.warn('freed the work of nodes that stopped beating', { jobs, deadNodes })
      // Every sweep, dead nodes or not: runs of nodes no longer listed are failed there too (runner.failRunsOf).
      await this.opts.onSweep?.(deadNodes)
    } catch (e) {
      this.log.error('dead-node sweep failed', { error: errorText(e) })
    }
  }

  /** Roles whose renewal did not come in time are given up here, whatever the database says. */
  private expireLocally(): void {
    for (const role of ROLES) if (this.held.has(role) && !this.holds(role)) this.lose(role)
  }

  private gain(role: Role): void {
    this.log.info('took a role', { role, node: this.nodeId })
    for (const l of this.listeners) l(role, true)
  }

  private lose(role: Role): void {
    this.held.delete(role)
    this.log.info('left a role', { role, node: this.nodeId })
    for (const l of this.listeners) l(role, false)
  }
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e)
}
