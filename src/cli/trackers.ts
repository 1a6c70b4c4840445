/** `fixloop tracker …`: thin commands over the trackers service (the same rules as PUT /v1/apps/:id/tracker). */
import { loadConfig } from '../config'
import { domainServices } from '../runtime/domain'
import { closeContext, openContext } from '../runtime/open'
import { SEVERITY_CHOICES, trackerWebhookPath, type SeverityChoice, type TrackerInput, type TrackerView } from '../modules/trackers/service'
import { MAPPED_ACTIONS } from '../modules/trackers/mapping'
import { TRACKER_KINDS, type TrackerKind } from '../trackers/adapter'
import type { NewsAction } from '../modules/trackers/repo'
import { COMMON_FLAGS, output, parseFlags, parseIntFlag, UsageError , readInputFile } from './args'
import { didYouMean } from './suggest'

export const TRACKER_HELP = `Usage:
  fixloop tracker connect --app APP_ID --kind github|gitlab|gitea|jira|linear --project P
        [--api-url URL] [--account EMAIL] [--token-file PATH] [--webhook-secret-file PATH]
        [--state-map "name=resolved,Won't Fix=ignore,…"] [--min-duplicates N|off] [--on-awaiting-manual high,medium,low,unset]
        connects (or reconnects) the App's issue tracker; the token is checked with the tracker
        prints the connection and, on the first connect, the webhook secret (shown this once)
  fixloop tracker show --app APP_ID [--json]             the connection and its health (never a secret)
  fixloop tracker disconnect --app APP_ID [--json]       stops syncing; issue links stay on their reports
  fixloop tracker rotate-webhook-secret --app APP_ID     a new webhook secret, shown once
  fixloop tracker push --feedback FEEDBACK_ID [--json]   create the lead's issue (a job does it; idempotent)
The token is read from the first line of --token-file PATH (- for standard input), or from
FIXLOOP_TRACKER_TOKEN when no file is given, never from the command line (shell history); required on the first connect
and whenever --kind or --api-url changes (the stored token is only sent where it was given for), omitted otherwise
keeps the stored one. --webhook-secret-file PATH: a signing secret the tracker made (Linear's webhook form makes its
own), read the same way, replaces fixloop's. --project: owner/repo (github, gitea), group/project or id (gitlab), project key (jira), team
id (linear). --api-url: required for gitlab (…/api/v4), gitea (…/api/v1), jira (https://SITE.atlassian.net).
Tracker URLs must resolve to public addresses unless FIXLOOP_TRACKER_ALLOW_PRIVATE=1 (set it on "fixloop
serve" too). docs/trackers.md.
Flags: --data-dir DIR (or FIXLOOP_DATA_DIR, default ./data)`

const CLI = { actor: 'cli' } as const

const FLAGS = {
  app: { type: 'string' },
  feedback: { type: 'string' },
  kind: { type: 'string' },
  project: { type: 'string' },
  'api-url': { type: 'string' },
  account: { type: 'string' },
  'token-file': { type: 'string' },
  'webhook-secret-file': { type: 'string' },
  'state-map': { type: 'string' },
  'min-duplicates': { type: 'string' },
  'on-awaiting-manual': { type: 'string' },
} as const

const CONNECT_FLAGS = ['app', 'kind', 'project', 'api-url', 'account', 'token-file', 'webhook-secret-file', 'state-map', 'min-duplicates', 'on-awaiting-manual']
const COMMANDS: Record<string, string[]> = {
  connect: CONNECT_FLAGS,
  show: ['app'],
  disconnect: ['app'],
  'rotate-webhook-secret': ['app'],
  push: ['feedback'],
}

function need(value: string | undefined, what: string): string {
  if (value === undefined || value === '') throw new UsageError(`missing ${what}`)
  return value
}

/** The token: the first line of --token-file, else FIXLOOP_TRACKER_TOKEN, else none (keep the stored one). */
async function readToken(path: string | undefined): Promise<string | undefined> {
  if (path === undefined) return process.env.FIXLOOP_TRACKER_TOKEN?.trim() || undefined
  return readSecretFile(path, '--token-file')
}

/** The first line of a file (- for standard input), for a secret that must not be on the command line. */
async function readSecretFile(path: string, flag: string): Promise<string> {
  // "-": standard input (echo "$TOKEN" | fixloop tracker connect … --token-file -), read to its end.
  const text = await readInputFile(path, flag, { stdin: true })
  const value = text.split(/\r?\n/)[0].trim()
  if (!value) throw new UsageError(`${flag}: ${path} is empty`)
  return value
}

/** "Done=resolved,Won't Fix=ignore" → { Done: 'resolved', "Won't Fix": 'ignore' } */
export function parseStateMapFlag(value: string | undefined): Record<string, NewsAction> | undefined {
  if (value === undefined) return undefined
  const out: Record<string, NewsAction> = {}
  for (const part of value.split(',').map((p) => p.trim()).filter(Boolean)) {
    const eq = part.lastIndexOf('=')
    const name = part.slice(0, eq).trim()
    const action = part.slice(eq + 1).trim()
    if (eq <= 0 || !name || !(MAPPED_ACTIONS as readonly string[]).includes(action)) throw new UsageError(`--state-map: "${part}" must be NAME=${MAPPED_ACTIONS.join('|')}`)
    out[name] = action as NewsAction
  }
  return out
}

/**
 * The connection as the CLI prints it. The command does not know where the server is reached (its port,
 * its proxy): without FIXLOOP_PUBLIC_URL the webhook URL is unknown, so `webhookUrl` is null and
 * `webhookPath` with a hint says what to append it to (never a guessed http://127.0.0.1:8080 URL).
 */
