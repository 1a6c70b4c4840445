/** `fixloop chatops slack …`: thin commands over the chat-ops service (the same rules as the API). */
import { loadConfig } from '../config'
import { domainServices } from '../runtime/domain'
import { closeContext, openContext } from '../runtime/open'
import { COMMON_FLAGS, namedByFlag, output, parseFlags, parseList, UsageError , readInputFile } from './args'

export const CHATOPS_HELP = `Usage:
  fixloop chatops slack connect --org ORG_ID [--app APP_ID] --bot-token-file F --signing-secret-file G
        --channel C [--events a,b] [--json]     post report progress to a Slack channel (secrets read from files)
  fixloop chatops slack list --org ORG_ID [--json]
  fixloop chatops slack disconnect CONNECTION_ID [--json]
  fixloop chatops slack allow-user --org ORG_ID --team T0123 --user U0123 [--json]
        lets that Slack user queue and archive through /fixloop (status is open to the workspace)
  fixloop chatops slack deny-user --org ORG_ID --team T0123 --user U0123 [--json]
  fixloop chatops slack users --org ORG_ID [--json]
See docs/events.md for the Slack app setup.
Flags: --data-dir DIR (or FIXLOOP_DATA_DIR, default ./data)`

/** Operator changes go to the audit log as actor "cli", like the org/app/key commands'. */
const CLI = { actor: 'cli' } as const

const FLAGS = {
  org: { type: 'string' },
  app: { type: 'string' },
  'bot-token-file': { type: 'string' },
  'signing-secret-file': { type: 'string' },
  channel: { type: 'string' },
  events: { type: 'string' },
  team: { type: 'string' },
  user: { type: 'string' },
} as const

const COMMANDS: Record<string, { flags: string[]; takesId: boolean }> = {
  connect: { flags: ['org', 'app', 'bot-token-file', 'signing-secret-file', 'channel', 'events'], takesId: false },
  list: { flags: ['org'], takesId: false },
  disconnect: { flags: [], takesId: true },
  'allow-user': { flags: ['org', 'team', 'user'], takesId: false },
  'deny-user': { flags: ['org', 'team', 'user'], takesId: false },
  users: { flags: ['org'], takesId: false },
}

/** The flag each field of a connection comes from (the chat-ops service's issue paths). */
const CONNECT_FIELD_FLAGS: Record<string, string> = { '/botToken': '--bot-token-file', '/signingSecret': '--signing-secret-file', '/channel': '--channel', '/events': '--events' }

function need(value: string | undefined, what: string): string {
  if (value === undefined || value === '') throw new UsageError(`missing ${what}`)
  return value
}

async function readSecret(path: string, flag: string): Promise<string> {
  const text = (await readInputFile(path, `--${flag}`)).trim()
  if (!text) throw new UsageError(`--${flag}: ${path} is empty`)
  return text
}

export async function runChatopsCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseFlags(argv, FLAGS)
  if (values.help || positionals.length === 0) {
    if (values.help) return void process.stdout.write(CHATOPS_HELP + '\n')
    throw new UsageError(`missing command\n\n${CHATOPS_HELP}`)
  }
  if (positionals[0] !== 'slack') throw new UsageError(`unknown chat-ops provider "${positionals[0]}" (only slack)\n\n${CHATOPS_HELP}`)
  const sub = positionals[1]
  const spec = sub ? COMMANDS[sub] : undefined
  if (!sub || !spec) throw new UsageError(`unknown command "fixloop chatops slack ${sub ?? ''}"\n\n${CHATOPS_HELP}`)
  for (const flag of Object.keys(values)) {
    if (!(flag in COMMON_FLAGS) && !spec.flags.includes(flag)) throw new UsageError(`"fixloop chatops slack ${sub}" does not take --${flag}`)
  }
  const extra = positionals.slice(spec.takesId ? 3 : 2)
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`)

  // Read-only commands never create a data dir, a database or a master key (issue 17).
  const readOnly = sub === 'list' || sub === 'users'
  const ctx = await openContext(loadConfig({ dataDir: values['data-dir'] }), undefined, { existingOnly: readOnly })
  try {
    const svc = domainServices(ctx).chatops
    const json = values.json
    const orgId = async () => {
      const id = need(values.org, '--org')
      if (!(await svc.repo.orgExists(id))) throw new UsageError(`unknown org: ${id}`)
      return id
    }
    switch (sub) {
      case 'connect': {
        const input = {
          botToken: await readSecret(need(values['bot-token-file'], '--bot-token-file'), 'bot-token-file'),
          signingSecret: await readSecret(need(values['signing-secret-file'], '--signing-secret-file'), 'signing-secret-file'),
          channel: need(values.channel, '--channel'),
          appId: values.app,
          events: parseList(values.events),
        }
        return output(await svc.connect(await orgId(), input, CLI).catch((e: unknown) => {
          throw namedByFlag(e, CONNECT_FIELD_FLAGS)
        }), json)
      }
      case 'list':
        return output({ data: await svc.list(await orgId()) }, json)
      case 'disconnect': {
        const id = need(positionals[2], 'CONNECTION_ID argument')
        const c = await svc.repo.getAny(id)
        if (!c) throw new UsageError(`unknown connection: ${id}`)
        return output(await svc.disconnect(c.org_id, id, CLI), json)
      }
      case 'allow-user':
        return output(await svc.allowUser(await orgId(), need(values.team, '--team'), need(values.user, '--user'), CLI), json)
      case 'deny-user':
        return output(await svc.denyUser(await orgId(), need(values.team, '--team'), need(values.user, '--user'), CLI), json)
      case 'users':
        return output({ data: await svc.users(await orgId()) }, json)
    }
  } finally {
    await closeContext(ctx)
  }
}
