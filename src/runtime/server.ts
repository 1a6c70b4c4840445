/**
 * `fixloop serve`: migrations are applied (in createContext) before the port opens; the services and
 * the worker are built once (src/runtime/services.ts); SIGTERM/SIGINT stop accepting, finish in-flight
 * requests, flush pending commits and release leases.
 */
import { ConfigError, type Config } from '../config'
import { sandboxProblem } from '../agent/sandbox'
import { AGENT_UID_RANGE, agentUidsFor, NOBODY } from '../agent/agent-uid'
import { closeContext, openContext, type Runtime } from './open'
import { checkRedis } from '../db/redis-check'
import { createApp } from '../app'
import { Logger } from '../core/logger'
import type { Clock } from '../core/clock'
import type { CallShare } from '../core/time-share'
import type { Worker, WorkerOptions } from '../worker/loop'
import type { AgentRunner } from '../agent/runner'
import { createServices, type Services } from './services'
import { lockDataDir } from '../db/data-dir-lock'
import { StartupError } from '../core/startup-error'
import { removeRestoreLeftovers } from '../db/backup/restore'
import { openFilesLimit, streamsWithin } from '../core/fd-limit'
import { createReadiness, nodeCheck, trackersCheck } from '../modules/health/readiness'
import { createMetrics } from '../modules/metrics/service'
import { VERSION } from '../version'
import { prepareDataDir } from '../db/data-dir'
import { META } from '../db/meta-keys'
import type { WebhookDispatcher } from '../modules/webhooks/dispatcher'
import { startRetention } from '../modules/events/retention'
import { startSpamSweep } from '../abuse/spam-retention'
import { startReportRetention } from '../modules/reporters/retention'
import type { EventHub } from '../modules/events/hub'
import type { SlackNotifier } from '../modules/chatops/notifier'

/** Below this open-files limit the start-up says so (connections, streams and files share it). */
const LOW_OPEN_FILES = 1024

/** Bun's cap on a request body; fixloop's own limits (far lower) answer first with the envelope. */
const MAX_STREAMED_BODY_BYTES = 1024 * 1024 * 1024

export interface RunningServer {
  url: string
  port: number
  ctx: Runtime
  services: Services
  worker: Worker
  runner: AgentRunner
  hub: EventHub
  webhooks: WebhookDispatcher
  slack: SlackNotifier
  /** `signal`: the signal that asked for the stop, logged when it arrives. */
  stop(signal?: string): Promise<void>
}

/**
 * A stop (SIGTERM) ends within this long, under Docker's default 10 s stop timeout: requests get up to
 * HTTP_GRACE_MS to finish, the workers up to WORKERS_STOP_MS (at the same time), the final WAL checkpoint
 * what is left. docs/operations.md, "Stopping".
 */
export const STOP_BUDGET_MS = 6000
const HTTP_GRACE_MS = 4000
const WORKERS_STOP_MS = 4000

export interface StartOptions {
  clock?: Clock
  log?: Logger
  /**
   * `processingThread`: sanitize and cluster on their own thread (the default, except with an injected
   * clock or `autoStart: false`: tests that drive the worker by hand keep everything on this thread).
   */
  worker?: Partial<WorkerOptions> & { autoStart?: boolean; processingThread?: boolean; batchBudgetMs?: number }
  /** `serve --demo`: serves /demo, a page with the widget mounted for this App public key. */
  demoPublicKey?: () => string | undefined
  /**
   * Each App's and Org's share of the worker's time for tracker and git-host calls (default 10 s and 20 s a
   * minute, core/time-share.ts). Tests that shorten FIXLOOP_OUTBOUND_TIMEOUT shorten it in proportion.
   */
  callShare?: CallShare
}

/**
 * Starts fixloop on the data dir's SQLite, or on PostgreSQL when FIXLOOP_DATABASE_URL is set (then Redis
 * is checked too; the data dir holds only this node's local files).
 */
