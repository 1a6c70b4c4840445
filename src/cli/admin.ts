/** `fixloop admin create|reset-password|list|remove|role`: dashboard admins from the command line (passwords from files). */
import { loadConfig } from '../config'
import { domainServices } from '../runtime/domain'
import { closeContext, openContext } from '../runtime/open'
import { readPasswordFile } from '../modules/admins/bootstrap'
import { formatTable, output, parseFlags, UsageError } from './args'

export const ADMIN_HELP = `Usage:
  fixloop admin create --email EMAIL --password-file PATH|--no-password [--org ORG_ID ...] [--role owner|member] [--json]
        create a dashboard admin; prints {"id","email"}. Without --org the admin owns the instance and
        sees every Org; with --org (repeatable) the admin sees only those Orgs (--role, default owner).
        --no-password: the admin signs in with SSO only (FIXLOOP_OIDC_*), never with a password.
  fixloop admin reset-password --email EMAIL --password-file PATH [--json]
        set a new password and sign the admin out everywhere
  fixloop admin list [--json]
        every admin: email, instance owner or the Orgs and roles, whether a password and TOTP are set
  fixloop admin remove --email EMAIL [--json]
        remove an admin who left: signed out everywhere at once, gone from every Org (audited); the
        instance's only owner cannot be removed (create another owner first)
  fixloop admin role --email EMAIL --org ORG_ID --role owner|member [--leave-instance] [--json]
        change what an admin is in an Org (someone changing teams); prints {"id","email","orgId","from","to"}.
        Their signed-in sessions have the new role from their next request; audited in the Org
        (admin.role_changed). An instance owner (every Org) is refused unless --leave-instance is given:
        then they stop owning the instance and keep only this Org, with this role. The instance's only
        owner and an Org's only owner cannot be demoted.
The password is the first line of the file (at least 10 characters); it never goes on the command line.
Flags: --data-dir DIR (or FIXLOOP_DATA_DIR, default ./data)`

/**
 * The password from --password-file. Without the flag the message says what the file holds and, for
 * `create`, the other way (--no-password): "missing --password-file" alone left a newcomer looking for a
 * --password flag, which does not exist on purpose.
 */
function readPassword(path: string | undefined, sub: 'create' | 'reset-password'): string {
  if (!path) {
    const file = `missing --password-file PATH: a file whose first line is the ${sub === 'create' ? '' : 'new '}password (it never goes on the command line)`
    throw new UsageError(sub === 'create' ? `${file}, or --no-password for an admin who signs in with SSO only` : file)
  }
  try {
    return readPasswordFile(path)
  } catch (e) {
    throw new UsageError(`--password-file: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`)
  }
}

export async function runAdminCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseFlags(argv, {
    email: { type: 'string' },
    'password-file': { type: 'string' },
    'no-password': { type: 'boolean' },
    org: { type: 'string', multiple: true },
    role: { type: 'string' },
    'leave-instance': { type: 'boolean' },
  })
  if (values.help) return void process.stdout.write(ADMIN_HELP + '\n')
  const sub = positionals[0]
  if (positionals.length > 1) throw new UsageError(`unexpected argument "${positionals[1]}"`)
  if (sub === 'role') return runRole(values)
  if (values['leave-instance'] !== undefined) throw new UsageError(`--leave-instance belongs to "fixloop admin role"`)
  if (sub === 'list' || sub === 'remove') return runListOrRemove(sub, values)
  if (sub !== 'create' && sub !== 'reset-password') throw new UsageError(`${sub ? `unknown command "fixloop admin ${sub}"` : 'missing command'}\n\n${ADMIN_HELP}`)
  if (sub === 'reset-password' && (values.org || values.role)) throw new UsageError('"fixloop admin reset-password" takes only --email and --password-file')
  const role = values.role ?? 'owner'
  if (role !== 'owner' && role !== 'member') throw new UsageError(`--role must be owner or member, got "${role}"`)
  if (!values.email) throw new UsageError('missing --email')
  if (values['no-password'] && (sub !== 'create' || values['password-file'])) {
    throw new UsageError(sub === 'create' ? '--no-password and --password-file: give one, not both' : '"fixloop admin reset-password" needs --password-file')
  }
  const password = values['no-password'] ? null : readPassword(values['password-file'], sub)
  const ctx = await openContext(loadConfig({ dataDir: values['data-dir'] }))
  try {
    const { admins, audit } = domainServices(ctx)
    if (sub === 'create') {
      const admin = await admins.create(values.email, password, values.org ?? [], role)
      for (const orgId of values.org?.length ? values.org : [null]) await audit.record({ orgId, actor: 'cli', action: 'admin.created', targetId: admin.id, data: { role, ...(password === null ? { password: false } : {}) } })
      return output({ id: admin.id, email: admin.email }, values.json)
    }
    const admin = await admins.resetPassword(values.email, password!)
    await audit.record({ orgId: null, actor: 'cli', action: 'admin.password_reset', targetId: admin.id })
    return output({ id: admin.id, email: admin.email }, values.json)
  } finally {
    await closeContext(ctx)
  }
}

