/**
 * `fixloop serve`: migrations are applied (in createContext) before the port opens; the worker starts;
 * SIGTERM/SIGINT stop accepting, finish in-flight requests, flush pending commits and release leases.
 */
import type { Config } from './config'
import { createContext, type Context } from './context'
import { createApp } from './app'
import { Logger } from './core/logger'
import type { Clock } from './core/clock'
import { Worker, type WorkerOptions } from './worker/loop'
import { createJobsRepo, type JobsRepo } from './worker/jobs-repo'
import type { JobStep } from './worker/loop'
import { createAgentRunner, type AgentRunner } from './agent/runner'
import { createConnectionsService } from './agent/connections'
import { AGENT_KIND, createStartAgentStep } from './worker/steps/start-agent'
import { createClusterService, type ClusterService } from './cluster/service'
import { BATCH_RELEASE_KIND, createBatchWindows } from './worker/steps/release-batch'
import { createCollectUploadsStep, scheduleUploadsGc, UPLOADS_GC_KIND } from './worker/steps/collect-uploads'
import { createProcessFeedbackStep } from './worker/steps/process-feedback'
import { LIMITS } from './core/limits'
import { join } from 'node:path'
import { Checkpointer } from './db/checkpointer'

/** Bun's cap on a request body; fixloop's own limits (far lower) answer first with the envelope. */
const MAX_STREAMED_BODY_BYTES = 1024 * 1024 * 1024

export interface RunningServer {
  url: string
  port: number
  ctx: Context
  worker: Worker
  runner: AgentRunner
  stop(): Promise<void>
}

export interface StartOptions {
  clock?: Clock
  log?: Logger
  worker?: Partial<WorkerOptions> & { autoStart?: boolean }
}

/**
 * The worker and its steps. `cluster` must be the instance the HTTP routes use (one in-memory index
 * per App); `extraSteps` adds steps that need other services.
 */
export function createWorker(
  ctx: Context,
  log: Logger,
  opts: Partial<WorkerOptions> = {},
  extraSteps: (jobs: JobsRepo) => Record<string, JobStep> = () => ({}),
  cluster: ClusterService = createClusterService(ctx.sqlite, ctx.clock),
): Worker {
  const jobs = createJobsRepo(ctx.sqlite)
  const batches = createBatchWindows(ctx.sqlite, ctx.clock)
  const steps: Record<string, JobStep> = {
    process: createProcessFeedbackStep(ctx.sqlite, ctx.clock, { cluster, batches }),
    [BATCH_RELEASE_KIND]: batches.step,
    ...extraSteps(jobs),
  }
  return new Worker(jobs, steps, ctx.clock, log, opts)
}

export function startServer(config: Readonly<Config>, options: StartOptions = {}): RunningServer {
  const log = options.log ?? new Logger(config.logLevel)
  const ctx = createContext(config, options.clock)
  const checkpointer = new Checkpointer(ctx.sqlite, join(config.dataDir, 'fixloop.db'), log)
  checkpointer.start()
  const runner = createAgentRunner(ctx.sqlite, createConnectionsService(ctx), ctx.clock, log, {
    dataDir: config.dataDir,
    concurrency: config.agentConcurrency,
    passEnv: config.agentPassEnv,
    publicUrl: config.publicUrl,
  })
  // Runs a crash or restart interrupted are failed (their reports can be queued again).
  const recovered = runner.recover()
  if (recovered > 0) log.warn('agent runs interrupted by a restart were failed', { count: recovered })
  let worker: Worker | undefined
  const { app, committer, uploads, cluster } = createApp({ ctx, log, onNewWork: () => worker?.wake() })
  worker = createWorker(
    ctx,
    log,
    // Submissions committed in the last 20 ms mean intake is busy: the worker paces itself.
    { busy: () => performance.now() - committer.lastCommitAt < 20, ...options.worker },
    (jobs) => {
      scheduleUploadsGc(jobs, ctx.clock)
      return { [UPLOADS_GC_KIND]: createCollectUploadsStep(uploads, jobs, ctx.clock), [AGENT_KIND]: createStartAgentStep(runner) }
    },
    cluster,
  )
  const theWorker = worker
  app.listen({
    hostname: config.host,
    port: config.port,
    // Far above every limit fixloop enforces itself (8 MB JSON, 15 MB uploads, both counted while the body
    // streams in): a body over Bun's own cap would get Bun's bare 413 instead of the spec's envelope.
    maxRequestBodySize: MAX_STREAMED_BODY_BYTES,
  })
  const server = app.server!
  let stopping: Promise<void> | undefined
  if (options.worker?.autoStart !== false) theWorker.start()
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${server.port}`
  log.info('fixloop listening', { url, dataDir: config.dataDir })

  return {
    url,
    port: server.port!,
    ctx,
    worker: theWorker,
    runner,
    stop() {
      stopping ??= (async () => {
        // Let in-flight requests finish, but do not wait forever on idle keep-alive connections.
        await Promise.race([server.stop(false), Bun.sleep(5000).then(() => server.stop(true))])
        committer.flush()
        await runner.stop()
        await theWorker.stop()
        await checkpointer.stop()
        try {
          ctx.sqlite.run('PRAGMA wal_checkpoint(TRUNCATE)')
        } catch {
          // A reader elsewhere may hold the WAL; the next start checkpoints it.
        }
        ctx.sqlite.close()
        log.info('fixloop stopped')
        log.flush()
      })()
      return stopping
    },
  }
}
