/**
 * The composition root: every service, the agent runner and the worker, built once per process from
 * the context. app.ts mounts routes over these services; server.ts starts and stops them. A service
 * never builds another service itself, so there is exactly one cluster index, one group committer
 * and one lifecycle (with its wake signal) per process.
 */
import { openFilesLimit, streamsWithin } from '../core/fd-limit'
import { createOidcRelyingParty } from '../modules/admins/oidc'
import { withSuggestedLeads } from '../modules/admin-api/inbox-repo'
import type { Runtime } from './open'
import { domainServices } from './domain'
import type { ModeOptions } from './mode'
import type { Logger } from '../core/logger'
import { CredentialDirectory } from '../auth/directory'
import type { AuthDeps } from '../http/auth'
import { createFeedbackService } from '../modules/feedback/service'
import { createIntake } from '../modules/feedback/intake'
import { createTriageService } from '../modules/feedback/triage-service'
import { createUploadsService } from '../modules/uploads/service'
import { createAgentRunsService } from '../modules/agent-runs/service'
import { createBlobStore } from '../blobs/index'
import { createAgentRunner, sanitizeReview, sanitizeReviewAuthor } from '../agent/runner'
import { agentUidsFor } from '../agent/agent-uid'
import { type JobStep } from '../worker/loop'
import { createReviewStep, createStartAgentStep } from '../worker/steps/start-agent'
import { createCollectUploadsStep, scheduleUploadsGc } from '../worker/steps/collect-uploads'
import { createScrubReplaysStep } from '../worker/steps/scrub-replays'
import { createPollPullRequestsStep, schedulePrPoll } from '../worker/steps/poll-pull-requests'
import { createPollTrackerIssuesStep, createPushTrackerIssueStep, scheduleTrackerPoll } from '../worker/steps/tracker-sync'
import { createTrackerSync } from '../modules/trackers/sync'
import { TrackerRulesWatcher } from '../modules/trackers/rules-watcher'
import { createPowService, powKeyOf } from '../abuse/pow-service'
import { SharedRepeatTracker } from '../abuse/shared-repeat-tracker'
import { createSpamIntake } from '../abuse/spam-intake'
import { type JobKind } from '../lifecycle/jobs'
import { createSessionStore } from '../modules/admins/sessions'
import { createKeyActivity } from '../modules/admins/key-activity'
import { createSpamSweep } from '../abuse/spam-retention'
import { createReportersService, erasureDigestKey } from '../modules/reporters/service'
import { reporterAddressHashes } from '../modules/mail/address'
import { createReportRetention } from '../modules/reporters/retention'
import { removalsToldToClustering } from '../modules/reporters/removal-news'
import { createConsoleService } from '../modules/admin-api/console'
import { createPasswordReentry } from '../modules/admin-api/password-reentry'
import type { AdminAuthDeps } from '../http/admin-auth'
import { EventHub } from '../modules/events/hub'
import { createEventsService } from '../modules/events/service'
import { WebhookDispatcher } from '../modules/webhooks/dispatcher'
import { createGitHooksService } from '../modules/git-hooks/service'
import { createSlashCommands } from '../modules/chatops/commands'
import { SlackApi } from '../modules/chatops/slack-api'
import { SlackNotifier } from '../modules/chatops/notifier'
import { Mailer } from '../modules/mail/mailer'
import type { CallShare } from '../core/time-share'

export interface ServiceOptions extends ModeOptions {
  sandboxUnavailable?: string | null
  /** Each App's and Org's share of the worker's time for tracker and git-host calls (tests; core/time-share.ts). */
  callShare?: CallShare
}

