/**
 * `fixloop org|key|app …`: thin commands over the tenants and connections services (the same ones the
 * admin dashboard calls). A bare App or key id is resolved to its Org first; services take the Org.
 */
import { loadConfig } from '../config'
import { domainServices } from '../runtime/domain'
import { closeContext, openContext } from '../runtime/open'
import { type AppSettings } from '../modules/tenants/service'
import { isReplayMode, PROCESSING_MODES, REPLAY_MODES, REPLAY_SECONDS_MAX, REPLAY_SECONDS_MIN, type ProcessingMode } from '../modules/apps/values'
import { AGENT_PROVIDERS, HOST_KINDS, PR_MODES, type ConnectionInput } from '../modules/connections/service'
import { isProofOfWorkLevel, PROOF_OF_WORK_LEVELS } from '../abuse/difficulty'
import { COMMON_FLAGS, namedByFlag, output, parseBoolFlag, parseFlags, parseGlobList, parseIntFlag, parseList, UsageError , readInputFile } from './args'
import { didYouMean } from './suggest'
import { TLS_MODES } from '../modules/mail/repo'

export const TENANT_HELP: Record<string, string> = {
  org: `Usage:
  fixloop org create --name NAME [--json]     create an Org; prints {"id","name"}
  fixloop org list [--json]                   list Orgs
Flags: --data-dir DIR (or FIXLOOP_DATA_DIR, default ./data)`,
  key: `Usage:
  fixloop key create --org ORG_ID [--name N] [--json]   create an sk_ API key; the key is printed once
  fixloop key list --org ORG_ID [--json]                list keys (prefix only, never the key)
  fixloop key rotate KEY_ID [--json]                    a new key with the same name; the old one is revoked
  fixloop key revoke KEY_ID [--json]                    revoke a key; refused at once by a running server
Flags: --data-dir DIR (or FIXLOOP_DATA_DIR, default ./data)`,
  app: `Usage:
  fixloop app create --org ORG_ID --name NAME [settings] [--json]   prints the App plus "signingSecret" (hex)
  fixloop app update APP_ID [settings] [--json]                      prints the App
  fixloop app list --org ORG_ID [--json]
  fixloop app rotate-secret APP_ID [--json]     new signing secret; every outstanding user token fails at once
  fixloop app delete APP_ID [--json]            the public key stops working (401 unknown_app)
  fixloop app connect-repo APP_ID --git-url URL [repository settings] [--json]
  fixloop app disconnect-repo APP_ID [--json]
  fixloop app rotate-webhook-secret APP_ID [--json]   new git-host webhook secret, printed once (docs/agents.md)
  fixloop app smtp APP_ID --host HOST --port N --tls none|starttls|tls --from ADDRESS [--user U --password-file PATH] [--json]
  fixloop app smtp APP_ID --clear [--json]     remove the SMTP settings (no more reporter mails)
  fixloop app smtp APP_ID [--json]             show them (the password never: "passwordSet")
  fixloop app smtp-test APP_ID --to ADDRESS [--json]   send a test mail through them
  fixloop app triage-reset APP_ID [--json]     forget what the App's merge bars learned from triage decisions
        (deletes them; audited); prints the counts removed and the bars now (docs/triage.md)
SMTP settings (smtp; reporters who asked are mailed when their report is resolved, docs/email.md):
  --host HOST  --port N (usually 25, 465 or 587)  --tls none|starttls|tls  --from "Name <noreply@example.com>"
  --user USER  --password-file PATH     the password is the file's first line, stored encrypted, never shown;
                                        without --password-file a stored password is kept, unless
                                        --host, --port or --tls changes (then it is required again)
  a private, loopback or link-local host (a local relay) needs FIXLOOP_SMTP_ALLOW_PRIVATE=1 on serve and here
Settings:
  --name NAME  --slug SLUG  --description TEXT
  --public-submission true|false        default true
  --allowed-origins https://a.example,https://b.example   default none (any origin)
  --processing-mode manual|auto_pr      default manual
  --batch true|false                    default false
  --batch-window-hours N                default 24 (1-720)
  --proof-of-work off|normal|high       default off; public-mode submissions must solve a challenge first
                                        (the widget does it; docs/widget.md "Abuse defence"); recommended: normal
  --spam-events true|false              default false: reports classified as spam emit no events (webhooks, Slack)
  --spam-retention-days N               default 30 (0-3650; 0 keeps spam forever): reports in the spam folder longer
                                        than N days are deleted with their attachments
  --retention-days N                    default 0 (0-3650; 0 keeps reports forever): reports older than N days are
                                        deleted with their attachments and blobs (docs/operations.md "Retention")
  --replay off|masked|inputs            default off; session replay: the widget keeps the last N seconds of the page
                                        and sends them with a report (masked: all text and input values masked,
                                        media blocked; inputs: input values masked); docs/api.md "Session replay"
  --replay-seconds N                    default 60 (10-300): the seconds the widget keeps
Repository settings (connect-repo; the token is read from a file, never from the command line):
  --git-url URL                 https://host/owner/repo.git, git@host:owner/repo.git or a local path
  --base-branch NAME            default main
  --host github|gitea|gitlab|none   where to open the pull/merge request (none, the default: push a branch only)
  --host-api-url URL            default https://api.github.com (github.com), https://HOST/api/v3 (GitHub Enterprise), https://HOST/api/v1 (gitea), https://HOST/api/v4 (gitlab);
                                a link-local or metadata address is refused; a private one too when "fixloop serve" runs with FIXLOOP_GIT_HOST_ALLOW_PRIVATE=0
  --host-repo OWNER/NAME        the repository on the host, when the git URL's path differs (a mirror)
  --host-token-file PATH        access token (stored encrypted, never shown)
  --agent claude-code|codex|aider|command   default claude-code
  --agent-command "CMD"         with --agent command; {task_file} {result_file} {model} are substituted
  --model NAME                  passed to the agent
  --timeout-seconds N           per run, default 900
  --pr-mode ready|draft|branch  default ready (branch: push only)
  --verify-command "CMD"        run after the agent (your tests or linter); a failure fails the run
  --max-files N  --max-lines N  guardrail limits, default 20 files, 1000 lines
  --deny-paths "glob,glob"      extra paths the agent may not touch (CI, secrets and keys always are);
                                Bun.Glob syntax ({a,b}, [ab], **); repeat the flag or pass a JSON list
  --runs-per-day N              default 20
  --max-cost-usd-per-month N    default 50
Flags: --data-dir DIR (or FIXLOOP_DATA_DIR, default ./data)`,
}

