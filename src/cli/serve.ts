/** `fixloop serve`: parse flags, start, and stop cleanly on SIGTERM/SIGINT. */
import { Logger } from '../core/logger'
import { ApiError } from '../core/errors'
import { ConfigError, loadConfig, type Config } from '../config'
import { domainServices } from '../runtime/domain'
import { existsSync, rmSync } from 'node:fs'
import { dirname } from 'node:path'
import { StartupError } from '../core/startup-error'
import { startServer, STOP_BUDGET_MS } from '../runtime/server'
import { parseFlags, portOrDataDir, refuseArguments } from './args'
import { createBlobStore } from '../blobs/index'
import { adminFromEnv, setupLink, setupLinkBase } from '../modules/admins/bootstrap'
import { closeContext, openContext } from '../runtime/open'
import { ensureDemoApp } from './demo'

/** How long past the stop budget the process waits before it leaves regardless (still under 10 s). */
const STOP_BACKSTOP_EXTRA_MS = 1500

/** `--help` never reaches here: the dispatcher (main.ts) answers it without loading the server. */
export async function runServe(argv: string[]): Promise<void> {
  const { values, positionals } = parseFlags(argv, { host: { type: 'string' }, port: { type: 'string' }, demo: { type: 'boolean' } })
  refuseArguments(positionals, 'serve', portOrDataDir)
  const config = loadConfig({ host: values.host, port: values.port, dataDir: values['data-dir'] })
  // A start refused for a busy port leaves nothing behind: the port is tried before the data dir is touched.
  refuseBusyPort(config.host, config.port)
  const created = firstMissingDir(config.dataDir)
  try {
    await start(config, values.demo === true)
  } catch (e) {
    // A data dir (and missing parents) this start created but could not finish is removed: no half-made
    // instance stays behind.
    // Best effort: the error that stopped the start is the one to report, not the cleanup's (the folder may
    // never have been made: a read-only disk, a file in the way).
    if (created) {
      try {
        rmSync(created, { recursive: true, force: true })
      } catch {}
    }
    throw e
  }
}

/**
 * The admin rules' refusal of FIXLOOP_ADMIN_EMAIL or the first line of FIXLOOP_ADMIN_PASSWORD_FILE, as a
 * setting's error naming the variable (and the file): the rule alone ("the password must be 10 to 1024
 * characters") left the operator of a service to guess which password, since serve takes none on its
 * command line. Any other error is returned as it is.
 */
function adminEnvRefusal(e: unknown, config: Readonly<Config>): unknown {
  if (!(e instanceof ApiError) || e.code !== 'invalid_body') return e
  const issues = (e.details as { issues?: { path?: string; message: string }[] } | undefined)?.issues ?? []
  const named = issues.map((i) =>
    i.path === '/password' ? `FIXLOOP_ADMIN_PASSWORD_FILE (${config.adminPasswordFile}): ${i.message} (its first line is the password)` : `FIXLOOP_ADMIN_EMAIL ("${config.adminEmail}"): ${i.message}`,
  )
  return named.length > 0 ? new ConfigError(named.join('; ')) : e
}

