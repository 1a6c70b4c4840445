/**
 * The composition root: every service, the agent runner and the worker, built once per process from
 * the context. app.ts mounts routes over these services; server.ts starts and stops them. A service
 * never builds another service itself, so there is exactly one cluster index, one group committer
 * and one lifecycle (with its wake signal) per process.
 */
import { OffsetClock } from './core/clock'
import { withSuggestedLeads } from './modules/admin-api/inbox-repo'
import type { Runtime } from './runtime/open'
import { inProcessProcessing } from './runtime/processing'
import { createPgProcessingEngine } from './worker/processing-pg'
import type { Logger } from './core/logger'
import { CredentialDirectory } from './auth/directory'
import { createRateLimiters } from './http/rate-limit'
import type { AuthDeps } from './http/auth'
import { createFeedbackService } from './modules/feedback/service'
import { createTriageService } from './modules/feedback/triage-service'
import { createUploadsService } from './modules/uploads/service'
import { createTenantsService } from './modules/tenants/service'
import { createConnectionsService } from './modules/connections/service'
import { createAgentRunsService } from './modules/agent-runs/service'
import { createBlobStore } from './blobs/index'
import { createAgentRunner, sanitizeReview, sanitizeReviewAuthor } from './agent/runner'
import { Worker, type JobStep, type WorkerOptions } from './worker/loop'
import { createReviewStep, createStartAgentStep } from './worker/steps/start-agent'
import { createCollectUploadsStep, scheduleUploadsGc } from './worker/steps/collect-uploads'
import { createPollPullRequestsStep, schedulePrPoll } from './worker/steps/poll-pull-requests'
import { createPollTrackerIssuesStep, createPushTrackerIssueStep, scheduleTrackerPoll } from './worker/steps/tracker-sync'
import { createTrackersService } from './modules/trackers/service'
import { createTrackerSync } from './modules/trackers/sync'
import { TrackerRulesWatcher } from './modules/trackers/rules-watcher'
import { intakePacing, isProcessingKind, PROCESSING_KINDS } from './worker/processing'
import { ClusterCoordinator, newNodeInfo, soloCoordinator, type Coordinator } from './nodes/coordinator'
import { RedisLink } from './nodes/redis-link'
import { ANNOUNCE, CLUSTER_SAFETY_POLL_MS, WakeBus } from './nodes/wake-bus'
import { PeerCheck } from './nodes/peer-check'
import { createPowService, powKeyOf } from './abuse/pow-service'
import { createSpamIntake } from './abuse/spam-intake'
import { onEventsCommitted } from './db/pg/event-signal'
import { createSharedRateLimiters } from './http/shared-rate-limit'
import { sharedThrottles } from './http/shared-failure-throttle'
import { localThrottles } from './core/failure-throttle'
import { ProcessingThread } from './worker/thread'
import type { ClusterPort } from './dedup/port'
import { takeTurnsForTransactions } from './db/sqlite/write-turns'
import { DB_FILE } from './runtime/open'
import { join } from 'node:path'
import { cpus } from 'node:os'
import { isJobKind, type JobKind } from './lifecycle/jobs'
import { createAdminsService } from './modules/admins/service'
import { createSessionStore } from './modules/admins/sessions'
import { createKeyActivity } from './modules/admins/key-activity'
import { createAuditLog } from './modules/audit/index'
import { createSpamSweep } from './abuse/spam-retention'
import { createConsoleService } from './modules/admin-api/console'
import { createPasswordReentry } from './modules/admin-api/password-reentry'
import type { AdminAuthDeps } from './http/admin-auth'
import { EventHub } from './modules/events/hub'
import { createEventsService } from './modules/events/service'
import { createWebhooksService } from './modules/webhooks/service'
import { WebhookDispatcher } from './modules/webhooks/dispatcher'
import { createChatopsService } from './modules/chatops/service'
import { createGitHooksService } from './modules/git-hooks/service'
import { createSlashCommands } from './modules/chatops/commands'
import { SlackApi } from './modules/chatops/slack-api'
import { SlackNotifier } from './modules/chatops/notifier'
import { createMailService } from './modules/mail/service'
import { Mailer } from './modules/mail/mailer'

