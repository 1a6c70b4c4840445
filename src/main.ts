#!/usr/bin/env bun
/**
 * The fixloop executable: parses the command and hands over. No logic lives here.
 */
// First: fixes the production mode before any library reads it.
import './production-mode'
import { ConfigError, loadConfig } from './config'
import { ApiError } from './core/errors'
import { UsageError } from './cli/args'
import { SERVE_HELP } from './cli/serve-help'
import { didYouMean } from './cli/suggest'
import { hoistGlobalFlags } from './cli/global-flags'
import { VERSION } from './version'
import { requireClusterSettings, refuseOnPostgres } from './cli/postgres-guards'
import { settingsHelp } from './core/settings'
import { exitQuietlyOnClosedOutput } from './cli/closed-output'
import { DB_FILE, dataDirsMadeByThisProcess, setDataDirNotices } from './db/data-dir'
import { rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { openRefusal } from './db/open-refusal'
import { unknownSettingWarnings } from './cli/unknown-settings'
import { setProcessRole } from './core/process-role'

const HELP = `fixloop ${VERSION}: self-hosted feedback intake and triage

Usage: fixloop [global flags] <command> [flags]

Commands:
  serve           run the HTTP API and the worker
  org             create or list Orgs
  key             create, list, rotate or revoke sk_ API keys
  app             create, update, list, rotate-secret or delete Apps; connect-repo, disconnect-repo, rotate-webhook-secret, smtp, smtp-test, triage-reset
  admin           create, list or remove dashboard admins, change their role, reset-password
  webhook         create, list, delete webhook endpoints; deliveries (the log), redeliver, rotate-secret, test, enable
  audit           export the audit log of an Org as JSON lines (fixloop audit export --org ORG_ID), or match an erasure (audit digest)
  feedback        triage near-duplicates (suggestions, merge, reject-suggestion), mark a lead fixed (resolve)
  chatops         connect Slack (fixloop chatops slack --help)
  tracker         connect an issue tracker (GitHub, GitLab, Gitea, Jira, Linear), show, disconnect, push a report, rotate-webhook-secret
  migrate         apply database migrations
  migrate-db      copy the data dir's SQLite into an empty PostgreSQL (--to postgres://…), verified
  backup          write one archive: database + uploaded files + manifest
  restore         restore such an archive into a data dir
  rekey           re-seal every stored secret under a new master key
  version         print the version (--json: {"version": "..."}); also -v, --version

Global flags (before or after the command): --data-dir DIR (or FIXLOOP_DATA_DIR; default ./data),
--json, --help. "fixloop <command> --help" shows a command's own flags.

${SERVE_HELP}
`

export const VERSION_HELP = `Usage: fixloop version [--json] [--data-dir DIR]   (also: fixloop -v, fixloop --version)
Prints the version; --json prints {"version": "..."}. --data-dir is accepted (like every command) and unused.`

/** `fixloop version`: takes the flags every command takes; the data dir is not read. */
function runVersion(argv: string[]): void {
  if (argv.includes('--help') || argv.includes('-h')) return void process.stdout.write(VERSION_HELP + '\n')
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--json' || a.startsWith('--data-dir=')) continue
    if (a === '--data-dir' && argv[i + 1] !== undefined) {
      i++
      continue
    }
    throw new UsageError(`"fixloop version" takes only --json (and --data-dir), got "${a}"`)
  }
  process.stdout.write(argv.includes('--json') ? JSON.stringify({ version: VERSION }) + '\n' : VERSION + '\n')
}

const COMMANDS = ['serve', 'org', 'key', 'app', 'admin', 'webhook', 'audit', 'feedback', 'chatops', 'tracker', 'migrate', 'migrate-db', 'backup', 'restore', 'rekey', 'version', 'help']

/**
 * Commands not (yet) run on PostgreSQL: refused with a reason while FIXLOOP_DATABASE_URL is set
 * (cli/postgres-mode.ts). Not migrate-db: it reads the SQLite on purpose and takes FIXLOOP_DATABASE_URL as its target.
 */
