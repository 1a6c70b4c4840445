/**
 * The store: every repository of one database, built once per process by its dialect's folder
 * (src/db/sqlite/store.ts, src/db/pg/store.ts) and chosen once by the composition root (src/runtime/).
 * Modules see this interface and the ports it lists, never a dialect. A repository whose business
 * transaction includes a status move, an event or a job joins the store's own lifecycle writer inside
 * its dialect folder, so the pieces that share a transaction can never come from two stores.
 */
import type { Lifecycle } from '../lifecycle/lifecycle'
import type { WakeSignal } from '../lifecycle/wake'
import type { JobKind } from '../lifecycle/jobs'
import type { AbuseRepo } from '../abuse/abuse-repo'
import type { CredentialsRepo } from '../auth/credentials-repo'
import type { NodesRepo } from '../nodes/nodes-repo'
import type { JobsRepo } from '../lifecycle/jobs-repo'
import type { AdminsRepo } from '../modules/admins/repo'
import type { AgentRunsRepo } from '../modules/agent-runs/repo'
import type { AppsRepo } from '../modules/apps/repo'
import type { AuditRepo } from '../modules/audit/repo'
import type { ReportersRepo } from '../modules/reporters/repo'
import type { ChatopsRepo } from '../modules/chatops/repo'
import type { ConnectionsRepo } from '../modules/connections/repo'
import type { ConsoleRepo } from '../modules/admin-api/console-repo'
import type { EventsRepo } from '../modules/events/repo'
import type { FeedbackRepo } from '../modules/feedback/repo'
import type { ProcessingRepo } from '../modules/feedback/processing-repo'
import type { GitHooksRepo } from '../modules/git-hooks/repo'
import type { Inbox } from '../modules/admin-api/inbox-repo'
import type { MailRepo } from '../modules/mail/repo'
import type { MetricsRepo } from '../modules/metrics/repo'
import type { TenantsRepo } from '../modules/tenants/repo'
import type { TrackersRepo } from '../modules/trackers/repo'
import type { UploadsRepo } from '../modules/uploads/repo'
import type { WebhooksRepo } from '../modules/webhooks/repo'
import type { Check } from '../modules/health/readiness'
import type { IntakeTurns } from './intake-turns'

export type Dialect = 'sqlite' | 'pg'

/** The `instance_meta` key/value table (keys: src/db/meta-keys.ts). */
export interface InstanceMeta {
  read(key: string): Promise<string | undefined>
  write(key: string, value: string): Promise<void>
  /** The id every node of this database shares (made on first use): names its shared Redis keys. */
  clusterId(): Promise<string>
}

export interface Store {
  /** For messages, metrics and `fixloop info`; code outside src/runtime/ never branches on it. */
  readonly dialect: Dialect
  /** Every status move, job and change event (src/lifecycle/lifecycle.ts), over this store. */
  readonly lifecycle: Lifecycle
  /** Raised after each job this store's lifecycle queues (the workers listen). */
  readonly wake: WakeSignal
  /** Intake's commit times: the workers' pacing, and the checkpointer's on SQLite. */
  readonly turns: IntakeTurns
  /** Intake's group committer (submissions, upload keys): `flush` at shutdown commits what is pending. */
  readonly committer: { flush(): void }

  readonly abuse: AbuseRepo
  /** A reporter's reports; removing reports for good (erasure, retention). */
  readonly reporters: ReportersRepo
  readonly admins: AdminsRepo
  readonly agentRuns: AgentRunsRepo
  readonly apps: AppsRepo
  readonly audit: AuditRepo
  readonly chatops: ChatopsRepo
  readonly connections: ConnectionsRepo
  readonly console: ConsoleRepo
  readonly credentials: CredentialsRepo
  readonly events: EventsRepo
  readonly feedback: FeedbackRepo
  readonly gitHooks: GitHooksRepo
  readonly inbox: Inbox
  readonly mail: MailRepo
  readonly metrics: MetricsRepo
  readonly nodes: NodesRepo
  readonly processing: ProcessingRepo
  readonly tenants: TenantsRepo
  readonly trackers: TrackersRepo
  readonly uploads: UploadsRepo
  readonly webhooks: WebhooksRepo
  readonly meta: InstanceMeta
  /**
   * The job table as one worker sees it: `kinds` are the job kinds it runs (all when omitted). The
   * processing thread runs `process` and `batch_release`, the HTTP thread's worker the rest.
   */
  jobs(kinds?: readonly JobKind[]): JobsRepo
  /** The /readyz `database` check: answers, holds every migration, takes a write. */
  databaseCheck(): Check | Promise<Check>
  /** Closes the connection(s). */
  close(): Promise<void>
}

/** What a store is built with besides its connection. */
export interface StoreOptions {
  /** Shared with the checkpointer thread and the processing thread (SQLite); made when absent. */
  turns?: IntakeTurns
}

/**
 * `base` with each member of `build` made on first use: a CLI command touches two repositories, not
 * twenty, and a processing thread's store prepares only the statements it runs.
 */
export function withLazyMembers<B extends object, T extends object>(base: B, build: { [K in keyof T]: () => T[K] }): B & T {
  const made = new Map<PropertyKey, unknown>()
  for (const key of Object.keys(build) as (keyof T & string)[]) {
    Object.defineProperty(base, key, {
      enumerable: true,
      get: () => {
        if (!made.has(key)) made.set(key, build[key]())
        return made.get(key)
      },
    })
  }
  return base as B & T
}

/** The embedded store's write-ahead log keeper (src/db/sqlite/wal-keeper.ts), run by the server. */
export interface WalKeeper {
  /** The WAL file (its size is a metric). */
  readonly walFile: string
  start(): void
  health(): { ok: boolean; reason?: string }
  /** Stops the checkpointer within `waitMs`; true when its last TRUNCATE ran. */
  stop(waitMs?: number): Promise<boolean>
  /** One more TRUNCATE once every thread stopped: cheap after the checkpointer's, skipped while a reader holds the WAL. */
  truncate(): void
}
