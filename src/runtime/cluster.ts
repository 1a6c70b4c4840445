/**
 * Cluster mode (FIXLOOP_DATABASE_URL): this process is one node of possibly several over one PostgreSQL
 * database (src/nodes/). Its id names its runs and leases, its roles come from leases in the database,
 * its rate limits and sign-in throttles are shared through Redis, and wake-ups cross nodes through Redis
 * pub/sub. Any node runs agent starts and housekeeping jobs and sanitizes ahead; each node clusters the Apps
 * of the partitions it holds (src/nodes/partitions.ts), with their indexes in its process.
 */
import { OffsetClock } from '../core/clock'
import type { Logger } from '../core/logger'
import { onEventsCommitted } from '../db/pg/event-signal'
import { createSharedRateLimiters } from '../http/shared-rate-limit'
import { sharedThrottles } from '../http/shared-failure-throttle'
import { createRateLimiters } from '../http/rate-limit'
import { localThrottles } from '../core/failure-throttle'
import { isJobKind, type JobKind } from '../lifecycle/jobs'
import { nodeCheck } from '../modules/health/readiness'
import { ClusterCoordinator, newNodeInfo, ROLES } from '../nodes/coordinator'
import { PeerCheck } from '../nodes/peer-check'
import { RedisLink } from '../nodes/redis-link'
import { ANNOUNCE, CLUSTER_SAFETY_POLL_MS, WakeBus, type EventNews } from '../nodes/wake-bus'
import { RemovalFollower, REMOVED } from '../nodes/removal-follower'
import { HeardSpacing } from '../nodes/heard-spacing'
import { SPAM_DECIDED, SpamShare } from '../abuse/spam-share'
import { lastRemovedSeq, removedSince } from '../db/pg/removal-log'
import { createPgSpamMarks } from '../db/pg/spam-marks'
import { Worker } from '../worker/loop'
import { intakePacing, isProcessingKind, PROCESSING_KINDS } from '../worker/processing'
import { createPgProcessingEngine } from '../worker/processing-pg'
import { appsInPartitions } from '../db/pg/jobs'
import { partitionsInHand } from '../db/pg/nodes'
import { SanitizeAnywhere } from '../worker/sanitize-anywhere'
import { PartitionLeases, PARTITIONS } from '../nodes/partitions'
import { VERSION } from '../version'
import type { Runtime } from './runtime'
import type { PgStore } from '../db/pg/store'
import type { PgStorage } from '../db/storage'
import type { Mode, ModeOptions } from './mode'

/** The runtime of one cluster node, over PostgreSQL. */
export type ClusterRuntime = Runtime<PgStore, PgStorage>