const SQLITE_COMMANDS = new Set(['backup', 'restore'])

async function main(argv: string[]): Promise<void> {
  // Before anything reads the environment: a mistyped setting would otherwise pass silently.
  for (const line of unknownSettingWarnings(process.env)) process.stderr.write(line + '\n')
  const [command, ...rest] = hoistGlobalFlags(argv)
  setProcessRole(command === 'serve' ? 'serve' : 'command')
  const asksHelp = rest.includes('--help') || rest.includes('-h')
  if (command && process.env.FIXLOOP_DATABASE_URL && !asksHelp) {
    if (SQLITE_COMMANDS.has(command)) refuseOnPostgres(command, loadConfig({}))
    if (command === 'serve') requireClusterSettings(loadConfig({}))
  }
  // Each command is imported when it runs: `--help`, `version` and every command load only what they use
  // (a CLI call paid ~120 ms for the whole server before; test/architecture.test.ts holds it).
  switch (command) {
    case 'serve':
      // Its help without the server's modules (~45 ms of loading for one screen of text).
      if (asksHelp) return void process.stdout.write(SERVE_HELP + '\n')
      return (await import('./cli/serve')).runServe(rest)
    case 'org':
    case 'key':
    case 'app':
      return (await import('./cli/tenants')).runTenantCommand(command, rest)
    case 'admin':
      return (await import('./cli/admin')).runAdminCommand(rest)
    case 'webhook':
      return (await import('./cli/webhooks')).runWebhookCommand(rest)
    case 'audit':
      return (await import('./cli/audit')).runAuditCommand(rest)
    case 'feedback':
      return (await import('./cli/feedback')).runFeedbackCommand(rest)
    case 'chatops':
      return (await import('./cli/chatops')).runChatopsCommand(rest)
    case 'tracker':
      return (await import('./cli/trackers')).runTrackerCommand(rest)
    case 'migrate':
      return (await import('./cli/ops')).runMigrate(rest)
    case 'migrate-db':
      return (await import('./cli/migrate-db')).runMigrateDb(rest)
    case 'backup':
      return (await import('./cli/ops')).runBackup(rest)
    case 'restore':
      return (await import('./cli/ops')).runRestore(rest)
    case 'rekey':
      return (await import('./cli/ops')).runRekey(rest)
    case 'version':
    case '--version':
    case '-v':
      return runVersion(rest)
    case 'help':
      // `fixloop help serve` is `fixloop serve --help`.
      if (rest[0] !== undefined && rest[0] !== 'help' && COMMANDS.includes(rest[0])) return main([rest[0], '--help'])
      // `fixloop help orgs`: a command that does not exist is said so (with the closest), not answered
      // with the whole help and exit 0 as if it were found. Flags (`help --data-dir D`) still get the help.
      if (rest[0] !== undefined && !rest[0].startsWith('-') && rest[0] !== 'help') {
        throw new UsageError(`unknown command "${rest[0]}".${didYouMean(rest[0], COMMANDS)} Run "fixloop --help".`)
      }
      process.stdout.write(HELP)
      return
    case undefined:
    case '--help':
    case '-h':
      process.stdout.write(HELP)
      return
    default:
      throw new UsageError(`unknown command "${command}".${didYouMean(command, COMMANDS)} Run "fixloop --help".`)
  }
}

// Every file fixloop creates is owner-only (the data dir's files set their own modes too; this also
// covers what libraries and SQLite create, and backup archives).
process.umask(0o077)
/**
 * Where the ids an unknown-id error wants are listed: "unknown org: acme" is most often a name given
 * where the id goes, and the operator is left to find the command that shows the ids.
 */
const LISTED_BY: Partial<Record<string, string>> = {
  org_not_found: 'the Org ids: fixloop org list',
  app_not_found: 'the App ids: fixloop app list --org ORG_ID',
  key_not_found: 'the key ids: fixloop key list --org ORG_ID',
}