const APP_FLAGS = {
  org: { type: 'string' },
  name: { type: 'string' },
  slug: { type: 'string' },
  description: { type: 'string' },
  'public-submission': { type: 'string' },
  'allowed-origins': { type: 'string' },
  'processing-mode': { type: 'string' },
  batch: { type: 'string' },
  'batch-window-hours': { type: 'string' },
  'proof-of-work': { type: 'string' },
  'spam-events': { type: 'string' },
  'spam-retention-days': { type: 'string' },
  'retention-days': { type: 'string' },
  replay: { type: 'string' },
  'replay-seconds': { type: 'string' },
  'git-url': { type: 'string' },
  'base-branch': { type: 'string' },
  host: { type: 'string' },
  'host-api-url': { type: 'string' },
  'host-repo': { type: 'string' },
  'host-token-file': { type: 'string' },
  agent: { type: 'string' },
  'agent-command': { type: 'string' },
  model: { type: 'string' },
  'timeout-seconds': { type: 'string' },
  'pr-mode': { type: 'string' },
  'verify-command': { type: 'string' },
  'max-files': { type: 'string' },
  'max-lines': { type: 'string' },
  'deny-paths': { type: 'string', multiple: true },
  'runs-per-day': { type: 'string' },
  'max-cost-usd-per-month': { type: 'string' },
  port: { type: 'string' },
  tls: { type: 'string' },
  user: { type: 'string' },
  'password-file': { type: 'string' },
  from: { type: 'string' },
  clear: { type: 'boolean' },
  to: { type: 'string' },
} as const

const SMTP_FLAGS = ['host', 'port', 'tls', 'user', 'password-file', 'from', 'clear']

