/** `fixloop serve`: parse flags, start, and stop cleanly on SIGTERM/SIGINT. */
import { loadConfig } from '../config'
import { startServer } from '../server'
import { parseFlags } from './args'
import { createBlobStore } from '../storage/index'

export const SERVE_HELP = `Usage: fixloop serve [--host 127.0.0.1] [--port 8080] [--data-dir ./data]
Env: FIXLOOP_HOST, FIXLOOP_PORT, FIXLOOP_DATA_DIR (a flag wins over its env), and the other
FIXLOOP_* settings in the README's configuration table.`

export async function runServe(argv: string[]): Promise<void> {
  const { values } = parseFlags(argv, { host: { type: 'string' }, port: { type: 'string' } })
  if (values.help) {
    process.stdout.write(SERVE_HELP + '\n')
    return
  }
  const config = loadConfig({ host: values.host, port: values.port, dataDir: values['data-dir'] })
  // Refuse to start on a blob store that cannot work (missing bucket, wrong credentials), with a clear error.
  if (config.s3) await createBlobStore({ config, urlSigningKey: new Uint8Array(32) }).check()
  const running = startServer(config)
  const shutdown = async () => {
    await running.stop()
    process.exit(0)
  }
  process.once('SIGTERM', shutdown)
  process.once('SIGINT', shutdown)
}