export interface ServiceOptions {
  worker?: Partial<WorkerOptions>
  /**
   * Sanitize, cluster and release batches on the processing thread (src/worker/thread-entry.ts, its own
   * connection and core). Off, this thread's worker runs every job kind: tests that drive the worker
   * with `tick()` and an injected clock.
   */
  processingThread?: boolean
  /**
   * With the processing thread: a second thread sanitizes ahead of it during a backlog (worker/sanitize-ahead.ts).
   * Default: when the machine has at least two cores (on one it would only take turns with processing). The
   * machine's, not the process's current CPU affinity: a server started pinned to one core may be given more.
   */
  sanitizeAhead?: boolean
  sandboxUnavailable?: string | null
  /** A test injected the clock: shared rate limits follow it too (not the Redis server's clock). */
  injectedClock?: boolean
  /**
   * How long one processing batch may hold the write lock (SQLite, this thread's worker; default
   * DEFAULT_BATCH_BUDGET_MS). Tests that count batches set a long one, so a loaded machine's slowness does
   * not decide how many reports share a batch.
   */
  batchBudgetMs?: number
}

export function createServices(ctx: Runtime, log: Logger, options: ServiceOptions = {}) {
  const { clock, config } = ctx
  const workerOptions = options.worker ?? {}
  // One store per process (src/runtime/open.ts): its lifecycle raises `wake`, its committer notes `turns`.
  const { lifecycle, wake, turns, committer } = ctx.store
  const directory = new CredentialDirectory(ctx.store.credentials, ctx.box)
  // Cluster mode: this process is one node of possibly several (src/nodes/); its id names its runs and
  // leases, its roles come from leases in the database, its rate limits are shared through Redis. The
  // embedded mode holds every role itself and keeps its buckets in memory.
  const node = ctx.store.dialect === 'pg' ? newNodeInfo() : undefined
  const coordinator: Coordinator = node
    ? new ClusterCoordinator(ctx.store.nodes, node, log, {
        leaseMs: config.nodeLeaseMs,
        clock: clock instanceof OffsetClock ? clock : undefined,
        onSweep: async (dead) => void (await runner.failRunsOf(dead)),
        // Each beat announces this node on its Redis and checks that every live peer is heard there too.
        onBeat: (peers) => {
          wakeBus?.publish(ANNOUNCE)
          // Not listening (this node's Redis is away: /readyz names it): nothing can be heard, nothing is judged.
          peerCheck?.observe(wakeBus?.listening ? peers : [], performance.now())
          const unheard = peerCheck?.unheardPeers() ?? []
          if (unheard.length > 0 && Date.now() - peerWarnedAt > 300_000) {
            peerWarnedAt = Date.now()
            log.warn('live nodes are not heard on this node\'s Redis: their Redis is down, or they use another FIXLOOP_REDIS_URL (rate limits and wake-ups are split meanwhile)', { unheardPeers: unheard, redis: redis?.where })
          }
        },
      })
    : soloCoordinator()
  const redis = node && config.redisUrl ? new RedisLink(config.redisUrl) : undefined
  // Set once the wake bus exists (below); read at each beat, which starts only when the server starts.
  let peerCheck: PeerCheck | undefined
  let peerWarnedAt = 0
  const limiters = redis
    ? createSharedRateLimiters(redis, clock, config.rateLimitMultiplier, () => coordinator.liveNodes(), log, options.injectedClock ? clock : undefined)
    : createRateLimiters(clock, config.rateLimitMultiplier)
  const tenants = createTenantsService(ctx)
  // Proof of work (issue 27): challenges signed with a key derived from the master key; spent solutions in
  // the database, or in Redis (cluster mode) with the database as its fallback.
  const abuseRepo = ctx.store.abuse
  const pow = createPowService({ key: powKeyOf(ctx.urlSigningKey), clock, repo: abuseRepo, redis, log })
  // The spam signals known at intake, in memory (src/abuse/spam-intake.ts); the same flood meter as the proof of work.
  const spamIntake = createSpamIntake({ clock, repo: abuseRepo, meter: pow.meter })
  // The dashboard: admins, their sessions and the audit log; a session may call the sk_ routes too.
  const admins = createAdminsService(ctx.store.admins, ctx.box, clock)
  const audit = createAuditLog(ctx.store.audit, clock)
  // Sign-in and password re-entry back-off: one count per key for the whole cluster (a balancer spreads
  // guesses over the nodes), in memory on a single node.
  const throttles = redis
    ? sharedThrottles(redis, clock, config.rateLimitMultiplier, log, () => ctx.store.meta.clusterId(), options.injectedClock ? clock : undefined)
    : localThrottles(clock, config.rateLimitMultiplier)
  const reentry = createPasswordReentry(admins, audit, throttles)
  const adminAuth: AdminAuthDeps = { admins, sessions: createSessionStore(ctx.store.admins, clock), publicUrl: config.publicUrl, trustProxy: config.trustProxy }
  const auth: AuthDeps = {
    directory,
    limiters,
    clock,
    trustProxy: config.trustProxy,
    admin: { ...adminAuth, orgExists: ctx.store.console.orgExists },
    keyUsed: createKeyActivity(ctx.store.admins, clock),
  }
  const blobs = createBlobStore(ctx)
  const uploads = createUploadsService(ctx.store.uploads, blobs, clock, log, config.uploadGraceHours * 3600_000)
  const connections = createConnectionsService(ctx, lifecycle)
  const agentRunsRepo = ctx.store.agentRuns
  const runner = createAgentRunner(agentRunsRepo, connections, clock, log, {
    dataDir: config.dataDir,
    concurrency: config.agentConcurrency,
    passEnv: config.agentPassEnv,
    publicUrl: config.publicUrl,
    sandbox: { mode: config.agentSandbox, network: config.agentNetwork, readOnlyPaths: config.agentSandboxPaths, unavailable: options.sandboxUnavailable ?? null },
    workDir: config.workDir,
    nodeId: node?.id,
    reviewIterationsMax: config.reviewIterationsMax,
  })

  const gitHooks = createGitHooksService({
    repo: ctx.store.gitHooks,
    lifecycle,
    clock,
    connections,
    reviews: { reviewRefusal: runner.reviewRefusal, busyReason: runner.busyReason, sanitize: (r) => ({ text: sanitizeReview(r.text), author: sanitizeReviewAuthor(r.author) }) },
  })
  const prPollEveryMs = config.prPollMinutes * 60_000
  // Issue-tracker sync (docs/trackers.md): pushes and polls are durable jobs, never in intake's or a move's transaction.
  const trackers = createTrackersService(ctx, lifecycle)
  const trackerSync = createTrackerSync({ trackers, clock, log, publicUrl: config.publicUrl })
  const trackerPollEveryMs = config.trackerPollMinutes * 60_000
  const ownSteps = {
    agent: createStartAgentStep(runner),
    review: createReviewStep(runner),
    uploads_gc: createCollectUploadsStep(uploads, lifecycle, clock),
    pr_poll: createPollPullRequestsStep({ hooks: gitHooks.repo, connections, lifecycle, clock, log, everyMs: prPollEveryMs }),
    tracker_push: createPushTrackerIssueStep(trackerSync),
    tracker_poll: createPollTrackerIssuesStep({ sync: trackerSync, lifecycle, clock, everyMs: trackerPollEveryMs }),
  } satisfies Partial<Record<JobKind, JobStep>>
  let worker: Worker
  let cluster: ClusterPort
  /** Cluster mode: what a wake-up heard from another node does here (a job of that kind was queued there). */
  let wakeLocally: (kind: JobKind) => void = () => {}
  // Cluster mode: wake-ups across nodes through Redis pub/sub. Set below, once the hub exists.
  let wakeBus: WakeBus | undefined
  let processingThread: ProcessingThread | undefined
  let sanitizerThread: ProcessingThread | undefined
  /** Cluster mode: sanitizing and clustering run while this node holds the `processing` role (server.ts). */
  let processingWorker: Worker | undefined
  if (ctx.store.dialect === 'pg') {
    // PostgreSQL: this thread's workers, no processing or sanitizer threads, and no write turns (PostgreSQL
    // has no single write lock for intake to wait on). Any node runs agent starts and housekeeping jobs;
    // only the `processing` role's holder sanitizes and clusters, with the App indexes in its process.
    // Sharing intake's thread, that worker paces itself on intake's commits as on SQLite without the
    // processing thread (the PostgreSQL group committer notes them in `turns`).
    const ownKinds = Object.keys(ownSteps) as JobKind[]
    const processingJobs = ctx.store.jobs(PROCESSING_KINDS)
    const processing = createPgProcessingEngine(ctx.store, clock)
    cluster = processing.port
    worker = new Worker(ctx.store.jobs(ownKinds), ownSteps, clock, log, { ...workerOptions, clusterLeaseOwner: coordinator.nodeId })
    const processor = new Worker(processingJobs, processing.steps, clock, log, {
      ...intakePacing(turns),
      ...workerOptions,
      clusterLeaseOwner: `${coordinator.nodeId}:processing`,
    })
    processingWorker = processor
    const ownWorker = worker
    wakeLocally = (kind) => (isProcessingKind(kind) ? processor.wake() : ownWorker.wake())
    // Jobs queued here wake this node's workers at once, and the other nodes' through Redis (wake-bus.ts).
    wake.on((kind) => {
      wakeLocally(kind)
      wakeBus?.publish(kind)
    })
  } else if (options.processingThread) {
    const jobs = ctx.store.jobs(Object.keys(ownSteps) as JobKind[])
    worker = new Worker(jobs, ownSteps, clock, log, workerOptions)
    const { busy: _busy, saturated: _saturated, ...threadOptions } = workerOptions
    processingThread = new ProcessingThread(join(config.dataDir, DB_FILE), ctx.store.turns, log, threadOptions, () => worker.wake())
    cluster = processingThread
    const thread = processingThread
    if (options.sanitizeAhead ?? cpus().length >= 2) {
      sanitizerThread = new ProcessingThread(join(config.dataDir, DB_FILE), ctx.store.turns, log, {}, () => {}, 'sanitizer')
    }
    const sanitizer = sanitizerThread
    // This thread's other transactions (customer moves, admin changes) go ahead of processing too.
    takeTurnsForTransactions(ctx.store.storage.sqlite, ctx.store.turns, 'intake')
    wake.on((kind) => {
      if (!isProcessingKind(kind)) return worker.wake()
      thread.wake()
      if (kind === 'process') sanitizer?.wake()
    })
  } else {
    const jobs = ctx.store.jobs()
    const processing = inProcessProcessing(ctx, { batchBudgetMs: options.batchBudgetMs })
    cluster = processing.port
    // Sharing intake's thread, the worker paces itself while intake is busy, and takes only a small share
    // of the core while intake saturates it.
    worker = new Worker(jobs, { ...processing.steps, ...ownSteps }, clock, log, { ...intakePacing(turns), ...workerOptions })
    wake.on(() => worker.wake())
  }
  void scheduleUploadsGc(ctx.store.jobs(), lifecycle, clock).catch((e) => log.error('uploads collection not scheduled', { error: e instanceof Error ? e.message : String(e) }))
  void schedulePrPoll(ctx.store.jobs(), lifecycle, clock, prPollEveryMs).catch((e) => log.error('pull request polling not scheduled', { error: e instanceof Error ? e.message : String(e) }))
  void scheduleTrackerPoll(ctx.store.jobs(), lifecycle, clock, trackerPollEveryMs).catch((e) => log.error('tracker polling not scheduled', { error: e instanceof Error ? e.message : String(e) }))

  const apps = ctx.store.apps
  const feedback = createFeedbackService(ctx, uploads, spamIntake)
  // One watcher of the outbox for every stream, the webhook dispatcher and Slack in this process.
  // On PostgreSQL the hub is woken by every commit that appended events (this process's at once, other
  // nodes' through Redis pub/sub), so its poll is only the safety net for lost messages and for events
  // another process (the CLI) wrote. SQLite has no such signal from the processing thread: it polls.
  const hub = new EventHub(ctx.store.events, { pollMs: node ? CLUSTER_SAFETY_POLL_MS : 100, heartbeatMs: config.sseHeartbeatMs })
  let stopEventSignal: (() => void) | undefined
  if (node) {
    if (redis && config.redisUrl) {
      wakeBus = new WakeBus(config.redisUrl, redis, node.id, (what) => (what === 'events' ? void hub.check().catch(() => {}) : isJobKind(what) && wakeLocally(what)), log)
      const bus = wakeBus
      peerCheck = new PeerCheck(config.nodeLeaseMs, (id) => bus.heardAt(id))
    }
    stopEventSignal = onEventsCommitted(() => {
      // A failed look is repeated by the safety poll.
      hub.check().catch(() => {})
      wakeBus?.publish('events')
    })
  }
  const slackApi = new SlackApi(config.slackApiUrl)

  return {
    auth,
    directory,
    lifecycle,
    committer,
    blobs,
    uploads,
    apps,
    feedback,
    pow,
    spamIntake,
    /** The spam folder's retention (src/abuse/spam-retention.ts); server.ts runs it on the `maintenance` node. */
    spamSweep: createSpamSweep({ repo: abuseRepo, uploads, audit, clock, log }),
    triage: createTriageService(ctx.store.feedback, cluster, apps),
    agentRuns: createAgentRunsService(agentRunsRepo),
    tenants,
    connections,
    admins,
    audit,
    adminAuth,
    reentry,
    throttles,
    console: createConsoleService(ctx, { reentry, audit, tenants, connections }),
    inbox: withSuggestedLeads(ctx.store.inbox, ctx.store.feedback),
    runner,
    worker,
    /** Set when sanitizing and clustering run on their own thread (server.ts starts and stops it). */
    processingThread,
    /** Set when a second thread sanitizes ahead of the processing thread (server.ts starts and stops it). */
    sanitizerThread,
    /** Cluster mode: the worker that sanitizes and clusters while this node holds `processing` (server.ts). */
    processingWorker,
    coordinator,
    /** Cluster mode: this node's Redis link (shared rate limits; /readyz checks it). */
    redis,
    /** Cluster mode: wake-ups across nodes (server.ts starts and stops it). */
    wakeBus,
    unheardPeers: () => peerCheck?.unheardPeers() ?? [],
    /** Cluster mode: stops listening for this process's event commits (server.ts, at shutdown). */
    stopEventSignal,
    hub,
    events: createEventsService(ctx.store.events, hub, apps, config.sseStreamsPerKey),
    webhooks: createWebhooksService(ctx),
    webhookDispatcher: new WebhookDispatcher(ctx, log, { mayAct: () => coordinator.holds('dispatch') }),
    chatops: createChatopsService(ctx),
    gitHooks,
    trackers,
    trackerSync,
    /** The push rules over the events: runs with the `dispatch` role (server.ts), like the dispatchers. */
    trackerRules: new TrackerRulesWatcher(trackers.repo, log, () => coordinator.holds('dispatch')),
    slashCommands: createSlashCommands(ctx, feedback, slackApi, log),
    slackNotifier: new SlackNotifier(ctx, slackApi, log, config.publicUrl, () => coordinator.holds('dispatch')),
    mail: createMailService(ctx),
    /** Reporters' "fixed" mails: runs with the `dispatch` role (server.ts), like the webhook and Slack dispatchers. */
    mailer: new Mailer(ctx, log, { publicUrl: config.publicUrl, mayAct: () => coordinator.holds('dispatch') }),
  }
}
export type Services = ReturnType<typeof createServices>