export async function startServer(config: Readonly<Config>, options: StartOptions = {}): Promise<RunningServer> {
  const log = options.log ?? new Logger(config.logLevel)
  // Agents are hostile: they never run without a working sandbox unless the operator said otherwise.
  const sandboxUnavailable = config.agentSandbox === 'bwrap' ? await sandboxProblem() : null
  if (config.agentSandbox === 'off') log.warn('FIXLOOP_AGENT_SANDBOX=off: agents run unconfined, with the same rights as fixloop (unsafe)')
  const agentUids = agentUidsFor(config.agentSandbox, process.getuid?.())
  if (agentUids === 'nobody')
    log.warn(`agents run as nobody (${NOBODY}), shared between runs: this user namespace does not map the uids fixloop leases one per run from (${AGENT_UID_RANGE.first}-${AGENT_UID_RANGE.first + AGENT_UID_RANGE.count - 1}); see docs/agents.md`)
  if (agentUids === 'own' && config.agentSandbox === 'bwrap' && process.getuid?.() === 0)
    log.warn(`agents run as fixloop's own uid, root of this user namespace: it maps neither the uids fixloop leases one per run from nor nobody (${NOBODY}); see docs/agents.md`)
  // One server per data dir: taken before anything else touches the database, held until stop().
  // On PostgreSQL the data dir only holds this node's local files: no "new instance" to announce there.
  prepareDataDir(config.dataDir, { announce: !config.databaseUrl })
  const lock = lockDataDir(config.dataDir, 'starting another one on it')
  for (const dir of removeRestoreLeftovers(config.dataDir)) log.warn('removed the staging folder of a restore that was killed', { path: dir })
  const openFiles = openFilesLimit()
  if (openFiles !== undefined && openFiles < LOW_OPEN_FILES) {
    log.warn(`the open-files limit is ${openFiles}: at most ${streamsWithin(openFiles)} event streams will be open at once, and connections past the limit wait unanswered; raise it (LimitNOFILE=, ulimit -n, docker --ulimit nofile=)`, { openFilesLimit: openFiles })
  }
  let ctx: Runtime
  try {
    if (config.databaseUrl && config.redisUrl) await checkRedis(config.redisUrl)
    ctx = await openContext(config, options.clock)
  } catch (e) {
    lock.release()
    throw e
  }
  // The CLI reads the server's webhook rule to explain a refusal and warn about a target the server would refuse.
  await ctx.store.meta.write(META.webhookAllowPrivate, config.webhookAllowPrivate ? '1' : '0')
  // The embedded store's write-ahead log (none on PostgreSQL): copied back while the server runs.
  const checkpointer = ctx.keepWal?.(log)
  checkpointer?.start()
  const closeStorage = () => void closeContext(ctx)
  const { autoStart: _autoStart, processingThread: threadOption, batchBudgetMs, ...workerOptions } = options.worker ?? {}
  const processingThread = threadOption ?? (options.clock === undefined && options.worker?.autoStart !== false)
  const services = await createServices(ctx, log, { worker: workerOptions, processingThread, sandboxUnavailable, injectedClock: options.clock !== undefined, batchBudgetMs, callShare: options.callShare })
  if (sandboxUnavailable) {
    // With repositories connected, agents would be asked to run: refuse to start. Without any, intake and
    // triage work; every agent run fails with this reason until bwrap works (connect-repo warns too).
    if ((await services.connections.count()) > 0) {
      void checkpointer?.stop()
      closeStorage()
      lock.release()
      throw new ConfigError(`${sandboxUnavailable}. Apps have repositories connected, so agents would run unconfined.`)
    }
    log.warn('agents cannot run until bubblewrap works (no App has a repository connected yet)', { reason: sandboxUnavailable })
  }
  const { runner, worker, committer, coordinator, processingWorker } = services
  // Cluster mode: register this node and take what roles it can before any work starts (src/nodes/).
  await coordinator.start()
  // Runs a crash or restart interrupted are failed (their reports can be queued again), before the port opens.
  const recovered = await runner.recover()
  if (recovered > 0) log.warn('agent runs interrupted by a restart were failed', { count: recovered })
  // The write-ahead log is SQLite's; PostgreSQL's is the server's own business (pg_stat_wal).
  const metrics = createMetrics(ctx.store.metrics, ctx.clock, () => coordinator.holds('maintenance'), checkpointer?.walFile)
  // The mode's own gauges (cluster mode: which node answers the scrape, and what it does).
  metrics.registry.add(() => services.nodeMetrics())
  metrics.registry.add(() => [
    { name: 'fixloop_reports_expired_total', help: "Reports this process deleted past their App's retentionDays (with their attachments).", type: 'counter', samples: [{ value: services.reportRetention.deletedTotal() }] },
    { name: 'fixloop_spam_deleted_total', help: 'Reports this process deleted from spam folders past their App\'s spamRetentionDays.', type: 'counter', samples: [{ value: services.spamSweep.deletedTotal() }] },
  ])
  // Issue-tracker connections whose last call failed, by kind (docs/trackers.md "Failures").
  metrics.registry.add(async () => {
    // A database-wide figure: read by the maintenance holder only, as the other database-wide gauges.
    if (!coordinator.holds('maintenance')) return []
    const byKind = await services.trackers.failingByKind()
    return [{ name: 'fixloop_tracker_connections_failing', help: 'Issue-tracker connections whose last call failed, by tracker kind.', type: 'gauge', samples: [...byKind].map(([kind, value]) => ({ labels: { kind }, value })) }]
  })
  const readiness = createReadiness({
    database: () => ctx.store.databaseCheck(),
    dataDir: config.dataDir,
    minFreeBytes: config.minFreeDiskBytes,
    worker: () => {
      if (options.worker?.autoStart === false) return { ok: true, reason: 'worker not started (test mode)' }
      const own = worker.health()
      return own.ok && services.processingThread ? services.processingThread.health() : own
    },
    checkpointer: checkpointer ? () => checkpointer.health() : undefined,
    // createContext refused to start on a mismatch; reaching here means the key matched its check value.
    masterKey: () => ({ ok: true }),
    redis: services.redis ? () => services.redis!.check() : undefined,
    node: services.nodeCheck,
    trackers: async () => {
      let failing, byKind
      try {
        ;[failing, byKind] = await Promise.all([services.trackers.failing(), services.trackers.failingByKind()])
      } catch {
        // Not known while the database cannot be read: the `database` check says so; no second failure.
        return { ok: true, reason: 'not known: the database could not be read' }
      }
      return trackersCheck(failing, [...byKind.values()].reduce((a, n) => a + n, 0))
    },
  })
  const app = createApp(ctx, services, log, { readiness, metrics }, options.demoPublicKey)
  try {
    app.listen({
      hostname: config.host,
      port: config.port,
      // Elysia turns SO_REUSEPORT on: a second server on a busy port would then "listen" too and the kernel
      // would split connections between two databases. Off, a busy port is an error.
      reusePort: false,
      // Far above every limit fixloop enforces itself (8 MB JSON, 15 MB uploads, both counted while the body
      // streams in): a body over Bun's own cap would get Bun's bare 413 instead of the spec's envelope.
      maxRequestBodySize: MAX_STREAMED_BODY_BYTES,
    })
  } catch (e) {
    void checkpointer?.stop()
    await coordinator.stop()
    closeStorage()
    lock.release()
    const code = (e as NodeJS.ErrnoException).code
    if (code === 'EADDRINUSE' || /in use/i.test((e as Error).message)) {
      throw new StartupError(`${config.host}:${config.port} is already in use (another fixloop or another program listens there); choose another --port or stop it`)
    }
    if (code === 'EACCES') throw new StartupError(`no permission to listen on ${config.host}:${config.port} (ports below 1024 need privileges)`)
    throw e
  }
  const server = app.server!
  let stopping: Promise<void> | undefined
  const { hub, webhookDispatcher: webhooks, slackNotifier: slack } = services
  hub.start()
  services.wakeBus?.start()
  for (const f of services.followers ?? []) f.start?.()
  const workersOn = options.worker?.autoStart !== false
  if (workersOn) {
    worker.start()
    services.processingThread?.start()
    services.sanitizerThread?.start()
    services.sanitizeAnywhere?.start()
  }
  // The roles' work follows the roles (every role, always, in the embedded mode): sanitizing and clustering
  // with `processing`, deliveries with `dispatch`; a role lost mid-way stops its work at once.
  let roleWork = Promise.resolve()
  const stopRoles = coordinator.onRoleChange((role, held) => {
    // One change after another; a change that fails (the database away while a worker hands its leases
    // back) is logged and must not stop the changes after it.
    roleWork = roleWork.then(async () => {
      if (role === 'dispatch') {
        if (held) {
          webhooks.start(hub)
          slack.start(hub)
          services.mailer.start(hub)
          services.trackerRules.start(hub)
        } else await Promise.all([webhooks.stop(), slack.stop(), services.mailer.stop(), services.trackerRules.stop()])
      }
    }).catch((e) => log.error('a role change was not carried out in full', { role, held, error: e instanceof Error ? e.message : String(e) }))
  })
  // Cluster mode: the processing worker follows this node's partitions of Apps (src/nodes/partitions.ts).
  let partitionWork = Promise.resolve()
  const stopPartitions = services.partitions?.onChange((held) => {
    partitionWork = partitionWork
      .then(async () => {
        if (processingWorker && workersOn) await (held.length > 0 ? processingWorker.start() : processingWorker.stop())
      })
      .catch((e) => log.error('a partition change was not carried out in full', { error: e instanceof Error ? e.message : String(e) }))
  })
  if (workersOn) await services.partitions?.start()
  const stopRetention = startRetention(ctx, log, () => coordinator.holds('maintenance'))
  const stopSpamSweep = startSpamSweep(services.spamSweep, log, () => coordinator.holds('maintenance'))
  const stopReportRetention = startReportRetention(services.reportRetention, log, () => coordinator.holds('maintenance'))
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${server.port}`
  const base = config.publicUrl ?? url
  services.mailer.listeningAt(url)
  const mailLinks = await services.mail.publicUrlWarning(config.publicUrl, url).catch(() => null)
  if (mailLinks) log.warn(mailLinks.message, { apps: mailLinks.apps })
  log.info(`fixloop ${VERSION} listening on ${url} (database: ${ctx.where}; blobs: ${config.s3 ? `s3 bucket ${config.s3.bucket}` : 'embedded'}; docs: ${base}/docs)`, {
    url,
    version: VERSION,
    storage: config.s3 ? 's3' : 'embedded',
    database: config.databaseUrl ? 'postgresql' : 'sqlite',
    docs: `${base}/docs`,
    dataDir: config.dataDir,
  })

  return {
    url,
    port: server.port!,
    ctx,
    services,
    worker,
    runner,
    hub,
    webhooks,
    slack,
    stop(signal?: string) {
      if (!stopping) log.info(signal ? `${signal} received: stopping` : 'stopping', { signal })
      stopping ??= (async () => {
        const t0 = performance.now()
        const left = () => STOP_BUDGET_MS - (performance.now() - t0)
        const ms: Record<string, number> = {}
        const phase = async <T>(name: string, work: () => T | Promise<T>): Promise<T> => {
          const t = performance.now()
          const result = await work()
          ms[name] = Math.round(performance.now() - t)
          return result
        }
        // Open event streams would hold the graceful stop below for its whole grace period.
        hub.stop()
        stopRetention()
        stopSpamSweep()
        stopReportRetention()
        // Stop claiming at once: the workers finish the job in hand while requests drain (the threads still
        // answer the clustering calls of requests in flight).
        stopRoles()
        stopPartitions?.()
        const ownWorkerStopped = Promise.all([worker.stop(), roleWork.then(() => processingWorker?.stop()), partitionWork.then(() => processingWorker?.stop()), services.sanitizeAnywhere?.stop(), services.partitions?.stop()])
        services.sanitizerThread?.stopClaiming()
        services.processingThread?.stopClaiming()
        // Let in-flight requests finish, but do not wait forever on idle keep-alive connections.
        await phase('http', () => Promise.race([server.stop(false), Bun.sleep(HTTP_GRACE_MS).then(() => server.stop(true))]))
        committer.flush()
        await phase('agents', () => runner.stop())
        await phase('dispatchers', () => Promise.all([webhooks.stop(), slack.stop(), services.mailer.stop(), services.trackerRules.stop()]))
        // The jobs in hand have had WORKERS_STOP_MS since the signal, whatever the drain took (then 250 ms to close).
        const threadsLeft = Math.max(250, WORKERS_STOP_MS - (performance.now() - t0))
        const threadsDone = await phase('workers', async () => {
          const [, ...threads] = await Promise.all([
            ownWorkerStopped,
            services.sanitizerThread?.stop(threadsLeft) ?? true,
            services.processingThread?.stop(threadsLeft) ?? true,
          ])
          return threads.every(Boolean)
        })
        // The last TRUNCATE empties the WAL (values scrubbed since the last one leave the disk). It gets what
        // is left of the budget; cut off (a WAL of gigabytes after a long burst), it is finished at the next
        // start: a checkpoint is crash-safe and every commit is in the WAL either way.
        // A thread cut off may still hold the write lock: no final checkpoint then (it would wait for it).
        // What it is given goes in the `fixloop stopped` line: with a reader holding the WAL the checkpoint gives
        // up after 1 s whatever it was given, so its time alone does not show an allowance past the budget.
        const checkpointGivenMs = checkpointer && threadsDone ? Math.round(Math.max(500, left())) : 0
        const checkpointed = (await phase('checkpoint', () => checkpointer?.stop(checkpointGivenMs) ?? true)) && threadsDone
        if (!checkpointer) {
          // PostgreSQL: nothing to checkpoint; every commit is the server's.
        } else if (checkpointed) {
          checkpointer.truncate()
        } else {
          log.warn('stopping within the time limit: the WAL is left for the next start to checkpoint', { threadsFinished: threadsDone })
        }
        for (const f of services.followers ?? []) f.stop()
        services.wakeBus?.stop()
        services.stopEventSignal?.()
        services.redis?.close()
        // Last: the roles' leases go at once, so another node takes them without waiting for them to run out.
        await coordinator.stop()
        await closeContext(ctx)
        lock.release()
        log.info('fixloop stopped', { ms: { total: Math.round(performance.now() - t0), ...ms }, ...(checkpointer ? { checkpointGivenMs } : {}) })
        log.flush()
      })()
      return stopping
    },
  }
}
