/**
 * First start without an admin: either create one from FIXLOOP_ADMIN_EMAIL + FIXLOOP_ADMIN_PASSWORD_FILE,
 * or print a single-use setup link (30 minutes). Never a default password.
 */
import { readFileSync } from 'node:fs'
import type { AdminsService } from './service'
import type { AuditLog } from '../audit/index'

/** Reads a password file: the first line, without its line ending. */
export function readPasswordFile(path: string): string {
  const text = readFileSync(path, 'utf8')
  return text.split(/\r?\n/)[0]
}

/** FIXLOOP_ADMIN_EMAIL + FIXLOOP_ADMIN_PASSWORD_FILE: creates the first admin, only while there is none. */
export async function adminFromEnv(admins: AdminsService, audit: AuditLog, env: { email?: string; passwordFile?: string }): Promise<{ id: string; email: string } | undefined> {
  if (!env.email || !env.passwordFile || (await admins.count()) > 0) return undefined
  const created = await admins.create(env.email, readPasswordFile(env.passwordFile))
  await audit.record({ orgId: null, actor: 'system', action: 'admin.created', targetId: created.id, data: { via: 'env' } })
  return created
}

/** With no admin at all, a single-use setup link (30 minutes); otherwise undefined. */
export async function setupLink(admins: AdminsService, baseUrl: string): Promise<string | undefined> {
  if ((await admins.count()) > 0) return undefined
  const { token } = await admins.issueSetupToken()
  // In the fragment, so the token never reaches a request log or a proxy.
  return `${baseUrl}/admin/setup#token=${token}`
}
