/** `fixloop webhook …`: thin commands over the webhooks service (the same rules as the API). */
import { loadConfig } from '../config'
import { createContext } from '../context'
import { didYouMean } from './suggest'
import { createWebhooksService } from '../modules/webhooks/service'
import { COMMON_FLAGS, output, parseFlags, parseList, UsageError } from './args'

export const WEBHOOK_HELP = `Usage:
  fixloop webhook create --org ORG_ID --url URL [--events a,b] [--app APP_ID] [--json]
        prints {"id","url","events","secret"}; the whsec_ secret is shown this once
  fixloop webhook list --org ORG_ID [--json]
  fixloop webhook delete WEBHOOK_ID [--json]
  fixloop webhook deliveries WEBHOOK_ID [--json]      the delivery log, newest first, every attempt
  fixloop webhook redeliver DELIVERY_ID [--json]      send one delivery again (same webhook-id)
  fixloop webhook redeliver-failed WEBHOOK_ID --since ISO --until ISO [--json]
  fixloop webhook rotate-secret WEBHOOK_ID [--json]   new secret; the old one also signs for 24 hours
  fixloop webhook test WEBHOOK_ID [--json]            send a webhook.test event to this endpoint
  fixloop webhook enable WEBHOOK_ID [--json]          re-enable a disabled endpoint
Targets must resolve to public addresses unless FIXLOOP_WEBHOOK_ALLOW_PRIVATE=1.
Flags: --data-dir DIR (or FIXLOOP_DATA_DIR, default ./data)`

/** Operator changes go to the audit log as actor "cli", like the org/app/key commands'. */
const CLI = { actor: 'cli' } as const

const FLAGS = {
  org: { type: 'string' },
  url: { type: 'string' },
  events: { type: 'string' },
  app: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
} as const

const COMMANDS: Record<string, { flags: string[]; takesId: boolean }> = {
  create: { flags: ['org', 'url', 'events', 'app'], takesId: false },
  list: { flags: ['org'], takesId: false },
  delete: { flags: [], takesId: true },
  deliveries: { flags: [], takesId: true },
  redeliver: { flags: [], takesId: true },
  'redeliver-failed': { flags: ['since', 'until'], takesId: true },
  'rotate-secret': { flags: [], takesId: true },
  test: { flags: [], takesId: true },
  enable: { flags: [], takesId: true },
}

function need(value: string | undefined, what: string): string {
  if (value === undefined || value === '') throw new UsageError(`missing ${what}`)
  return value
}

export async function runWebhookCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseFlags(argv, FLAGS)
  if (values.help) return void process.stdout.write(WEBHOOK_HELP + '\n')
  const sub = positionals[0]
  if (!sub) throw new UsageError(`missing command\n\n${WEBHOOK_HELP}`)
  const spec = COMMANDS[sub]
  if (!spec) throw new UsageError(`unknown command "fixloop webhook ${sub}".${didYouMean(sub, Object.keys(COMMANDS), 'webhook ')}\n\n${WEBHOOK_HELP}`)
  for (const flag of Object.keys(values)) {
    if (!(flag in COMMON_FLAGS) && !spec.flags.includes(flag)) throw new UsageError(`"fixloop webhook ${sub}" does not take --${flag}`)
  }
  const extra = positionals.slice(spec.takesId ? 2 : 1)
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}" for "fixloop webhook ${sub}"`)
  const id = () => need(positionals[1], sub === 'redeliver' ? 'DELIVERY_ID argument' : 'WEBHOOK_ID argument')

  // Read-only commands never create a data dir, a database or a master key (issue 17).
  const readOnly = sub === 'list' || sub === 'deliveries'
  const ctx = createContext(loadConfig({ dataDir: values['data-dir'] }), undefined, { existingOnly: readOnly })
  try {
    const svc = createWebhooksService(ctx)
    const orgOf = (webhookId: string) => {
      const w = svc.repo.getAny(webhookId)
      if (!w) throw new UsageError(`unknown webhook: ${webhookId}`)
      return w.org_id
    }
    const json = values.json
    switch (sub) {
      case 'create': {
        const orgId = need(values.org, '--org')
        if (!svc.repo.orgExists(orgId)) throw new UsageError(`unknown org: ${orgId}`)
        const w = await svc.create(orgId, { url: need(values.url, '--url'), events: parseList(values.events), appId: values.app }, CLI)
        // CONTRACT.md: exactly {"id", "url", "events", "secret"}.
        return output({ id: w.id, url: w.url, events: w.events, secret: w.secret }, json)
      }
      case 'list': {
        const orgId = need(values.org, '--org')
        if (!svc.repo.orgExists(orgId)) throw new UsageError(`unknown org: ${orgId}`)
        return output({ data: svc.list(orgId) }, json)
      }
      case 'delete':
        return output(svc.delete(orgOf(id()), id(), CLI), json)
      case 'deliveries':
        return output(svc.deliveries(orgOf(id()), id(), { limit: 200 }), json)
      case 'redeliver': {
        const orgId = svc.repo.deliveryOrg(id())
        if (!orgId) throw new UsageError(`unknown delivery: ${id()}`)
        return output(svc.redeliver(orgId, id(), CLI), json)
      }
      case 'redeliver-failed':
        return output(svc.redeliverFailed(orgOf(id()), id(), need(values.since, '--since'), need(values.until, '--until'), CLI), json)
      case 'rotate-secret':
        return output(svc.rotateSecret(orgOf(id()), id(), CLI), json)
      case 'test':
        return output(svc.sendTest(orgOf(id()), id(), CLI), json)
      case 'enable':
        return output(svc.enable(orgOf(id()), id(), CLI), json)
    }
  } finally {
    ctx.sqlite.close()
  }
}
