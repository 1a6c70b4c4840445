/** `fixloop webhook …`: thin commands over the webhooks service (the same rules as the API). */
import { loadConfig } from '../config'
import { domainServices } from '../runtime/domain'
import { closeContext, openContext } from '../runtime/open'
import { didYouMean } from './suggest'
import { createWebhooksService } from '../modules/webhooks/service'
import { checkTarget } from '../modules/webhooks/ssrf'
import { META } from '../db/meta-keys'
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
Targets must resolve to public addresses unless FIXLOOP_WEBHOOK_ALLOW_PRIVATE=1: the server checks every
delivery with its own setting, so set it on "fixloop serve"; "webhook create" needs it on the command too
(it says so when the server allows private targets, and warns when the server would refuse one).
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

type Delivery = Awaited<ReturnType<ReturnType<typeof createWebhooksService>['deliveries']>>['data'][number]

/** The delivery log as a table for people: one row per attempt (a delivery not tried yet has one row). */
function attemptRows(deliveries: Delivery[]): Record<string, unknown>[] {
  return deliveries.flatMap((d): Record<string, unknown>[] => {
    const base = { delivery: d.id, event: d.eventType, status: d.status, next: d.nextAttemptAt }
    if (d.log.length === 0) return [{ ...base, attempt: null, at: null, response: null, ms: null, error: null }]
    return d.log.map((a) => ({ ...base, attempt: a.attempt, at: a.at, response: a.responseStatus, ms: a.latencyMs, error: a.error }))
  })
}

/**
 * The webhook rule for private targets, on the CLI. The server decides at every delivery (its own
 * FIXLOOP_WEBHOOK_ALLOW_PRIVATE, which it records in the database at start); the CLI allows a private
 * target only with the variable set for the command too, and says which side lacks it.
 */
export function privateTargetRule(cliAllows: boolean, serverSetting: string | undefined): { hint: string; serverRefuses: boolean } {
  const hint =
    serverSetting === '1'
      ? 'the server on this data dir allows private targets (FIXLOOP_WEBHOOK_ALLOW_PRIVATE=1): set FIXLOOP_WEBHOOK_ALLOW_PRIVATE=1 for this command too'
      : 'to allow a private target, set FIXLOOP_WEBHOOK_ALLOW_PRIVATE=1 both on "fixloop serve" and on this command'
  return { hint, serverRefuses: cliAllows && serverSetting === '0' }
}

async function isPrivateTarget(url: string): Promise<boolean> {
  try {
    await checkTarget(url, false, { allowUnresolved: true })
    return false
  } catch {
    return true
  }
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
  const ctx = await openContext(loadConfig({ dataDir: values['data-dir'] }), undefined, { existingOnly: readOnly })
  try {
    const rule = privateTargetRule(ctx.config.webhookAllowPrivate, await ctx.store.meta.read(META.webhookAllowPrivate))
    const svc = domainServices(ctx).webhooks({ privateHint: rule.hint })
    const orgOf = async (webhookId: string) => {
      const w = await svc.repo.getAny(webhookId)
      if (!w) throw new UsageError(`unknown webhook: ${webhookId}`)
      return w.org_id
    }
    const json = values.json
    switch (sub) {
      case 'create': {
        const orgId = need(values.org, '--org')
        if (!(await svc.repo.orgExists(orgId))) throw new UsageError(`unknown org: ${orgId}`)
        const url = need(values.url, '--url')
        const w = await svc.create(orgId, { url, events: parseList(values.events), appId: values.app }, CLI)
        if (rule.serverRefuses && (await isPrivateTarget(url))) {
          process.stderr.write(`fixloop: warning: ${url} is a private target and the server last started on this data dir runs without FIXLOOP_WEBHOOK_ALLOW_PRIVATE=1: it refuses every delivery to it until restarted with FIXLOOP_WEBHOOK_ALLOW_PRIVATE=1\n`)
        }
        // CONTRACT.md: exactly {"id", "url", "events", "secret"}.
        return output({ id: w.id, url: w.url, events: w.events, secret: w.secret }, json)
      }
      case 'list': {
        const orgId = need(values.org, '--org')
        if (!(await svc.repo.orgExists(orgId))) throw new UsageError(`unknown org: ${orgId}`)
        return output({ data: await svc.list(orgId) }, json)
      }
      case 'delete':
        return output(await svc.delete(await orgOf(id()), id(), CLI), json)
      case 'deliveries': {
        const page = await svc.deliveries(await orgOf(id()), id(), { limit: 200 })
        return json ? output(page, true) : output({ data: attemptRows(page.data), nextCursor: page.nextCursor }, false)
      }
      case 'redeliver': {
        const orgId = await svc.repo.deliveryOrg(id())
        if (!orgId) throw new UsageError(`unknown delivery: ${id()}`)
        return output(await svc.redeliver(orgId, id(), CLI), json)
      }
      case 'redeliver-failed':
        return output(await svc.redeliverFailed(await orgOf(id()), id(), need(values.since, '--since'), need(values.until, '--until'), CLI), json)
      case 'rotate-secret':
        return output(await svc.rotateSecret(await orgOf(id()), id(), CLI), json)
      case 'test':
        return output(await svc.sendTest(await orgOf(id()), id(), CLI), json)
      case 'enable':
        return output(await svc.enable(await orgOf(id()), id(), CLI), json)
    }
  } finally {
    await closeContext(ctx)
  }
}
