/**
 * `fixloop audit export --org ORG_ID | --instance [--since ISO]`: the Org's audit log (or the instance's
 * own: the entries of no Org, such as sign-ins), oldest first, as JSON lines on stdout (one entry per
 * line, the shape of GET /v1/audit's items), read page by page so a long log never sits in memory. An
 * unknown Org or a bad --since is a usage error (stderr, non-zero exit).
 *
 * `fixloop audit digest --email E | --external-user-id ID`: the identity digest a `reporter.erased` entry
 * holds for that reporter (src/modules/reporters/service.ts `identityDigest`, keyed by this instance), so
 * an operator can show that a request was carried out without the log ever holding the identity.
 */
import { loadConfig } from '../config'
import { ApiError } from '../core/errors'
import { ID_PATTERN } from '../core/ids'
import { parseSince } from '../modules/audit/since'
import { domainServices } from '../runtime/domain'
import { closeContext, openContext } from '../runtime/open'
import { parseFlags, UsageError } from './args'
import { didYouMean } from './suggest'
import { erasureDigestKey, identityDigest } from '../modules/reporters/service'

export const AUDIT_HELP = `Usage:
  fixloop audit export --org ORG_ID | --instance [--since ISO]
        the Org's audit log, oldest first, as JSON lines on stdout (one entry per line:
        {"id","orgId","actor","action","targetId","data","ip","createdAt"}); --since keeps entries
        created at or after that ISO 8601 date or instant. --json is accepted (the output is JSON anyway).
        --instance: the instance's own entries instead, those of no Org ("orgId": null): sign-ins,
        step-up re-authentications, TOTP turned on or off, sessions revoked, password resets, admins
        created.
  fixloop audit digest --email E | --external-user-id ID
        the identityDigest a reporter.erased entry holds for that reporter (a keyed hash: only this
        instance can compute it), to match an erasure request against the log.
Entries are kept FIXLOOP_AUDIT_RETENTION_DAYS days (default 0: forever).
Flags: --data-dir DIR (or FIXLOOP_DATA_DIR, default ./data)`

const PAGE = 500

export async function runAuditCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseFlags(argv, { org: { type: 'string' }, instance: { type: 'boolean' }, since: { type: 'string' }, email: { type: 'string' }, 'external-user-id': { type: 'string' } })
  if (values.help) return void process.stdout.write(AUDIT_HELP + '\n')
  const sub = positionals[0]
  if (!sub) throw new UsageError(`missing command\n\n${AUDIT_HELP}`)
  if (sub !== 'export' && sub !== 'digest') throw new UsageError(`unknown command "fixloop audit ${sub}".${didYouMean(sub, ['export', 'digest'], 'audit ')}\n\n${AUDIT_HELP}`)
  if (positionals.length > 1) throw new UsageError(`unexpected argument "${positionals[1]}" for "fixloop audit ${sub}"`)
  if (sub === 'digest') return printDigest(values)
  if (values.org !== undefined && values.instance) throw new UsageError('give --org or --instance, not both')
  const orgId = values.instance ? null : values.org
  if (orgId === undefined) throw new UsageError('missing --org (or --instance for the entries of no Org)')
  if (orgId !== null && !new RegExp(ID_PATTERN).test(orgId)) throw new UsageError(`unknown org: ${orgId}`)
  let since: number | undefined
  try {
    since = values.since === undefined ? undefined : parseSince(values.since, '--since')
  } catch (e) {
    if (e instanceof ApiError) throw new UsageError(`--since must be an ISO 8601 date or instant (e.g. 2026-01-31T00:00:00Z), got "${values.since}"`)
    throw e
  }
  // Read-only: never creates a data dir, a database or a master key.
  const ctx = await openContext(loadConfig({ dataDir: values['data-dir'] }), undefined, { existingOnly: true })
  try {
    if (orgId !== null && !(await ctx.store.tenants.org(orgId))) throw new UsageError(`unknown org: ${orgId}`)
    const audit = domainServices(ctx).audit
    let after: string | undefined
    for (;;) {
      const page = await audit.export(orgId, { after, since, limit: PAGE })
      if (page.data.length > 0) process.stdout.write(page.data.map((e) => JSON.stringify(e)).join('\n') + '\n')
      if (!page.nextCursor) return
      after = page.nextCursor
    }
  } finally {
    await closeContext(ctx)
  }
}

async function printDigest(values: { email?: string; 'external-user-id'?: string; 'data-dir'?: string; json?: boolean }): Promise<void> {
  const email = values.email?.trim()
  const externalUserId = values['external-user-id']
  if ((email === undefined) === (externalUserId === undefined)) throw new UsageError('give exactly one of --email and --external-user-id')
  if (email === '' || externalUserId === '') throw new UsageError('the identifier is empty')
  const ctx = await openContext(loadConfig({ dataDir: values['data-dir'] }), undefined, { existingOnly: true })
  try {
    const digest = identityDigest(externalUserId !== undefined ? { externalUserId } : { email: email! }, erasureDigestKey(ctx.urlSigningKey))
    process.stdout.write((values.json ? JSON.stringify({ identityDigest: digest }) : digest) + '\n')
  } finally {
    await closeContext(ctx)
  }
}
