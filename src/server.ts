/**
 * `fixloop serve`: migrations are applied (in createContext) before the port opens; the services and
 * the worker are built once (src/services.ts); SIGTERM/SIGINT stop accepting, finish in-flight
 * requests, flush pending commits and release leases.
 */
import { ConfigError, type Config } from './config'
import { sandboxProblem } from './agent/sandbox'
import { createContext, type Context } from './context'
import { createApp } from './app'
import { Logger } from './core/logger'
import type { Clock } from './core/clock'
import type { Worker, WorkerOptions } from './worker/loop'
import type { AgentRunner } from './agent/runner'
import { createServices, type Services } from './services'
import { LIMITS } from './core/limits'
import { join } from 'node:path'
import { Checkpointer } from './db/checkpointer'
import type { WebhookDispatcher } from './modules/webhooks/dispatcher'
import { startRetention } from './modules/events/retention'
import type { EventHub } from './modules/events/hub'
import type { SlackNotifier } from './modules/chatops/notifier'

/** Bun's cap on a request body; fixloop's own limits (far lower) answer first with the envelope. */
const MAX_STREAMED_BODY_BYTES = 1024 * 1024 * 1024

export interface RunningServer {
  url: string
  port: number
  ctx: Context
  services: Services
  worker: Worker
  runner: AgentRunner
  hub: EventHub
  webhooks: WebhookDispatcher
  slack: SlackNotifier
  stop(): Promise<void>
}

export interface StartOptions {
  clock?: Clock
  log?: Logger
  worker?: Partial<WorkerOptions> & { autoStart?: boolean }
}

export function startServer(config: Readonly<Config>, options: StartOptions = {}): RunningServer {
  const log = options.log ?? new Logger(config.logLevel)
  // Agents are hostile: they never run without a working sandbox unless the operator said otherwise.
  const sandboxUnavailable = config.agentSandbox === 'bwrap' ? sandboxProblem() : null
  if (config.agentSandbox === 'off') log.warn('FIXLOOP_AGENT_SANDBOX=off: agents run unconfined, with the same rights as fixloop (unsafe)')
  const ctx = createContext(config, options.clock)
  const checkpointer = new Checkpointer(ctx.sqlite, join(config.dataDir, 'fixloop.db'), log)
  checkpointer.start()
  const services = createServices(ctx, log, options.worker, sandboxUnavailable)
  if (sandboxUnavailable) {
    // With repositories connected, agents would be asked to run: refuse to start. Without any, intake and
    // triage work; every agent run fails with this reason until bwrap works (connect-repo warns too).
    if (services.connections.count() > 0) {
      void checkpointer.stop()
      ctx.sqlite.close()
      throw new ConfigError(`${sandboxUnavailable}. Apps have repositories connected, so agents would run unconfined.`)
    }
    log.warn('agents cannot run until bubblewrap works (no App has a repository connected yet)', { reason: sandboxUnavailable })
  }
  const { runner, worker, committer } = services
  // Runs a crash or restart interrupted are failed (their reports can be queued again).
  const recovered = runner.recover()
  if (recovered > 0) log.warn('agent runs interrupted by a restart were failed', { count: recovered })
  const app = createApp(ctx, services, log)
  app.listen({
    hostname: config.host,
    port: config.port,
    // Far above every limit fixloop enforces itself (8 MB JSON, 15 MB uploads, both counted while the body
    // streams in): a body over Bun's own cap would get Bun's bare 413 instead of the spec's envelope.
    maxRequestBodySize: MAX_STREAMED_BODY_BYTES,
  })
  const server = app.server!
  let stopping: Promise<void> | undefined
  if (options.worker?.autoStart !== false) worker.start()
  const { hub, webhookDispatcher: webhooks, slackNotifier: slack } = services
  hub.start()
  webhooks.start(hub)
  slack.start(hub)
  const stopRetention = startRetention(ctx, log)
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${server.port}`
  log.info('fixloop listening', { url, dataDir: config.dataDir })

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
    stop() {
      stopping ??= (async () => {
        // Open event streams would hold the graceful stop below for its whole grace period.
        hub.stop()
        stopRetention()
        // Let in-flight requests finish, but do not wait forever on idle keep-alive connections.
        await Promise.race([server.stop(false), Bun.sleep(5000).then(() => server.stop(true))])
        committer.flush()
        await runner.stop()
        await webhooks.stop()
        await slack.stop()
        await worker.stop()
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