const REPO_FLAGS = [
  'git-url', 'base-branch', 'host', 'host-api-url', 'host-repo', 'host-token-file', 'agent', 'agent-command', 'model', 'timeout-seconds',
  'pr-mode', 'verify-command', 'max-files', 'max-lines', 'deny-paths', 'runs-per-day', 'max-cost-usd-per-month',
]

function oneOfFlag<T extends string>(value: string | undefined, flag: string, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined
  if (!(allowed as readonly string[]).includes(value)) throw new UsageError(`--${flag} must be one of ${allowed.join(', ')}, got "${value}"`)
  return value as T
}

function numberFlag(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined
  if (!/^\d+(\.\d+)?$/.test(value)) throw new UsageError(`--${flag} must be a positive number, got "${value}"`)
  return Number(value)
}

async function readToken(path: string | undefined): Promise<string | undefined> {
  if (path === undefined) return undefined
  const token = (await readInputFile(path, '--host-token-file')).trim()
  if (!token) throw new UsageError(`--host-token-file: ${path} is empty`)
  return token
}

/** The first line of a secret file (an SMTP password), never from the command line. */
async function readSecretLine(path: string, flag: string): Promise<string> {
  const line = (await readInputFile(path, `--${flag}`)).split(/\r?\n/)[0]
  if (!line) throw new UsageError(`--${flag}: ${path} is empty`)
  return line
}

async function connectionFrom(v: Record<string, string | string[] | boolean | undefined>): Promise<ConnectionInput> {
  const s = (k: string) => v[k] as string | undefined
  return {
    gitUrl: need(s('git-url'), '--git-url'),
    baseBranch: s('base-branch'),
    host: oneOfFlag(s('host'), 'host', HOST_KINDS),
    hostApiUrl: s('host-api-url'),
    hostRepo: s('host-repo'),
    hostToken: await readToken(s('host-token-file')),
    agent: oneOfFlag(s('agent'), 'agent', AGENT_PROVIDERS),
    agentCommand: s('agent-command'),
    model: s('model'),
    timeoutSeconds: parseIntFlag(s('timeout-seconds'), 'timeout-seconds'),
    prMode: oneOfFlag(s('pr-mode'), 'pr-mode', PR_MODES),
    verifyCommand: s('verify-command'),
    maxFiles: parseIntFlag(s('max-files'), 'max-files'),
    maxLines: parseIntFlag(s('max-lines'), 'max-lines'),
    denyPaths: parseGlobList(v['deny-paths'] as string[] | undefined, 'deny-paths'),
    runsPerDay: parseIntFlag(s('runs-per-day'), 'runs-per-day'),
    maxCostUsdPerMonth: numberFlag(s('max-cost-usd-per-month'), 'max-cost-usd-per-month'),
  }
}

function settingsFrom(v: Record<string, string | string[] | boolean | undefined>): AppSettings {
  const mode = v['processing-mode'] as string | undefined
  if (mode !== undefined && !(PROCESSING_MODES as readonly string[]).includes(mode)) {
    throw new UsageError(`--processing-mode must be one of ${PROCESSING_MODES.join(', ')}, got "${mode}"`)
  }
  const pow = v['proof-of-work'] as string | undefined
  if (pow !== undefined && !isProofOfWorkLevel(pow)) throw new UsageError(`--proof-of-work must be one of ${PROOF_OF_WORK_LEVELS.join(', ')}, got "${pow}"`)
  const replayMode = v.replay as string | undefined
  if (replayMode !== undefined && !isReplayMode(replayMode)) throw new UsageError(`--replay must be one of ${REPLAY_MODES.join(', ')}, got "${replayMode}"`)
  const replaySeconds = parseIntFlag(v['replay-seconds'] as string | undefined, 'replay-seconds')
  if (replaySeconds !== undefined && (replaySeconds < REPLAY_SECONDS_MIN || replaySeconds > REPLAY_SECONDS_MAX)) {
    throw new UsageError(`--replay-seconds must be an integer from ${REPLAY_SECONDS_MIN} to ${REPLAY_SECONDS_MAX}, got "${replaySeconds}"`)
  }
  return {
    name: v.name as string | undefined,
    slug: v.slug as string | undefined,
    description: v.description as string | undefined,
    publicSubmissionEnabled: parseBoolFlag(v['public-submission'] as string | undefined, 'public-submission'),
    allowedOrigins: parseList(v['allowed-origins'] as string | undefined),
    processingMode: mode as ProcessingMode | undefined,
    batchEnabled: parseBoolFlag(v.batch as string | undefined, 'batch'),
    batchWindowHours: parseIntFlag(v['batch-window-hours'] as string | undefined, 'batch-window-hours'),
    proofOfWork: pow,
    spamEvents: parseBoolFlag(v['spam-events'] as string | undefined, 'spam-events'),
    spamRetentionDays: parseIntFlag(v['spam-retention-days'] as string | undefined, 'spam-retention-days'),
    retentionDays: parseIntFlag(v['retention-days'] as string | undefined, 'retention-days'),
    replay: replayMode === undefined && replaySeconds === undefined ? undefined : { mode: replayMode, seconds: replaySeconds },
  }
}

