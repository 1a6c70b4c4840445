#!/usr/bin/env bun
/**
 * The fixloop executable: parses the command and hands over. No logic lives here.
 */
// First: fixes the production mode before any library reads it.
import './production-mode'
import { ConfigError } from './config'
import { ApiError } from './core/errors'
import { UsageError } from './cli/args'
import { runServe, SERVE_HELP } from './cli/serve'
import { runTenantCommand } from './cli/tenants'
import { runBackup, runMigrate } from './cli/ops'
import { runAdminCommand } from './cli/admin'
import { VERSION } from './version'
import { runWebhookCommand } from './cli/webhooks'
import { runChatopsCommand } from './cli/chatops'

const HELP = `fixloop ${VERSION}: self-hosted feedback intake and triage

Usage: fixloop <command> [flags]

Commands:
  serve           run the HTTP API and the worker
  org             create or list Orgs
  key             create, list or revoke sk_ API keys
  app             create, update, list, rotate-secret or delete Apps
  admin           create dashboard admins, reset a password
  webhook         create, list, delete webhook endpoints; delivery log, redeliver, rotate, test
  chatops         connect Slack (fixloop chatops slack --help)
  migrate         apply database migrations
  backup          write an online backup of the database
  version         print the version

Every command takes --data-dir DIR (or FIXLOOP_DATA_DIR; default ./data), --json and --help.
${SERVE_HELP}
`

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv
  switch (command) {
    case 'serve':
      return runServe(rest)
    case 'org':
    case 'key':
    case 'app':
      return runTenantCommand(command, rest)
    case 'admin':
      return runAdminCommand(rest)
    case 'webhook':
      return runWebhookCommand(rest)
    case 'chatops':
      return runChatopsCommand(rest)
    case 'migrate':
      return runMigrate(rest)
    case 'backup':
      return runBackup(rest)
    case 'version':
    case '--version':
      process.stdout.write(VERSION + '\n')
      return
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(HELP)
      return
    default:
      throw new UsageError(`unknown command "${command}". Run "fixloop --help".`)
  }
}

main(process.argv.slice(2)).catch((e: unknown) => {
  // A 4xx ApiError (unknown org/app/key, a bad argument) is the operator's mistake, like bad usage.
  if (e instanceof ApiError && e.status < 500) {
    const d = (e.details as { reason?: string; issues?: { message: string }[] } | undefined) ?? {}
    const extra = d.reason ?? d.issues?.map((i) => i.message).join('; ')
    process.stderr.write(`fixloop: ${e.message} (${e.code}${extra ? `: ${extra}` : ''})\n`)
    process.exit(2)
  }
  if (e instanceof UsageError || e instanceof ConfigError) {
    process.stderr.write(`fixloop: ${e.message}\n`)
    process.exit(2)
  }
  process.stderr.write(`fixloop: ${e instanceof Error ? e.message : String(e)}\n`)
  process.exit(1)
})
