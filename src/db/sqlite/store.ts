/**
 * The embedded store: every repository over one SQLite connection, built once, sharing one lifecycle
 * writer (synchronous, nested in each repository's own transaction), one group committer and one set
 * of write turns. The processing engine (src/worker/steps/process-feedback.ts) takes the synchronous
 * sides (`sides`): its transactions must never await.
 */
import { randomBytes } from 'node:crypto'
import type { Clock } from '../../core/clock'
import { statusAfterSanitize, type Lifecycle } from '../../lifecycle/lifecycle'
import { createWakeSignal } from '../../lifecycle/wake'
import type { JobKind } from '../../lifecycle/jobs'
import type { JobsRepo } from '../../lifecycle/jobs-repo'
import type { ProcessingRepo } from '../../modules/feedback/processing-repo'
import { META } from '../meta-keys'
import { withLazyMembers, type Store, type StoreOptions } from '../store'
import type { SqliteStorage } from './storage'
import { createSqliteLifecycle, type SqliteLifecycle } from './lifecycle'
import { createSqliteClusterRepo } from './dedup'
import { sqliteAuditWriter } from './audit-writer'
import type { SyncClusterRepo } from '../../dedup/store-sides'
import type { AuditEntry } from '../../modules/audit/entry'
import { sqliteRunner } from './tx-body'
import { GroupCommitter } from './group-commit'
import { WriteTurns } from './write-turns'
import { createSqliteJobs, type SqliteJobs } from './jobs'
import { createSqliteProcessing, type SqliteProcessing } from './processing'
import { createSqliteSanitizeAhead, type SqliteSanitizeAhead } from './sanitize-ahead'
import { createSqliteAbuseRepo } from './abuse'
import { createSqliteReportersRepo } from './reporters'
import { createSqliteAdminsRepo } from './admins'
import { createSqliteAgentRunsRepo } from './agent-runs'
import { createSqliteAppsRepo } from './apps'
import { createSqliteAuditRepo } from './audit'
import { createSqliteChatopsRepo } from './chatops'
import { createSqliteConnectionsRepo } from './connections'
import { createSqliteConsoleRepo } from './console'
import { createSqliteCredentialsRepo } from './credentials'
import { createSqliteEventsRepo } from './events'
import { createSqliteFeedbackRepo } from './feedback'
import { createGitHooksRepo } from '../bodies/git-hooks'
import { createSqliteInbox } from './inbox'
import { createSqliteMailRepo } from './mail'
import { createSqliteMetricsRepo } from './metrics'
import { createSqliteNodesRepo } from './nodes'
import { createSqliteTenantsRepo } from './tenants'
import { createSqliteTrackersRepo } from './trackers'
import { createSqliteUploadsRepo } from './uploads'
import { createSqliteWebhooksRepo } from './webhooks'
import { sqliteDatabaseCheck } from './readiness'
import { readMeta, writeMeta } from './instance-meta'

/** The synchronous sides, for SQLite code that writes inside its own transaction (the processing engine). */
export interface SqliteSides {
  readonly lifecycle: SqliteLifecycle
  readonly processing: SqliteProcessing
  /** The sanitize-ahead thread's queue (src/worker/sanitize-ahead.ts). */
  readonly sanitizeAhead: SqliteSanitizeAhead
  jobs(kinds?: readonly JobKind[]): SqliteJobs
  /** Near-duplicate clustering's queries (src/dedup/service.ts). */
  readonly dedup: SyncClusterRepo
  /** Writes an audit row in the caller's transaction. */
  writeAudit(e: AuditEntry): string
}

export interface SqliteStore extends Store {
  readonly dialect: 'sqlite'
  readonly storage: SqliteStorage
  readonly turns: WriteTurns
  readonly sides: SqliteSides
}

