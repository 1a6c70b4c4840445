/** `fixloop admin create|reset-password`: dashboard admins from the command line (passwords from files). */
import { loadConfig } from '../config'
import { domainServices } from '../runtime/domain'
import { closeContext, openContext } from '../runtime/open'
import { readPasswordFile } from '../modules/admins/bootstrap'
import { output, parseFlags, UsageError } from './args'

export const ADMIN_HELP = `Usage:
  fixloop admin create --email EMAIL --password-file PATH|--no-password [--org ORG_ID ...] [--role owner|member] [--json]
        create a dashboard admin; prints {"id","email"}. Without --org the admin owns the instance and
        sees every Org; with --org (repeatable) the admin sees only those Orgs (--role, default owner).
        --no-password: the admin signs in with SSO only (FIXLOOP_OIDC_*), never with a password.
  fixloop admin reset-password --email EMAIL --password-file PATH [--json]
        set a new password and sign the admin out everywhere
The password is the first line of the file (at least 10 characters); it never goes on the command line.
Flags: --data-dir DIR (or FIXLOOP_DATA_DIR, default ./data)`

function readPassword(path: string | undefined): string {
  if (!path) throw new UsageError('missing --password-file')
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
  })
  if (values.help) return void process.stdout.write(ADMIN_HELP + '\n')
  const sub = positionals[0]
  if (sub !== 'create' && sub !== 'reset-password') throw new UsageError(`${sub ? `unknown command "fixloop admin ${sub}"` : 'missing command'}\n\n${ADMIN_HELP}`)
  if (positionals.length > 1) throw new UsageError(`unexpected argument "${positionals[1]}"`)
  if (sub === 'reset-password' && (values.org || values.role)) throw new UsageError('"fixloop admin reset-password" takes only --email and --password-file')
  const role = values.role ?? 'owner'
  if (role !== 'owner' && role !== 'member') throw new UsageError(`--role must be owner or member, got "${role}"`)
  if (!values.email) throw new UsageError('missing --email')
  if (values['no-password'] && (sub !== 'create' || values['password-file'])) {
    throw new UsageError(sub === 'create' ? '--no-password and --password-file: give one, not both' : '"fixloop admin reset-password" needs --password-file')
  }
  const password = values['no-password'] ? null : readPassword(values['password-file'])
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
