/** `fixloop serve`: parse flags, start, and stop cleanly on SIGTERM/SIGINT. */
import { loadConfig } from '../config'
import { startServer } from '../server'
import { parseFlags } from './args'

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
  const running = startServer(config)
  const shutdown = async () => {
    await running.stop()
    process.exit(0)
  }
  process.once('SIGTERM', shutdown)
  process.once('SIGINT', shutdown)
}
