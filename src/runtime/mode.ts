/**
 * What differs between the two ways fixloop runs, as the shared wiring (services.ts) sees it: embedded
 * (one process over its SQLite file, embedded.ts) or one node of a cluster (PostgreSQL and Redis,
 * cluster.ts). The mode is chosen once, with the store, by the runtime's dialect; nothing below the roots
 * asks which one it is.
 */
import type { Logger } from '../core/logger'
import type { Coordinator } from '../nodes/coordinator'
import type { RedisLink } from '../nodes/redis-link'
import type { WakeBus } from '../nodes/wake-bus'
import type { Limiter, RateScope } from '../http/rate-limit'
import type { ThrottleFactory } from '../core/failure-throttle'
import type { ClusterPort } from '../dedup/port'
import type { EventHub } from '../modules/events/hub'
import type { JobKind } from '../lifecycle/jobs'
import type { JobStep, Worker, WorkerOptions } from '../worker/loop'
import type { ProcessingThread } from '../worker/thread'
import type { SanitizerOnDemand } from '../worker/sanitizer-on-demand'
import type { MetricFamily } from '../modules/metrics/registry'
import type { Check } from '../modules/health/readiness'

export interface ModeOptions {
  worker?: Partial<WorkerOptions>
  /**
   * Embedded: sanitize, cluster and release batches on the processing thread (src/worker/thread-entry.ts,
   * its own connection and core). Off, this thread's worker runs every job kind: tests that drive the
   * worker with `tick()` and an injected clock.
   */
  processingThread?: boolean
  /**
   * Embedded, with the processing thread: a second thread sanitizes ahead of it during a backlog
   * (worker/sanitize-ahead.ts). Default: when the machine has at least two cores (on one it would only take
   * turns with processing). The machine's, not the process's current CPU affinity: a server started pinned
   * to one core may be given more.
   */
  sanitizeAhead?: boolean
  /** A test injected the clock: shared rate limits follow it too (not the Redis server's clock). */
  injectedClock?: boolean
  /**
   * How long one processing batch may hold the write lock (embedded, this thread's worker; default
   * DEFAULT_BATCH_BUDGET_MS). Tests that count batches set a long one, so a loaded machine's slowness does
   * not decide how many reports share a batch.
   */
  batchBudgetMs?: number
}

/** The parts a mode gives before the shared services are built. */
export interface Mode {
  /** This node's id in the cluster (names its runs and leases); undefined when embedded. */
  readonly nodeId: string | undefined
  readonly coordinator: Coordinator
  /** Cluster mode: this node's Redis link (shared rate limits; /readyz checks it). */
  readonly redis: RedisLink | undefined
  readonly limiters: Record<RateScope, Limiter>
  /** Sign-in and password re-entry back-off: one count per key for the whole cluster, in memory embedded. */
  readonly throttles: ThrottleFactory
  /** How often the event hub looks for new events when nothing told it (see services.ts). */
  readonly eventsPollMs: number
  /** Builds the workers over the shared job steps, once the shared services exist. */
  start(parts: ModeParts, log: Logger): ModeWorkers
}

export interface ModeParts {
  /** The job steps every node runs itself (agent starts, housekeeping, tracker sync). */
  ownSteps: Partial<Record<JobKind, JobStep>>
  hub: EventHub
  /** Cluster mode: fails the runs a dead node left (its lease swept). */
  failRunsOf(nodeIds: string[]): Promise<unknown>
  /** Cluster mode: puts an App's marks of spam by hand, made on any node, in this node's `like_spam` ring (src/abuse/spam-share.ts). */
  spamMarksOf(appId: string, marks: readonly { at: number; text: string }[], cleared: readonly { at: number; text: string }[]): Promise<number>
}

export interface ModeWorkers {
  worker: Worker
  /** Triage by hand's way to the similarity index (src/dedup/port.ts). */
  cluster: ClusterPort
  /** Set when sanitizing and clustering run on their own thread (server.ts starts and stops it). */
  processingThread?: ProcessingThread
  /**
   * Set when a second thread sanitizes ahead of the processing thread (server.ts starts and stops it; its
   * thread starts once a backlog forms: src/worker/sanitizer-on-demand.ts).
   */
  sanitizerThread?: SanitizerOnDemand
  /** Cluster mode: the worker that sanitizes and clusters for the partitions of Apps this node holds (server.ts). */
  processingWorker?: Worker
  /** Cluster mode: the partitions of Apps this node clusters (server.ts starts and stops them; the processing worker follows them). */
  partitions?: { start(): Promise<void>; stop(): Promise<void>; partitions(): number[]; onChange(listener: (held: number[]) => void): () => void }
  /** Cluster mode: sanitizing ahead of the processing node while this node does not cluster every partition (server.ts starts and stops it). */
  sanitizeAnywhere?: { start(): void; stop(): Promise<void> }
  /** Cluster mode: wake-ups across nodes (server.ts starts and stops it). */
  wakeBus?: WakeBus
  /**
   * Cluster mode: what this node reads of the others' doings, on their wake-ups and a safety poll: removed
   * reports (src/nodes/removal-follower.ts) and spam marked by hand (src/abuse/spam-share.ts). server.ts
   * starts and stops them with the wake bus.
   */
  followers?: { start?(): void; stop(): void }[]
  /** Cluster mode: a spam decision by hand committed here (the other nodes are told: src/abuse/spam-share.ts). */
  spamDecided?: () => void
  /** Cluster mode: stops listening for this process's event commits (server.ts, at shutdown). */
  stopEventSignal?: () => void
  /** Cluster mode: live peers this node does not hear on its Redis. */
  unheardPeers(): string[]
  /** The mode's own gauges (cluster mode: this node, its roles, its wake-ups). */
  nodeMetrics(): MetricFamily[]
  /** The mode's own /readyz check (cluster mode: `node`). */
  nodeCheck?: () => Check
}