async function start(config: Readonly<Config>, demo: boolean): Promise<void> {
  // Refuse to start on a blob store that cannot work (missing bucket, wrong credentials), with a clear error.
  if (config.s3) await createBlobStore({ config, urlSigningKey: new Uint8Array(32) }).check()
  if ((config.adminEmail === undefined) !== (config.adminPasswordFile === undefined)) {
    throw new ConfigError('FIXLOOP_ADMIN_EMAIL and FIXLOOP_ADMIN_PASSWORD_FILE go together: set both or neither')
  }
  if (config.adminPasswordFile !== undefined && !existsSync(config.adminPasswordFile)) {
    throw new ConfigError(`FIXLOOP_ADMIN_PASSWORD_FILE: ${config.adminPasswordFile} does not exist`)
  }
  // The env admin exists before the port opens, so a client that sees /healthz can sign in with it.
  const boot = await openContext(config)
  try {
    const bootServices = domainServices(boot)
    const created = await adminFromEnv(bootServices.admins, bootServices.audit, {
      email: config.adminEmail,
      passwordFile: config.adminPasswordFile,
    }).catch((e: unknown) => {
      throw adminEnvRefusal(e, config)
    })
    if (created) process.stdout.write(`fixloop: created admin ${created.email} from FIXLOOP_ADMIN_EMAIL\n`)
  } finally {
    await closeContext(boot)
  }
  // A background task's stray rejection (a query of a beat or a poll while the database is away) is logged,
  // never the end of the process: requests in flight and acknowledged work matter more than a crash's
  // restart, and every task retries at its next run.
  const log = new Logger(config.logLevel)
  process.on('unhandledRejection', (reason) => {
    log.error('a background task failed without handling its error; the server keeps running', { error: reason instanceof Error ? `${reason.message}\n${reason.stack ?? ''}` : String(reason) })
  })
  let demoKey: string | undefined
  const running = await startServer(config, demo ? { demoPublicKey: () => demoKey, log } : { log })
  if (demo) {
    const app = await ensureDemoApp(running)
    demoKey = app.publicKey
    process.stdout.write(`Demo page: ${running.url}/demo\nDemo App ${app.appId}; read its reports with: curl -H "Authorization: Bearer ${app.apiKey}" ${running.url}/v1/feedback\n`)
    if (app.revokedPrefixes.length > 0) {
      process.stdout.write(`The demo key printed by the previous start (${app.revokedPrefixes.map((p) => `${p}…`).join(', ')}) is revoked: use the one above.\n`)
    }
  }
  // The server is serving from here on: a step below that fails (the database gone a moment after the
  // port opened) is logged, never the end of the process. CI caught a node exiting on the setup link's
  // query when its PostgreSQL database was dropped right after /healthz answered.
  try {
    await printFirstAdminHint(config, running)
  } catch (e) {
    log.error('could not check for a first admin; the server keeps running', { error: e instanceof Error ? e.message : String(e) })
  }
  const shutdown = async (signal: NodeJS.Signals) => {
    // The stop is bounded phase by phase (server.ts, STOP_BUDGET_MS); this is the backstop if one hangs
    // (an agent that ignores its abort): leave anyway, before Docker's 10 s SIGKILL. Jobs in hand are
    // reclaimed at the next start; every acknowledged report is already committed.
    setTimeout(() => {
      process.stderr.write(`fixloop: stop took over ${STOP_BUDGET_MS + STOP_BACKSTOP_EXTRA_MS} ms; exiting now\n`)
      process.exit(1)
    }, STOP_BUDGET_MS + STOP_BACKSTOP_EXTRA_MS).unref()
    await running.stop(signal)
    process.exit(0)
  }
  process.once('SIGTERM', shutdown)
  process.once('SIGINT', shutdown)
}

/** With no admin yet, how to make one: the single-use setup link, or (password sign-in off) the SSO command. */
async function printFirstAdminHint(config: Readonly<Config>, running: Awaited<ReturnType<typeof startServer>>): Promise<void> {
  // With password sign-in off the setup link (a password admin) is refused: say what works instead.
  if (!config.passwordSignIn) {
    if ((await running.services.admins.count()) === 0) process.stdout.write('fixloop: no admin yet, and password sign-in is off: create one who signs in with SSO: fixloop admin create --email EMAIL --no-password\n')
    return
  }
  const { base, wildcard } = setupLinkBase(config.publicUrl, running.url)
  const link = await setupLink(running.services.admins, base)
  if (!link) return
  process.stdout.write(`fixloop: no admin yet. Open this single-use link within 30 minutes to create one:\n  ${link}\n`)
  if (wildcard) process.stdout.write(`  (this server listens on every address: from another machine, put the address it reaches this one at in place of ${new URL(base).hostname}, or set FIXLOOP_PUBLIC_URL)\n`)
}

/** The outermost directory of `path` that does not exist yet (what creating it would create), if any. */
function firstMissingDir(path: string): string | undefined {
  let missing: string | undefined
  for (let p = path; !existsSync(p); p = dirname(p)) missing = p
  return missing
}

/**
 * Refuses (exit 2) a port another process listens on, before anything is created. startServer still
 * handles the port being taken between this check and its own listen.
 */
function refuseBusyPort(host: string, port: number): void {
  // Port 0 (any free port) is never busy, but the host is still tried.
  try {
    Bun.listen({ hostname: host, port, socket: { data() {} } }).stop(true)
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    if (code === 'EADDRINUSE' || /in use/i.test((e as Error).message)) {
      throw new StartupError(`${host}:${port} is already in use (another fixloop or another program listens there); choose another --port or stop it. Nothing was created.`)
    }
    if (code === 'EACCES') throw new StartupError(`no permission to listen on ${host}:${port} (ports below 1024 need privileges)`)
    // An address this machine does not have, or no address at all (--host 999.1.1.1; Bun gives no code then):
    // the operator's to fix.
    throw new StartupError(`cannot listen on ${host}:${port}: the host (--host or FIXLOOP_HOST) must be an address of this machine (${code ?? (e as Error).message}). Nothing was created.`)
  }
}