const SETTINGS_FLAGS = ['name', 'slug', 'description', 'public-submission', 'allowed-origins', 'processing-mode', 'batch', 'batch-window-hours', 'proof-of-work', 'spam-events', 'spam-retention-days', 'retention-days', 'replay', 'replay-seconds']

/**
 * The flags each command accepts and whether it takes an id argument. The groups share one parser,
 * so without this `org create --slug x` would be silently accepted.
 */
const COMMANDS: Record<string, { flags: string[]; takesId: boolean }> = {
  'org create': { flags: ['name'], takesId: false },
  'org list': { flags: [], takesId: false },
  'key create': { flags: ['org', 'name'], takesId: false },
  'key list': { flags: ['org'], takesId: false },
  'key rotate': { flags: [], takesId: true },
  'key revoke': { flags: [], takesId: true },
  'app create': { flags: ['org', ...SETTINGS_FLAGS], takesId: false },
  'app update': { flags: SETTINGS_FLAGS, takesId: true },
  'app list': { flags: ['org'], takesId: false },
  'app rotate-secret': { flags: [], takesId: true },
  'app delete': { flags: [], takesId: true },
  'app connect-repo': { flags: REPO_FLAGS, takesId: true },
  'app disconnect-repo': { flags: [], takesId: true },
  'app rotate-webhook-secret': { flags: [], takesId: true },
  'app smtp': { flags: SMTP_FLAGS, takesId: true },
  'app smtp-test': { flags: ['to'], takesId: true },
  'app triage-reset': { flags: [], takesId: true },
}

/** The help of one command: its usage lines from the group's help, plus the settings sections it takes. */
export function commandHelp(group: string, sub: string): string {
  const text = TENANT_HELP[group]
  const usage = text.split('\n').filter((l) => l.startsWith(`  fixloop ${group} ${sub} `) || l === `  fixloop ${group} ${sub}`)
  const section = (title: string) => {
    const start = text.indexOf(`\n${title}`)
    if (start < 0) return ''
    const end = text.indexOf('\n', text.indexOf('\n', start + 1) + 1)
    const rest = text.slice(start + 1)
    const stop = rest.search(/\n(Settings|Repository settings|SMTP settings|Flags)[^\n]*:/)
    return stop < 0 || end < 0 ? rest : rest.slice(0, stop)
  }
  const parts = ['Usage:', ...usage]
  if (group === 'app' && (sub === 'create' || sub === 'update')) parts.push(section('Settings:'))
  if (group === 'app' && sub === 'connect-repo') parts.push(section('Repository settings'))
  if (group === 'app' && sub === 'smtp') parts.push(section('SMTP settings'))
  parts.push('Flags: --data-dir DIR (or FIXLOOP_DATA_DIR, default ./data), --json, --help')
  return parts.join('\n')
}

