/** `fixloop serve`: parse flags, start, and stop cleanly on SIGTERM/SIGINT. */
import { ConfigError, loadConfig } from '../config'
import { startServer, STOP_BUDGET_MS } from '../server'

/** How long past the stop budget the process waits before it leaves regardless (still under 10 s). */
const STOP_BACKSTOP_EXTRA_MS = 1500
import { parseFlags } from './args'
import { createBlobStore } from '../storage/index'
import { adminFromEnv, setupLink } from '../modules/admins/bootstrap'
import { createContext } from '../context'
import { createAdminsService } from '../modules/admins/service'
import { createAuditLog } from '../modules/audit/index'
import { ensureDemoApp } from './demo'

export const SERVE_HELP = `Usage: fixloop serve [--host 127.0.0.1] [--port 8080] [--data-dir ./data] [--demo]
--demo: create (once) an Org "fixloop demo" with an App "Demo App", serve a page with the widget at
/demo, and print that URL and a new sk_ key to read the reports back (docs/widget.md). Each start
prints a new key and revokes the one the previous start printed.
Env: FIXLOOP_HOST, FIXLOOP_PORT, FIXLOOP_DATA_DIR (a flag wins over its env), and the other
FIXLOOP_* settings in the README's configuration table.`

export async function runServe(argv: string[]): Promise<void> {
  const { values } = parseFlags(argv, { host: { type: 'string' }, port: { type: 'string' }, demo: { type: 'boolean' } })
  if (values.help) {
    process.stdout.write(SERVE_HELP + '\n')
    return
  }
  const config = loadConfig({ host: values.host, port: values.port, dataDir: values['data-dir'] })
  // Refuse to start on a blob store that cannot work (missing bucket, wrong credentials), with a clear error.
  if (config.s3) await createBlobStore({ config, urlSigningKey: new Uint8Array(32) }).check()
  if ((config.adminEmail === undefined) !== (config.adminPasswordFile === undefined)) {
    throw new ConfigError('FIXLOOP_ADMIN_EMAIL and FIXLOOP_ADMIN_PASSWORD_FILE go together: set both or neither')
  }
  // The env admin exists before the port opens, so a client that sees /healthz can sign in with it.
  const boot = createContext(config)
  try {
    const created = await adminFromEnv(createAdminsService(boot.sqlite, boot.box, boot.clock), createAuditLog(boot.sqlite, boot.clock), {
      email: config.adminEmail,
      passwordFile: config.adminPasswordFile,
    })
    if (created) process.stdout.write(`fixloop: created admin ${created.email} from FIXLOOP_ADMIN_EMAIL\n`)
  } finally {
    boot.sqlite.close()
  }
  let demoKey: string | undefined
  const running = startServer(config, values.demo ? { demoPublicKey: () => demoKey } : {})
  if (values.demo) {
    const demo = ensureDemoApp(running)
    demoKey = demo.publicKey
    process.stdout.write(`Demo page: ${running.url}/demo\nDemo App ${demo.appId}; read its reports with: curl -H "Authorization: Bearer ${demo.apiKey}" ${running.url}/v1/feedback\n`)
    if (demo.revokedPrefixes.length > 0) {
      process.stdout.write(`The demo key printed by the previous start (${demo.revokedPrefixes.map((p) => `${p}…`).join(', ')}) is revoked: use the one above.\n`)
    }
  }
  const link = setupLink(createAdminsService(running.ctx.sqlite, running.ctx.box, running.ctx.clock), config.publicUrl ?? running.url)
  if (link) process.stdout.write(`fixloop: no admin yet. Open this single-use link within 30 minutes to create one:\n  ${link}\n`)
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