export function clusterMode(rt: ClusterRuntime, log: Logger, options: ModeOptions): Mode {
  const { config, clock, store } = rt
  const node = newNodeInfo()
  const redis = config.redisUrl ? new RedisLink(config.redisUrl) : undefined
  // Set once the wake bus exists (start); read at each beat, which starts only when the server starts.
  let wakeBus: WakeBus | undefined
  let peerCheck: PeerCheck | undefined
  let peerWarnedAt = 0
  /** The other nodes alive in the database at the last beat: the only senders the wake bus listens to. */
  let peers = new Set<string>()
  let failRunsOf: (dead: string[]) => Promise<unknown> = async () => {}
  const coordinator = new ClusterCoordinator(store.nodes, node, log, {
    leaseMs: config.nodeLeaseMs,
    clock: clock instanceof OffsetClock ? clock : undefined,
    onSweep: async (dead) => void (await failRunsOf(dead)),
    // Each beat announces this node on its Redis and checks that every live peer is heard there too.
    onBeat: (alive) => {
      peers = new Set(alive.map((p) => p.id))
      wakeBus?.publish(ANNOUNCE)
      // Not listening (this node's Redis is away: /readyz names it): nothing can be heard, nothing is judged.
      peerCheck?.observe(wakeBus?.listening ? alive : [], performance.now())
      const unheard = peerCheck?.unheardPeers() ?? []
      if (unheard.length > 0 && Date.now() - peerWarnedAt > 300_000) {
        peerWarnedAt = Date.now()
        log.warn('live nodes are not heard on this node\'s Redis: their Redis is down, or they use another FIXLOOP_REDIS_URL (rate limits and wake-ups are split meanwhile)', { unheardPeers: unheard, redis: redis?.where })
      }
    },
  })
  const testClock = options.injectedClock ? clock : undefined
  return {
    nodeId: node.id,
    coordinator,
    redis,
    // Without Redis (it is optional) each node keeps its own buckets: /readyz says so.
    limiters: redis
      ? createSharedRateLimiters(redis, clock, config.rateLimitMultiplier, () => coordinator.liveNodes(), log, testClock)
      : createRateLimiters(clock, config.rateLimitMultiplier),
    throttles: redis ? sharedThrottles(redis, clock, config.rateLimitMultiplier, log, () => store.meta.clusterId(), testClock) : localThrottles(clock, config.rateLimitMultiplier),
    // The hub is told of every commit that appended events, with its Orgs and their new seqs (this
    // process's at once, other nodes' through Redis pub/sub), and reads nothing for it: its poll (one SUM
    // of the counters) is only the safety net for lost messages and for events the CLI wrote.
    eventsPollMs: CLUSTER_SAFETY_POLL_MS,
    start({ ownSteps, hub, failRunsOf: fail, spamMarksOf }) {
      failRunsOf = fail
      const workerOptions = options.worker ?? {}
      const ownKinds = Object.keys(ownSteps) as JobKind[]
      const processing = createPgProcessingEngine(store, clock)
      const worker = new Worker(store.jobs(ownKinds), ownSteps, clock, log, { ...workerOptions, clusterLeaseOwner: coordinator.nodeId })
      // No processing thread or write turns (PostgreSQL has no single write lock for intake to wait on).
      // Sharing intake's thread, the processing worker paces itself on intake's commits (the PostgreSQL
      // group committer notes them in the store's turns).
      // Clustering per partition of Apps (src/nodes/partitions.ts): this node's processing worker claims the
      // jobs of the Apps whose partitions it holds, and runs while it holds any.
      const partitions = new PartitionLeases(store.nodes, coordinator.nodeId, log, {
        leaseMs: config.nodeLeaseMs,
        liveNodes: () => coordinator.liveNodes(),
        // An index of an App that another node clustered meanwhile would miss its reports: built again when used.
        invalidate: async (moved) => {
          for (const app of await appsInPartitions(store.storage, processing.indexes?.apps() ?? [], moved)) processing.indexes?.forget(app)
        },
        // A partition another node let go mid-batch is clustered here only once that batch is written.
        inHand: (taken) => partitionsInHand(store.storage, taken),
      })
      const processor = new Worker(store.jobs(PROCESSING_KINDS, { partitions: () => partitions.partitions() }), processing.steps, clock, log, {
        ...intakePacing(store.turns),
        ...workerOptions,
        clusterLeaseOwner: `${coordinator.nodeId}:processing`,
      })
      // The other nodes sanitize ahead of the processing node during a backlog (issue 38.2).
      const sanitizer = new SanitizeAnywhere(store.sides.sanitizeAhead, store.sides.processing, clock, log, {
        // A node that clusters every partition sanitizes in its own batches.
        active: () => partitions.partitions().length < PARTITIONS,
        // A chunk holds this thread ~80 ms: only once this node's intake has been quiet a while.
        busy: () => store.turns.msSinceIntakeCommit() < 250,
      })
      const wakeLocally = (kind: JobKind) => {
        if (kind === 'process') sanitizer.wake()
        return isProcessingKind(kind) ? processor.wake() : worker.wake()
      }
      // What other nodes removed leaves this node's indexes (removal-follower.ts); what they marked spam by
      // hand reaches its like_spam ring (spam-share.ts): each read from the database, woken or polled.
      const { pool } = store.storage
      const removals = new RemovalFollower({
        read: (after, limit) => removedSince(pool, after, limit),
        last: () => lastRemovedSeq(pool),
        forget: (ids) => processing.port.forgetRemoved(ids),
        forgetAll: () => {
          for (const app of processing.indexes?.apps() ?? []) processing.indexes?.forget(app)
        },
        log,
      })
      const spamShare = new SpamShare({ repo: createPgSpamMarks(pool), load: spamMarksOf, clock, log })
      // Job kinds and `events` heard are spaced (heard-spacing.ts), as the removal log's and spam marks' reads are.
      const spaced = new HeardSpacing((what, news) => (what === 'events' ? hub.heard(news ?? null) : wakeLocally(what as JobKind)))
      const heard = (what: string, news?: EventNews) => {
        if (what === REMOVED) return void removals.wake()
        if (what === SPAM_DECIDED) return void spamShare.wake()
        if (what === 'events' || isJobKind(what)) spaced.heard(what, news)
      }
      if (redis && config.redisUrl) {
        wakeBus = new WakeBus(config.redisUrl, redis, node.id, heard, log, undefined, undefined, (id) => peers.has(id))
        const bus = wakeBus
        peerCheck = new PeerCheck(config.nodeLeaseMs, (id) => bus.heardAt(id))
      }
      // Jobs queued here wake this node's workers at once, and the other nodes' through Redis (wake-bus.ts).
      store.wake.on((kind) => {
        wakeLocally(kind)
        wakeBus?.publish(kind)
      })
      const stopEventSignal = onEventsCommitted((news) => {
        hub.heard(news)
        wakeBus?.publishEvents(news)
      })
      const bus = wakeBus
      return {
        worker,
        // A removal told here (removal-news.ts, after its commit) is announced: the other nodes read the log.
        cluster: {
          ...processing.port,
          forgetRemoved: async (ids) => {
            bus?.publish(REMOVED)
            await processing.port.forgetRemoved(ids)
          },
        },
        followers: [removals, spamShare, spaced],
        spamDecided: () => bus?.publish(SPAM_DECIDED),
        processingWorker: processor,
        partitions,
        sanitizeAnywhere: sanitizer,
        wakeBus: bus,
        stopEventSignal,
        unheardPeers: () => peerCheck?.unheardPeers() ?? [],
        // Which node answers the scrape, and what it does (the database-wide gauges are the same on every node).
        nodeMetrics: () => [
          { name: 'fixloop_node_info', help: 'This node (cluster mode): its id and version.', type: 'gauge', samples: [{ labels: { node: coordinator.nodeId, version: VERSION }, value: 1 }] },
          {
            name: 'fixloop_node_role',
            help: 'Roles this node holds (1) or not (0); processing: it clusters some partitions of Apps.',
            type: 'gauge',
            samples: [
              { labels: { node: coordinator.nodeId, role: 'processing' }, value: partitions.partitions().length > 0 ? 1 : 0 },
              ...ROLES.map((role) => ({ labels: { node: coordinator.nodeId, role }, value: coordinator.holds(role) ? 1 : 0 })),
            ],
          },
          { name: 'fixloop_node_partitions', help: `Partitions of Apps this node clusters (of ${PARTITIONS}).`, type: 'gauge', samples: [{ labels: { node: coordinator.nodeId }, value: partitions.partitions().length }] },
          {
            name: 'fixloop_node_jobs_done_total',
            help: 'Jobs this node finished, by kind (process: reports it sanitized and clustered).',
            type: 'counter',
            samples: [...new Set([...processor.done.keys(), ...worker.done.keys()])].sort().map((kind) => ({ labels: { node: coordinator.nodeId, kind }, value: (processor.done.get(kind) ?? 0) + (worker.done.get(kind) ?? 0) })),
          },
          { name: 'fixloop_cluster_live_nodes', help: 'Nodes that beat within one lease period, as this node last counted.', type: 'gauge', samples: [{ labels: { node: coordinator.nodeId }, value: coordinator.liveNodes() }] },
          {
            name: 'fixloop_wake_messages_total',
            help: 'Cross-node wake-ups through Redis pub/sub: published by this node, and heard from others.',
            type: 'counter',
            samples: (['published', 'heard'] as const).map((direction) => ({ labels: { node: coordinator.nodeId, direction }, value: bus?.counts[direction] ?? 0 })),
          },
        ],
        nodeCheck: () => {
          const status = coordinator.status()
          const held = partitions.partitions()
          return nodeCheck({ ...status, roles: held.length > 0 ? ['processing', ...status.roles] : status.roles, partitions: held }, coordinator.nodeId, peerCheck?.unheardPeers() ?? [])
        },
      }
    },
  }
}