function checkUsage(cmd: string, values: Record<string, unknown>, positionals: string[], help: string): void {
  const spec = COMMANDS[cmd]
  if (!spec) {
    const [group, sub] = cmd.split(' ')
    const subs = Object.keys(COMMANDS).filter((c) => c.startsWith(group + ' ')).map((c) => c.slice(group.length + 1))
    throw new UsageError(`unknown command "fixloop ${cmd}".${didYouMean(sub, subs, `${group} `)}\n\n${help}`)
  }
  for (const flag of Object.keys(values)) {
    if (!(flag in COMMON_FLAGS) && !spec.flags.includes(flag)) {
      throw new UsageError(`"fixloop ${cmd}" does not take --${flag}.${didYouMean(flag, [...spec.flags, ...Object.keys(COMMON_FLAGS)], '--')}`)
    }
  }
  const extra = positionals.slice(spec.takesId ? 2 : 1)
  if (extra.length > 0) {
    // `fixloop org create Acme`: the name a newcomer typed where --name goes.
    const asName = spec.flags.includes('name') && values.name === undefined ? ` (a name goes as --name "${extra[0]}")` : ''
    throw new UsageError(`unexpected argument "${extra[0]}" for "fixloop ${cmd}"${asName}`)
  }
}

/** The flag each field of the SMTP settings comes from (the mail service's issue paths). */
const SMTP_FIELD_FLAGS: Record<string, string> = { '/host': '--host', '/port': '--port', '/tls': '--tls', '/from': '--from', '/user': '--user', '/password': '--password-file', '/to': '--to' }

/** Where the value a missing flag wants comes from, when another command lists it. */
function missingHint(message: string): string {
  if (message === 'missing --org') return ' (the Org ids: fixloop org list)'
  if (message === 'missing APP_ID argument') return ' (the App ids: fixloop app list --org ORG_ID)'
  if (message === 'missing KEY_ID argument') return ' (the key ids: fixloop key list --org ORG_ID)'
  return ''
}

function need<T>(value: T | undefined, what: string): T {
  if (value === undefined || value === '') throw new UsageError(`missing ${what}`)
  return value
}