export async function createServices(ctx: Runtime, log: Logger, options: ServiceOptions = {}) {
  const { clock, config } = ctx
  const workerOptions = options.worker ?? {}
  // One store per process (src/runtime/open.ts): its lifecycle raises `wake`, its committer notes `turns`.
  const { lifecycle, wake, turns, committer } = ctx.store
  const directory = new CredentialDirectory(ctx.store.credentials, ctx.box)
  // Embedded or one node of a cluster (src/runtime/mode.ts): bound when the runtime was opened.
  const mode = await ctx.mode(log, options)
  const { coordinator, redis, limiters, throttles } = mode
  // The services the CLI builds the same way (domain.ts).
  const domain = domainServices(ctx)
  const tenants = domain.tenants
  // Proof of work (issue 27): challenges signed with a key derived from the master key; spent solutions in
  // the database, or in Redis (cluster mode) with the database as its fallback.
  const abuseRepo = ctx.store.abuse
  const pow = createPowService({ key: powKeyOf(ctx.urlSigningKey), clock, repo: abuseRepo, redis, log })

  // The spam signals known at intake, in memory (src/abuse/spam-intake.ts); the same flood meter as the proof of work.
  // In a cluster, repeated_text and link_flood count every node's addresses (shared-repeat-tracker.ts).
  const spamIntake = createSpamIntake({ clock, repo: abuseRepo, meter: pow.meter, repeats: redis ? new SharedRepeatTracker(redis, clock, log) : undefined })
  // The dashboard: admins, their sessions and the audit log; a session may call the sk_ routes too.
  const { admins, audit } = domain
  const sessions = createSessionStore(ctx.store.admins, clock)
  const reentry = createPasswordReentry({ admins, sessions, audit, throttles, sso: config.sso !== undefined, passwordSignIn: config.passwordSignIn })
  const adminAuth: AdminAuthDeps = { admins, sessions, publicUrl: config.publicUrl, trustProxy: config.trustProxy }
  const auth: AuthDeps = {
    directory,
    limiters,
    clock,
    trustProxy: config.trustProxy,
    admin: { ...adminAuth, orgExists: ctx.store.console.orgExists },
    keyUsed: createKeyActivity(ctx.store.admins, clock),
    reentry,
  }
  const blobs = createBlobStore(ctx)
  // Session replays are scrubbed by their own job, queued when a report with one is stored (scrub-replays.ts).
  const uploads = createUploadsService(ctx.store.uploads, blobs, clock, log, config.uploadGraceHours * 3600_000, {
    schedule: () => lifecycle.enqueue('replay_scrub', {}, clock.now()),
    masking: async (orgId, appId) => ((await ctx.store.apps.getForOrg(orgId, appId))?.replayMode === 'inputs' ? 'inputs' : 'masked'),
  }, { appHourlyBytes: config.uploadAppHourlyBytes, minFreeBytes: config.uploadMinFreeBytes })
  const connections = domain.connections
  const agentRunsRepo = ctx.store.agentRuns
  const runner = createAgentRunner(agentRunsRepo, connections, clock, log, {
    dataDir: config.dataDir,
    concurrency: config.agentConcurrency,
    passEnv: config.agentPassEnv,
    publicUrl: config.publicUrl,
    gitHostAllowPrivate: config.gitHostAllowPrivate,
    outboundTimeoutMs: config.outboundTimeoutMs,
    sandbox: { mode: config.agentSandbox, network: config.agentNetwork, readOnlyPaths: config.agentSandboxPaths, unavailable: options.sandboxUnavailable ?? null, agentUids: agentUidsFor(config.agentSandbox, process.getuid?.()) },
    workDir: config.workDir,
    nodeId: mode.nodeId,
    reviewIterationsMax: config.reviewIterationsMax,
    readAttachment: (appId, key, maxBytes) => uploads.readReferenced(appId, key, maxBytes),
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
  const trackers = domain.trackers
  const trackerSync = createTrackerSync({ trackers, clock, log, publicUrl: config.publicUrl, share: options.callShare })
  const trackerPollEveryMs = config.trackerPollMinutes * 60_000
  const ownSteps = {
    agent: createStartAgentStep(runner),
    review: createReviewStep(runner),
    uploads_gc: createCollectUploadsStep(uploads, lifecycle, clock),
    replay_scrub: createScrubReplaysStep(uploads, lifecycle, clock),
    pr_poll: createPollPullRequestsStep({ hooks: gitHooks.repo, connections, lifecycle, clock, log, everyMs: prPollEveryMs, gitHostAllowPrivate: config.gitHostAllowPrivate, outboundTimeoutMs: config.outboundTimeoutMs, share: options.callShare }),
    tracker_push: createPushTrackerIssueStep(trackerSync),
    tracker_poll: createPollTrackerIssuesStep({ sync: trackerSync, lifecycle, clock, everyMs: trackerPollEveryMs }),
  } satisfies Partial<Record<JobKind, JobStep>>
  // One watcher of the outbox for every stream, the webhook dispatcher and Slack in this process.
  const hub = new EventHub(ctx.store.events, { pollMs: mode.eventsPollMs, heartbeatMs: config.sseHeartbeatMs })
  const workers = mode.start({ ownSteps, hub, failRunsOf: (dead) => runner.failRunsOf(dead), spamMarksOf: spamIntake.marksOf }, log)
  const { worker, cluster } = workers
  void scheduleUploadsGc(ctx.store.jobs(), lifecycle, clock).catch((e) => log.error('uploads collection not scheduled', { error: e instanceof Error ? e.message : String(e) }))
  void schedulePrPoll(ctx.store.jobs(), lifecycle, clock, prPollEveryMs).catch((e) => log.error('pull request polling not scheduled', { error: e instanceof Error ? e.message : String(e) }))
  void scheduleTrackerPoll(ctx.store.jobs(), lifecycle, clock, trackerPollEveryMs).catch((e) => log.error('tracker polling not scheduled', { error: e instanceof Error ? e.message : String(e) }))

  const apps = ctx.store.apps
  // Erasures and the report retention tell the similarity index what they removed (removal-news.ts).
  const reportersRepo = removalsToldToClustering(ctx.store.reporters, cluster, log)
  // A spam decision by hand teaches this node's intake at once, and the other nodes of a cluster are told.
  const feedback = createFeedbackService(ctx, uploads, {
    forget: spamIntake.forget,
    confirmedSpam: (appId, text) => (spamIntake.confirmedSpam(appId, text), workers.spamDecided?.()),
    notSpam: (appId, text) => (spamIntake.notSpam(appId, text), workers.spamDecided?.()),
  })
  // POST /v1/feedback as one call: proof of work, the spam score, a heavy report's charge, the submission.
  const intake = createIntake({ feedback, pow, spam: spamIntake })
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
    intake,
    pow,
    spamIntake,
    /** The spam folder's retention (src/abuse/spam-retention.ts); server.ts runs it on the `maintenance` node. */
    spamSweep: createSpamSweep({ repo: abuseRepo, uploads, audit, clock, log, intake: turns }),
    /** A reporter's data: export and erase (src/modules/reporters). */
    reporters: createReportersService({ repo: reportersRepo, feedback, apps, uploads, audit, addressHashes: reporterAddressHashes(ctx.urlSigningKey), digestKey: erasureDigestKey(ctx.urlSigningKey), intake: turns }),
    /** The report retention (src/modules/reporters/retention.ts); server.ts runs it on the `maintenance` node. */
    reportRetention: createReportRetention({ repo: reportersRepo, uploads, audit, clock, log, intake: turns }),
    triage: createTriageService(ctx.store.feedback, cluster, apps),
    agentRuns: createAgentRunsService(agentRunsRepo),
    tenants,
    connections,
    admins,
    audit,
    adminAuth,
    /** Dashboard single sign-on (FIXLOOP_OIDC_*): the OpenID relying party, discovery and JWKS cached in it. */
    relyingParty: config.sso ? createOidcRelyingParty(config.sso, clock) : undefined,
    reentry,
    throttles,
    console: createConsoleService(ctx, { reentry, audit, tenants, connections }),
    inbox: withSuggestedLeads(ctx.store.inbox, ctx.store.feedback),
    runner,
    /** The workers and threads of the mode (src/runtime/mode.ts `ModeWorkers`): server.ts starts and stops them. */
    ...workers,
    coordinator,
    /** Cluster mode: this node's Redis link (shared rate limits; /readyz checks it). */
    redis,
    hub,
    events: createEventsService(ctx.store.events, hub, apps, config.sseStreamsPerKey, streamsWithin(openFilesLimit())),
    webhooks: domain.webhooks(),
    webhookDispatcher: new WebhookDispatcher(ctx, log, { mayAct: () => coordinator.holds('dispatch') }),
    chatops: domain.chatops,
    gitHooks,
    trackers,
    trackerSync,
    /** The push rules over the events: runs with the `dispatch` role (server.ts), like the dispatchers. */
    trackerRules: new TrackerRulesWatcher(trackers.repo, log, () => coordinator.holds('dispatch')),
    // A slash command's signature is spent like a proof-of-work solution (Redis in cluster mode, the database
    // otherwise): a captured request replayed within Slack's 5-minute window is refused on any node.
    slashCommands: createSlashCommands(ctx, feedback, slackApi, log, pow.spend),
    slackNotifier: new SlackNotifier(ctx, slackApi, log, config.publicUrl, () => coordinator.holds('dispatch')),
    mail: domain.mail,
    /** Reporters' "fixed" mails: runs with the `dispatch` role (server.ts), like the webhook and Slack dispatchers. */
    mailer: new Mailer(ctx, log, { publicUrl: config.publicUrl, mayAct: () => coordinator.holds('dispatch') }),
  }
}
export type Services = Awaited<ReturnType<typeof createServices>>
