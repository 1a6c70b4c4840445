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

/**
 * Where the setup link points: FIXLOOP_PUBLIC_URL when set, else the listening address. A server listening
 * on every address (`--host 0.0.0.0`, the container image's default, or `::`) would print
 * `http://0.0.0.0:8080/…`, which is no address to browse to (browsers refuse or mistreat it): the link
 * names the loopback address instead, which a browser on the same machine (or through `docker run -p` or
 * an SSH forward of the port) reaches; `wildcard` says so, for the hint printed with it.
 */
export function setupLinkBase(publicUrl: string | undefined, listeningUrl: string): { base: string; wildcard: boolean } {
  if (publicUrl) return { base: publicUrl, wildcard: false }
  const url = new URL(listeningUrl)
  if (url.hostname === '0.0.0.0') url.hostname = '127.0.0.1'
  else if (url.hostname === '[::]') url.hostname = '[::1]'
  else return { base: listeningUrl, wildcard: false }
  return { base: url.origin, wildcard: true }
}

/** With no admin at all, a single-use setup link (30 minutes); otherwise undefined. */
export async function setupLink(admins: AdminsService, baseUrl: string): Promise<string | undefined> {
  if ((await admins.count()) > 0) return undefined
  const { token } = await admins.issueSetupToken()
  // In the fragment, so the token never reaches a request log or a proxy.
  return `${baseUrl}/admin/setup#token=${token}`
}