/** `role`: --email, one --org and --role, nothing else. */
async function runRole(values: ReturnType<typeof parseFlags>['values'] & { email?: string; org?: string[]; role?: string; 'leave-instance'?: boolean }) {
  const extra = (['password-file', 'no-password'] as const).find((f) => values[f] !== undefined)
  if (extra) throw new UsageError(`"fixloop admin role" takes only --email, --org and --role, not --${extra}`)
  if (!values.email) throw new UsageError('missing --email')
  if (!values.org?.length) throw new UsageError('missing --org')
  if (values.org.length > 1) throw new UsageError('"fixloop admin role" changes one Org at a time: give --org once')
  if (values.role !== 'owner' && values.role !== 'member') throw new UsageError(values.role === undefined ? 'missing --role (owner or member)' : `--role must be owner or member, got "${values.role}"`)
  const ctx = await openContext(loadConfig({ dataDir: values['data-dir'] }))
  try {
    const changed = await domainServices(ctx).admins.setRole(values.email, values.org[0], values.role, 'cli', { leaveInstance: values['leave-instance'] === true })
    if (values.json) return output(changed, true)
    process.stdout.write(changed.from === changed.to ? `${changed.email} is already ${changed.to} of ${changed.orgId}\n` : `${changed.email}: ${changed.from} → ${changed.to} of ${changed.orgId}\n`)
  } finally {
    await closeContext(ctx)
  }
}

/** `list` and `remove`: no password file; `remove` needs --email. */
async function runListOrRemove(sub: 'list' | 'remove', values: ReturnType<typeof parseFlags>['values'] & { email?: string; org?: string[]; role?: string }) {
  const extra = (['password-file', 'no-password', 'org', 'role'] as const).find((f) => values[f] !== undefined)
  if (extra || (sub === 'list' && values.email)) throw new UsageError(`"fixloop admin ${sub}" takes ${sub === 'list' ? 'no flags but --json' : 'only --email'}${extra ? `, not --${extra}` : ''}`)
  if (sub === 'remove' && !values.email) throw new UsageError('missing --email')
  // `list` is read-only: a mistyped --data-dir is an error, never a new instance.
  const ctx = await openContext(loadConfig({ dataDir: values['data-dir'] }), undefined, { existingOnly: sub === 'list' })
  try {
    const { admins } = domainServices(ctx)
    if (sub === 'remove') {
      const removed = await admins.remove(values.email!, 'cli')
      output(removed, values.json)
      for (const orgId of removed.ownerlessOrgs) {
        process.stderr.write(`note: Org ${orgId} has no owner of its own now (instance owners still manage it): fixloop admin role --email EMAIL --org ${orgId} --role owner\n`)
      }
      return
    }
    const list = await admins.list()
    if (values.json) return output({ data: list }, true)
    const scope = (a: (typeof list)[number]) => (a.owner ? 'instance owner' : a.orgs.map((m) => `${m.orgId} (${m.role})`).join(', ') || 'no Org')
    const sign = (a: (typeof list)[number]) => [a.password ? 'password' : 'SSO only', a.totp ? 'TOTP' : ''].filter(Boolean).join(' + ')
    // A table as every list prints (args.ts), with an admin's Orgs and roles uncut.
    process.stdout.write(list.length === 0 ? 'no admins yet\n' : formatTable(list.map((a) => ({ email: a.email, id: a.id, access: scope(a), 'sign-in': sign(a) })), ['access']))
  } finally {
    await closeContext(ctx)
  }
}