export function cliTrackerView(appId: string, tracker: TrackerView, publicUrl: string | undefined): Record<string, unknown> {
  if (publicUrl) return { appId, ...tracker, webhookPath: trackerWebhookPath(appId) }
  return {
    appId,
    ...tracker,
    webhookUrl: null,
    webhookPath: trackerWebhookPath(appId),
    webhookUrlHint: "the server's public address followed by webhookPath; set FIXLOOP_PUBLIC_URL (as on the server) to have it printed",
  }
}

export async function runTrackerCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseFlags(argv, FLAGS)
  if (values.help) return void process.stdout.write(TRACKER_HELP + '\n')
  const sub = positionals[0]
  if (!sub) throw new UsageError(`missing command\n\n${TRACKER_HELP}`)
  const allowed = COMMANDS[sub]
  if (!allowed) throw new UsageError(`unknown command "fixloop tracker ${sub}".${didYouMean(sub, Object.keys(COMMANDS), 'tracker ')}\n\n${TRACKER_HELP}`)
  for (const flag of Object.keys(values)) if (!(flag in COMMON_FLAGS) && !allowed.includes(flag)) throw new UsageError(`"fixloop tracker ${sub}" does not take --${flag}`)
  if (positionals.length > 1) throw new UsageError(`unexpected argument "${positionals[1]}" for "fixloop tracker ${sub}"`)

  const ctx = await openContext(loadConfig({ dataDir: values['data-dir'] }), undefined, { existingOnly: sub === 'show' })
  try {
    const services = domainServices(ctx)
    const svc = services.trackers
    const base = `http://${ctx.config.host.includes(':') ? `[${ctx.config.host}]` : ctx.config.host}:${ctx.config.port}`
    const orgOf = (appId: string) => services.tenants.orgOfApp(appId)
    const json = values.json
    if (sub === 'push') {
      const feedbackId = need(values.feedback, '--feedback')
      const lead = await svc.repo.lead(feedbackId)
      if (!lead) throw new UsageError(`unknown feedback: ${feedbackId}`)
      const out = await svc.push(lead.org_id, feedbackId)
      return output({ feedbackId, created: out.created, ...out.trackerIssue }, json)
    }
    const appId = need(values.app, '--app')
    const orgId = await orgOf(appId)
    switch (sub) {
      case 'connect': {
        const kind = need(values.kind, '--kind')
        if (!(TRACKER_KINDS as readonly string[]).includes(kind)) throw new UsageError(`--kind must be one of ${TRACKER_KINDS.join(', ')}, got "${kind}"`)
        const min = values['min-duplicates']
        // Checked here so the refusal names the flag, not the API's field (rules.minDuplicates).
        // Seven digits reach 9999999: the range is held by value, not by the digit count alone.
        if (min !== undefined && min !== 'off' && !(/^[1-9]\d{0,6}$/.test(min) && Number(min) <= 1_000_000)) throw new UsageError(`--min-duplicates must be a whole number from 1 to 1000000, or off, got "${min}"`)
        const severities = values['on-awaiting-manual']?.split(',').map((s) => s.trim()).filter(Boolean)
        for (const s of severities ?? []) if (!(SEVERITY_CHOICES as readonly string[]).includes(s)) throw new UsageError(`--on-awaiting-manual takes ${SEVERITY_CHOICES.join(', ')}, got "${s}"`)
        const before = (await svc.get(orgId, appId, base)).tracker
        const token = await readToken(values['token-file'])
        // The service's refusal names the field; on a command line, say where the token comes from.
        if (token === undefined && !before) throw new UsageError('a token is required on the first connect: --token-file PATH (- for standard input), or FIXLOOP_TRACKER_TOKEN')
        if (values['token-file'] === '-' && values['webhook-secret-file'] === '-') throw new UsageError('--token-file and --webhook-secret-file cannot both read standard input')
        const webhookSecret = values['webhook-secret-file'] === undefined ? undefined : await readSecretFile(values['webhook-secret-file'], '--webhook-secret-file')
        const input: TrackerInput = {
          kind: kind as TrackerKind,
          project: need(values.project, '--project'),
          ...(values['api-url'] !== undefined ? { apiUrl: values['api-url'] } : {}),
          ...(values.account !== undefined ? { account: values.account } : {}),
          ...(token !== undefined ? { token } : {}),
          ...(webhookSecret !== undefined ? { webhookSecret } : {}),
          ...(values['state-map'] !== undefined ? { stateMap: parseStateMapFlag(values['state-map']) } : before ? { stateMap: before.stateMap } : {}),
          rules: {
            minDuplicates: min === undefined ? (before?.rules.minDuplicates ?? null) : min === 'off' ? null : parseIntFlag(min, 'min-duplicates')!,
            onAwaitingManual: severities ? (severities as SeverityChoice[]) : (before?.rules.onAwaitingManual ?? []),
          },
        }
        const out = await svc.connect(orgId, appId, input, base, CLI)
        return output({ ...cliTrackerView(appId, out.tracker, ctx.config.publicUrl), ...(out.webhookSecret ? { webhookSecret: out.webhookSecret } : {}) }, json)
      }
      case 'show': {
        const { tracker } = await svc.get(orgId, appId, base)
        if (!tracker) throw new UsageError(`app ${appId} has no tracker connected (fixloop tracker connect)`)
        return output(cliTrackerView(appId, tracker, ctx.config.publicUrl), json)
      }
      case 'disconnect':
        await svc.disconnect(orgId, appId, CLI)
        return output({ appId, disconnected: true }, json)
      case 'rotate-webhook-secret':
        return output({ appId, ...(await svc.rotateWebhookSecret(orgId, appId, CLI)) }, json)
    }
  } finally {
    await closeContext(ctx)
  }
}
