/**
 * The PostgreSQL store: every repository over one node-postgres pool, built once, sharing one lifecycle
 * writer (a PgTx joined by each repository's own transaction) and one group committer. The processing
 * engine (src/worker/steps/process-feedback-pg.ts) takes the transaction-joining sides (`sides`).
 */
import { randomBytes } from 'node:crypto'
import type { Clock } from '../../core/clock'
import { statusAfterSanitize, type Lifecycle } from '../../lifecycle/lifecycle'
import { createWakeSignal } from '../../lifecycle/wake'
import type { JobKind } from '../../lifecycle/jobs'
import { META } from '../meta-keys'
import { withLazyMembers, type Store, type StoreOptions } from '../store'
import { IntakeCommitTimes } from '../intake-turns'
import type { PgStorage } from './storage'
import { createPgLifecycle, type PgLifecycle, type PgTx } from './lifecycle'
import { createPgClusterRepo } from './dedup'
import { createPgSanitizeAhead } from './sanitize-ahead'
import type { TxSanitizeAheadSide } from '../../modules/feedback/processing-repo'
import { writeAuditPg } from './audit-writer'
import type { TxClusterRepo } from '../../dedup/store-sides'
import type { AuditEntry } from '../../modules/audit/entry'
import { pgRunner } from './tx-body'
import { PgGroupCommitter } from './group-commit'
import { createPgJobs, type PgJobs, type PgJobsOptions } from './jobs'
import { createPgProcessing, type PgProcessing } from './processing'
import { createPgAbuseRepo } from './abuse'
import { createPgReportersRepo } from './reporters'
import { createPgAdminsRepo } from './admins'
import { createPgAgentRunsRepo } from './agent-runs'
import { createPgAppsRepo } from './apps'
import { createPgAuditRepo } from './audit'
import { createPgChatopsRepo } from './chatops'
import { createPgConnectionsRepo } from './connections'
import { createPgConsoleRepo } from './console'
import { createPgCredentialsRepo } from './credentials'
import { createPgEventsRepo } from './events'
import { createPgFeedbackRepo } from './feedback'
import { createGitHooksRepo } from '../bodies/git-hooks'
import { createPgInbox } from './inbox'
import { createPgMailRepo } from './mail'
import { createPgMetricsRepo } from './metrics'
import { createPgNodesRepo } from './nodes'
import { createPgTenantsRepo } from './tenants'
import { createPgTrackersRepo } from './trackers'
import { createPgUploadsRepo } from './uploads'
import { createPgWebhooksRepo } from './webhooks'
import { pgDatabaseCheck } from './readiness'
import { readMetaPg, writeMetaPg } from './instance-meta'

/** The transaction-joining sides, for PostgreSQL code that writes inside its own PgTx (the processing engine). */
export interface PgSides {
  readonly lifecycle: PgLifecycle
  readonly processing: PgProcessing
  jobs(kinds?: readonly JobKind[]): PgJobs
  /** Near-duplicate clustering's queries (src/dedup/pg-service.ts). */
  readonly dedup: TxClusterRepo<PgTx>
  /** Sanitizing on any node: the raw reports queued past the processing node's (src/worker/sanitize-anywhere.ts). */
  readonly sanitizeAhead: TxSanitizeAheadSide<PgTx>
  /** Writes an audit row in the caller's transaction. */
  writeAudit(tx: PgTx, e: AuditEntry): Promise<string>
}

export interface PgStore extends Store {
  readonly dialect: 'pg'
  readonly storage: PgStorage
  readonly sides: PgSides
  /** The job queue of `kinds`; `options.partitions`: only the Apps of these partitions (cluster mode's processing worker). */
  jobs(kinds?: readonly JobKind[], options?: PgJobsOptions): PgJobs
}

export function openPgStore(storage: PgStorage, clock: Clock, options: StoreOptions = {}): PgStore {
  const { pool } = storage
  const wake = createWakeSignal()
  const side = createPgLifecycle(clock, wake)
  // No write lock to take turns at: the committer only notes its commits for the workers' pacing.
  const turns = options.turns ?? new IntakeCommitTimes()
  const committer = new PgGroupCommitter(pool, turns)
  const tx = <T>(work: (t: PgTx) => Promise<T>) => storage.tx((client, _db, onCommit) => work({ client, onCommit }))
  const lifecycle: Lifecycle = {
    move: (feedbackId, to, cause) => tx((t) => side.move(t, feedbackId, to, cause)),
    enqueue: (kind, target, runAfter) => tx((t) => side.enqueue(t, kind, target, runAfter)),
    enqueueWaitingRuns: (appId) => tx((t) => side.enqueueWaitingRuns(t, appId)),
    record: (scope, type, data) => tx((t) => side.record(t, scope, type, data)),
    statusAfterSanitize,
  }
  const writeAudit = (t: PgTx, e: AuditEntry) => writeAuditPg(t.client, clock, e)
  const sides = withLazyMembers({ jobs: (kinds?: readonly JobKind[]) => createPgJobs(storage, kinds), writeAudit }, {
    lifecycle: () => side,
    dedup: () => createPgClusterRepo(storage, side),
    sanitizeAhead: () => createPgSanitizeAhead(storage),
    processing: () => createPgProcessing(storage, side, clock, wake),
  })
  const databaseCheck = pgDatabaseCheck(storage)
  const base = {
    dialect: 'pg' as const,
    storage,
    lifecycle,
    wake,
    turns,
    committer,
    sides,
    meta: {
      read: (key: string) => readMetaPg(pool, key),
      write: (key: string, value: string) => writeMetaPg(pool, key, value),
      clusterId: async () => {
        await pool.query('INSERT INTO instance_meta (key, value, updated_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING', [META.clusterId, randomBytes(8).toString('hex'), Date.now()])
        return (await readMetaPg(pool, META.clusterId)) as string
      },
    },
    jobs: (kinds?: readonly JobKind[], options?: PgJobsOptions) => createPgJobs(storage, kinds, options),
    databaseCheck: () => databaseCheck(),
    close: () => pool.end(),
  }
  return withLazyMembers(base, {
    abuse: () => createPgAbuseRepo(storage),
    reporters: () => createPgReportersRepo(storage, side),
    admins: () => createPgAdminsRepo(storage, clock),
    agentRuns: () => createPgAgentRunsRepo(storage, side),
    apps: () => createPgAppsRepo(storage),
    audit: () => createPgAuditRepo(storage, clock),
    chatops: () => createPgChatopsRepo(storage, clock),
    connections: () => createPgConnectionsRepo(storage, side, clock),
    console: () => createPgConsoleRepo(storage),
    credentials: () => createPgCredentialsRepo(storage),
    events: () => createPgEventsRepo(storage),
    feedback: () => createPgFeedbackRepo(storage, side, clock, committer),
    gitHooks: () => createGitHooksRepo(pgRunner(storage), side.bodies, clock),
    inbox: () => createPgInbox(storage),
    mail: () => createPgMailRepo(storage, clock),
    metrics: () => createPgMetricsRepo(storage),
    nodes: () => createPgNodesRepo(storage),
    processing: () => sides.processing,
    tenants: () => createPgTenantsRepo(storage, clock),
    trackers: () => createPgTrackersRepo(storage, side, clock),
    uploads: () => createPgUploadsRepo(storage, committer),
    webhooks: () => createPgWebhooksRepo(storage, clock),
  }) satisfies PgStore
}