exitQuietlyOnClosedOutput(process.argv[2] === 'serve')
setDataDirNotices((line) => process.stderr.write(line))
main(process.argv.slice(2)).catch((e: unknown) => {
  // A 4xx ApiError (unknown org/app/key, a bad argument) is the operator's mistake, like bad usage.
  if (e instanceof ApiError && e.status < 500) {
    const d = (e.details as { reason?: string; issues?: { message: string }[] } | undefined) ?? {}
    const extra = d.reason ?? d.issues?.map((i) => i.message).join('; ')
    const list = LISTED_BY[e.code]
    // The API's "The request body is not valid." means nothing on a command line: what was wrong leads.
    if (e.code === 'invalid_body' && extra) {
      process.stderr.write(`fixloop: ${extra} (invalid_body)\n`)
      leave(2)
    }
    process.stderr.write(`fixloop: ${e.message} (${e.code}${extra ? `: ${extra}` : ''})${list ? `; ${list}` : ''}\n`)
    leave(2)
  }
  if (e instanceof UsageError || e instanceof ConfigError) {
    process.stderr.write(`fixloop: ${e.message}\n`)
    leave(2)
  }
  // The file system refusing a path the operator chose (a data dir under a file, on a read-only disk, in a
  // folder fixloop's user may not write): theirs to fix, said with the path, without a stack.
  const refusal = fileSystemRefusal(e)
  if (refusal) {
    process.stderr.write(`fixloop: ${refusal}\n`)
    leave(2)
  }
  // SQLite refusing the data dir's database mid-command (a write on a full or read-only disk, a damaged
  // page): the same, with the database's path and what is wrong with its folder.
  const dbRefusal = openRefusal(join(resolve(dataDirArg(process.argv.slice(2)) ?? process.env.FIXLOOP_DATA_DIR ?? './data'), DB_FILE), e)
  if (dbRefusal) {
    process.stderr.write(`fixloop: ${dbRefusal.message}\n`)
    leave(2)
  }
  // fixloop's own fault: the stack (names are kept in the build) makes the report useful.
  process.stderr.write(`fixloop: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`)
  leave(1)
})

/**
 * Exits a failed command. It leaves no instance it just made (`key revoke` on a mistyped --data-dir): the
 * folders this process created for a data dir that did not exist are removed again.
 */
function leave(code: number): never {
  for (const dir of dataDirsMadeByThisProcess()) {
    try {
      rmSync(dir, { recursive: true, force: true })
      process.stderr.write(`fixloop: removed ${dir} again: this command created it and failed\n`)
    } catch {}
  }
  process.exit(code)
}

/** The last --data-dir given (as `--data-dir D` or `--data-dir=D`), wherever it stands. */
function dataDirArg(argv: string[]): string | undefined {
  let dir: string | undefined
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--data-dir' && argv[i + 1] !== undefined) dir = argv[++i]
    else if (argv[i].startsWith('--data-dir=')) dir = argv[i].slice('--data-dir='.length)
  }
  return dir
}

/** What the file system said about which path, for the errors an operator fixes; undefined for anything else. */
function fileSystemRefusal(e: unknown): string | undefined {
  const err = e as NodeJS.ErrnoException
  const why: Record<string, string> = {
    ENOTDIR: 'a part of the path is a file, not a folder',
    EROFS: 'the file system is read-only',
    EACCES: "fixloop's user may not write or enter there",
    EPERM: 'the operation is not permitted there',
    ENOSPC: 'the disk is full',
    EDQUOT: "the disk quota of fixloop's user is used up",
  }
  // A folder that cannot be made where the path points (`--data-dir /proc/x`).
  if (err.syscall === 'mkdir') why.ENOENT = 'the folder cannot be made there'
  if (!(e instanceof Error) || typeof err.path !== 'string' || err.code === undefined || !(err.code in why)) return undefined
  return `cannot use ${err.path}: ${why[err.code]} (${err.code}, ${err.syscall ?? 'file system'})`
}
