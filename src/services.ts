/**
 * The composition root: every service, the agent runner and the worker, built once per process from
 * the context. app.ts mounts routes over these services; server.ts starts and stops them. A service
 * never builds another service itself, so there is exactly one cluster index, one group committer
 * and one lifecycle (with its wake signal) per process.
 */
import type { Context } from './context'
import type { Logger } from './core/logger'
import { GroupCommitter } from './db/group-commit'
import { CredentialDirectory } from './auth/directory'
import { createRateLimiters } from './http/rate-limit'
import type { AuthDeps } from './http/auth'
import { createLifecycle } from './lifecycle/lifecycle'
import { createWakeSignal } from './lifecycle/wake'
import { createAppsRepo } from './modules/apps/repo'
import { createFeedbackService } from './modules/feedback/service'
import { createTriageService } from './modules/feedback/triage-service'
import { createUploadsService } from './modules/uploads/service'
import { createTenantsService } from './modules/tenants/service'
import { createConnectionsService } from './modules/connections/service'
import { createAgentRunsService } from './modules/agent-runs/service'
import { createBlobStore } from './storage/index'
import { createClusterService } from './cluster/service'
import { DEFAULT_THRESHOLDS } from './cluster/decide'
import { createAgentRunner } from './agent/runner'
import { Worker, type JobStep, type WorkerOptions } from './worker/loop'
import { createJobsRepo } from './worker/jobs-repo'
import { createStartAgentStep } from './worker/steps/start-agent'
import { createBatchWindows } from './worker/steps/release-batch'
import { createCollectUploadsStep, scheduleUploadsGc } from './worker/steps/collect-uploads'
import { createProcessFeedbackStep } from './worker/steps/process-feedback'
import type { JobKind } from './lifecycle/jobs'
import { createAdminsService } from './modules/admins/service'
import { createSessionStore } from './modules/admins/sessions'
import { createKeyActivity } from './modules/admins/key-activity'
import { createAuditLog } from './modules/audit/index'
import { createConsoleService } from './modules/admin-api/console'
import { createInbox } from './modules/admin-api/inbox-repo'
import { createConsoleRepo } from './modules/admin-api/console-repo'
import type { AdminAuthDeps } from './http/admin-auth'
import { EventHub } from './modules/events/hub'
import { createEventsRepo } from './modules/events/repo'
import { createEventsService } from './modules/events/service'
import { createWebhooksService } from './modules/webhooks/service'
import { WebhookDispatcher } from './modules/webhooks/dispatcher'
import { createChatopsService } from './modules/chatops/service'
import { createSlashCommands } from './modules/chatops/commands'
import { SlackApi } from './modules/chatops/slack-api'
import { SlackNotifier } from './modules/chatops/notifier'

export function createServices(ctx: Context, log: Logger, workerOptions: Partial<WorkerOptions> = {}, sandboxUnavailable: string | null = null) {
  const { sqlite, clock, config } = ctx
  const wake = createWakeSignal()
  const lifecycle = createLifecycle(sqlite, clock, wake)
  const committer = new GroupCommitter(sqlite)
  const directory = new CredentialDirectory(sqlite, ctx.box)
  const limiters = createRateLimiters(clock, config.rateLimitMultiplier)
  const tenants = createTenantsService(ctx)
  // The dashboard: admins, their sessions and the audit log; a session may call the sk_ routes too.
  const admins = createAdminsService(sqlite, ctx.box, clock)
  const audit = createAuditLog(sqlite, clock)
  const adminAuth: AdminAuthDeps = { admins, sessions: createSessionStore(sqlite, clock), publicUrl: config.publicUrl, trustProxy: config.trustProxy }
  const auth: AuthDeps = {
    directory,
    limiters,
    clock,
    trustProxy: config.trustProxy,
    admin: { ...adminAuth, orgExists: createConsoleRepo(sqlite).orgExists },
    keyUsed: createKeyActivity(sqlite, clock),
  }
  const store = createBlobStore(ctx)
  const uploads = createUploadsService(sqlite, store, committer, clock, log, config.uploadGraceHours * 3600_000)
  const cluster = createClusterService(sqlite, clock, DEFAULT_THRESHOLDS, lifecycle)
  const connections = createConnectionsService(ctx, lifecycle)
  const runner = createAgentRunner(sqlite, connections, lifecycle, clock, log, {
    dataDir: config.dataDir,
    concurrency: config.agentConcurrency,
    passEnv: config.agentPassEnv,
    publicUrl: config.publicUrl,
    sandbox: { mode: config.agentSandbox, network: config.agentNetwork, readOnlyPaths: config.agentSandboxPaths, unavailable: sandboxUnavailable },
    workDir: config.workDir,
  })

  const jobs = createJobsRepo(sqlite)
  const batches = createBatchWindows(sqlite, clock, jobs, lifecycle)
  const steps: Record<JobKind, JobStep> = {
    process: createProcessFeedbackStep(sqlite, clock, { cluster, batches, lifecycle, finishJob: jobs.finish }),
    batch_release: batches.step,
    agent: createStartAgentStep(runner),
    uploads_gc: createCollectUploadsStep(uploads, lifecycle, clock),
  }
  // Submissions committed in the last 20 ms mean intake is busy: the worker paces itself; a full batch
  // in the last 50 ms means intake saturates the core: the worker then takes only a small share of it.
  const worker = new Worker(jobs, steps, clock, log, {
    busy: () => performance.now() - committer.lastCommitAt < 20,
    saturated: () => performance.now() - committer.lastFullCommitAt < 50,
    ...workerOptions,
  })
  wake.on(() => worker.wake())
  scheduleUploadsGc(jobs, lifecycle, clock)

  const apps = createAppsRepo(ctx.db)
  const feedback = createFeedbackService(ctx, committer, uploads, lifecycle)
  // One watcher of the outbox for every stream, the webhook dispatcher and Slack in this process.
  const hub = new EventHub(createEventsRepo(sqlite), { pollMs: 100, heartbeatMs: config.sseHeartbeatMs })
  const slackApi = new SlackApi(config.slackApiUrl)

  return {
    auth,
    directory,
    lifecycle,
    committer,
    store,
    uploads,
    apps,
    feedback,
    triage: createTriageService(ctx, cluster, lifecycle),
    agentRuns: createAgentRunsService(sqlite),
    tenants,
    connections,
    admins,
    audit,
    adminAuth,
    console: createConsoleService(ctx, { admins, audit, tenants, connections }),
    inbox: createInbox(sqlite),
    cluster,
    runner,
    worker,
    hub,
    events: createEventsService(createEventsRepo(sqlite), hub, apps),
    webhooks: createWebhooksService(ctx),
    webhookDispatcher: new WebhookDispatcher(ctx, log),
    chatops: createChatopsService(ctx),
    slashCommands: createSlashCommands(ctx, feedback, slackApi, log),
    slackNotifier: new SlackNotifier(ctx, slackApi, log, config.publicUrl),
  }
}
export type Services = ReturnType<typeof createServices>