export async function runTenantCommand(group: 'org' | 'key' | 'app', argv: string[]): Promise<void> {
  const { values, positionals } = parseFlags(argv, APP_FLAGS)
  const sub = positionals[0]
  if (values.help) {
    const known = sub !== undefined && COMMANDS[`${group} ${sub}`] !== undefined
    return void process.stdout.write((known ? commandHelp(group, sub) : TENANT_HELP[group]) + '\n')
  }
  // A missing subcommand is a usage error: the help goes to stderr, stdout stays empty.
  if (!sub) throw new UsageError(`missing command\n\n${TENANT_HELP[group]}`)
  checkUsage(`${group} ${sub}`, values, positionals, TENANT_HELP[group])
  // Read-only commands never create a data dir, a database or a master key: a typo is an error.
  // `app smtp APP_ID` with no SMTP flag only shows the settings.
  const readOnly = sub === 'list' || (`${group} ${sub}` === 'app smtp' && SMTP_FLAGS.every((f) => values[f as keyof typeof values] === undefined))
  const ctx = await openContext(loadConfig({ dataDir: values['data-dir'] }), undefined, { existingOnly: readOnly })
  try {
    const services = domainServices(ctx)
    const svc = services.tenants
    const json = values.json
    const target = () => need(positionals[1], `${group.toUpperCase()}_ID argument`)
    const appTarget = async () => {
      const appId = target()
      return { orgId: await svc.orgOfApp(appId), appId }
    }
    // Run jobs are queued in the database; a running server's worker picks them up at its next poll.
    const connections = () => services.connections
    /** Operator actions go to the audit log as the dashboard's do, in the change's own transaction. */
    const cli = { actor: 'cli' }
    const settingNames = (s: AppSettings) => Object.keys(s).filter((k) => s[k as keyof typeof s] !== undefined)
    const cmd = `${group} ${sub}`
    switch (cmd) {
      case 'org create': {
        const org = await svc.createOrg(need(values.name, '--name'), cli)
        return output({ id: org.id, name: org.name }, json)
      }
      case 'org list':
        return output({ data: await svc.listOrgs() }, json)
      case 'key create': {
        // CONTRACT.md: exactly {"id", "key"}.
        const key = await svc.createKey(need(values.org, '--org'), values.name ?? '', cli)
        process.stderr.write('This key is shown once: store it now. fixloop keeps only its hash; a lost key is replaced with "fixloop key rotate".\n')
        return output({ id: key.id, key: key.key }, json)
      }
      case 'key rotate': {
        const keyId = target()
        const old = (await svc.listKeys(await svc.orgOfKey(keyId))).find((k) => k.id === keyId)
        if (old?.revokedAt) throw new UsageError(`key ${keyId} is already revoked; create a new one with "fixloop key create"`)
        const fresh = await svc.rotateKey(keyId, cli)
        process.stderr.write(`This key is shown once: store it now. The old key ${keyId} is revoked.\n`)
        return output({ id: fresh.id, key: fresh.key, revoked: keyId }, json)
      }
      case 'key list':
        return output({ data: await svc.listKeys(need(values.org, '--org')) }, json)
      case 'key revoke': {
        const keyId = target()
        return output(await svc.revokeKey(await svc.orgOfKey(keyId), keyId, cli), json)
      }
      case 'app create': {
        const s = settingsFrom(values)
        return output(await svc.createApp(need(values.org, '--org'), { ...s, name: need(s.name, '--name') }, cli), json)
      }
      case 'app update': {
        const settings = settingsFrom(values)
        const { orgId, appId } = await appTarget()
        return output(await svc.updateApp(orgId, appId, settings, cli), json)
      }
      case 'app list':
        return output({ data: await svc.listApps(need(values.org, '--org')) }, json)
      case 'app rotate-secret': {
        const { orgId, appId } = await appTarget()
        return output(await svc.rotateSecret(orgId, appId, cli), json)
      }
      case 'app delete': {
        const { orgId, appId } = await appTarget()
        return output(await svc.deleteApp(orgId, appId, cli), json)
      }
      case 'app connect-repo': {
        const input = await connectionFrom(values)
        const { orgId, appId } = await appTarget()
        return output(await connections().connect(orgId, appId, input, cli), json)
      }
      case 'app disconnect-repo': {
        const { orgId, appId } = await appTarget()
        return output(await connections().disconnect(orgId, appId, cli), json)
      }
      case 'app rotate-webhook-secret': {
        const { orgId, appId } = await appTarget()
        return output(await connections().rotateWebhookSecret(orgId, appId, cli), json)
      }
      case 'app smtp': {
        const { orgId, appId } = await appTarget()
        const mail = services.mail
        const given = SMTP_FLAGS.filter((f) => values[f as keyof typeof values] !== undefined)
        if (values.clear) {
          if (given.length > 1) throw new UsageError('--clear takes no other SMTP flag')
          return output(await mail.deleteSmtp(orgId, appId, cli), json)
        }
        if (given.length === 0) return output(await mail.getSmtp(orgId, appId), json)
        const password = values['password-file'] === undefined ? undefined : await readSecretLine(values['password-file'], 'password-file')
        return output(
          await mail.putSmtp(
            orgId,
            appId,
            {
              host: need(values.host, '--host'),
              port: need(parseIntFlag(values.port, 'port'), '--port'),
              tls: need(oneOfFlag(values.tls, 'tls', TLS_MODES), '--tls'),
              user: values.user ?? null,
              password,
              from: need(values.from, '--from'),
            },
            cli,
          ),
          json,
        )
      }
      case 'app triage-reset': {
        const { orgId, appId } = await appTarget()
        // Loaded here: the triage and clustering modules are the one command's that needs them.
        const { cliTriageService } = await import('./feedback')
        const { removed, state } = await (await cliTriageService(ctx)).triage.resetLearning(orgId, appId, cli)
        return output({ removed, bars: state.bars, learned: state.learned }, json)
      }
      case 'app smtp-test': {
        const { orgId, appId } = await appTarget()
        const r = await services.mail.testSmtp(orgId, appId, need(values.to, '--to'))
        output(r, json)
        if (!r.sent) process.exitCode = 1
        return
      }
      default:
        throw new UsageError(`unknown command "fixloop ${cmd}"\n\n${TENANT_HELP[group]}`)
    }
  } catch (e) {
    // A missing flag or id is a newcomer's first mistake: "missing --org" alone says neither where the
    // id comes from nor what else the command takes, so the command's own usage follows it.
    if (e instanceof UsageError && e.message.startsWith('missing ')) throw new UsageError(`${e.message}${missingHint(e.message)}\n\n${commandHelp(group, sub)}`)
    if (group === 'app' && (sub === 'smtp' || sub === 'smtp-test')) throw namedByFlag(e, SMTP_FIELD_FLAGS)
    throw e
  } finally {
    await closeContext(ctx)
  }
}