export function openSqliteStore(storage: SqliteStorage, clock: Clock, options: StoreOptions = {}): SqliteStore {
  const { sqlite } = storage
  const wake = createWakeSignal()
  const side = createSqliteLifecycle(sqlite, clock, wake)
  const turns = options.turns instanceof WriteTurns ? options.turns : new WriteTurns()
  // Intake's group commits go first at the write lock; the processing thread waits its turn.
  const committer = new GroupCommitter(sqlite, turns)
  const lifecycle: Lifecycle = {
    move: async (feedbackId, to, cause) => side.move(sqlite, feedbackId, to, cause),
    enqueue: async (kind, target, runAfter) => side.enqueue(kind, target, runAfter),
    enqueueWaitingRuns: async (appId) => side.enqueueWaitingRuns(appId),
    // An event's seq is read inside the transaction that writes it (src/db/sqlite/outbox.ts).
    record: async (scope, type, data) => sqlite.transaction(() => side.record(scope, type, data)).immediate(),
    statusAfterSanitize,
  }
  const writeAudit = sqliteAuditWriter(sqlite, clock)
  const sides = withLazyMembers({ jobs: (kinds?: readonly JobKind[]) => createSqliteJobs(sqlite, kinds), writeAudit }, {
    lifecycle: () => side,
    dedup: () => createSqliteClusterRepo(sqlite, side),
    processing: () => createSqliteProcessing(sqlite, side),
    sanitizeAhead: () => createSqliteSanitizeAhead(sqlite),
  })
  const databaseCheck = sqliteDatabaseCheck(storage)
  const base = {
    dialect: 'sqlite' as const,
    storage,
    lifecycle,
    wake,
    turns,
    committer,
    sides,
    meta: {
      read: async (key: string) => readMeta(sqlite, key),
      write: async (key: string, value: string) => writeMeta(sqlite, key, value),
      clusterId: async () => {
        sqlite.query('INSERT OR IGNORE INTO instance_meta (key, value, updated_at) VALUES (?, ?, ?)').run(META.clusterId, randomBytes(8).toString('hex'), Date.now())
        return readMeta(sqlite, META.clusterId) as string
      },
    },
    jobs: (kinds?: readonly JobKind[]) => asyncJobs(createSqliteJobs(sqlite, kinds)),
    databaseCheck: () => databaseCheck(),
    close: async () => sqlite.close(),
  }
  return withLazyMembers(base, {
    abuse: () => createSqliteAbuseRepo(storage),
    reporters: () => createSqliteReportersRepo(storage, side),
    admins: () => createSqliteAdminsRepo(storage, clock),
    agentRuns: () => createSqliteAgentRunsRepo(storage, side),
    apps: () => createSqliteAppsRepo(storage),
    audit: () => createSqliteAuditRepo(storage, clock),
    chatops: () => createSqliteChatopsRepo(storage, clock),
    connections: () => createSqliteConnectionsRepo(storage, side, clock),
    console: () => createSqliteConsoleRepo(storage),
    credentials: () => createSqliteCredentialsRepo(storage),
    events: () => createSqliteEventsRepo(storage),
    feedback: () => createSqliteFeedbackRepo(storage, side, clock, committer),
    gitHooks: () => createGitHooksRepo(sqliteRunner(sqlite), side.bodies, clock),
    inbox: () => createSqliteInbox(storage),
    mail: () => createSqliteMailRepo(storage, clock),
    metrics: () => createSqliteMetricsRepo(storage),
    nodes: () => createSqliteNodesRepo(storage),
    processing: () => asyncProcessing(sides.processing),
    tenants: () => createSqliteTenantsRepo(storage, clock),
    trackers: () => createSqliteTrackersRepo(storage, side, clock),
    uploads: () => createSqliteUploadsRepo(storage, committer),
    webhooks: () => createSqliteWebhooksRepo(storage, clock),
  }) satisfies SqliteStore
}

/** The job table's synchronous statements, as the worker's (async) port. */
function asyncJobs(s: SqliteJobs): JobsRepo {
  return {
    claim: async (now, leaseMs, owner) => s.claim(now, leaseMs, owner),
    claimBatch: async (kind, n, now, leaseMs, owner) => s.claimBatch(kind, n, now, leaseMs, owner),
    finish: async (id) => s.finish(id),
    retry: async (id, runAfter, error) => s.retry(id, runAfter, error),
    defer: async (id, runAfter) => s.defer(id, runAfter),
    release: async (ids) => s.release(ids),
    reclaimOrphans: async (isGone) => s.reclaimOrphans(isGone),
    nextDueAt: async () => s.nextDueAt(),
    hasKind: async (kind) => s.hasKind(kind),
    runAfterOf: async (kind, appId) => s.runAfterOf(kind, appId),
  }
}

/** The processing reads and moves outside a batch (batch windows, the CLI), as the async port. */
function asyncProcessing(s: SqliteProcessing): ProcessingRepo {
  return {
    get: async (id) => s.get(id),
    appOf: async (id) => s.appOf(id),
    routing: async (appId) => s.routing(appId),
    waitingLeads: async (appId) => s.waitingLeads(appId),
    releaseWaitingLeads: async (appId, to) => s.releaseWaitingLeads(appId, to),
    fail: async (id, version, reason) => s.fail(id, version, reason),
  }
}
