/**
 * What the dashboard does to Orgs, Apps and keys: the tenants service's rules, scoped to the signed-in
 * admin's Orgs (another Org's ids are 404) and written to the audit log. Secrets are shown only on an
 * explicit reveal with the password re-entered; each reveal is audited.
 */
import type { Context } from '../../context'
import { ApiError } from '../../core/errors'
import { isoUtc } from '../../core/clock'
import type { AppSettings, TenantsService } from '../tenants/service'
import type { AuditLog } from '../audit/index'
import { canManage, canSee, type AdminIdentity, type AdminsService } from '../admins/service'
import type { ConnectionInput, ConnectionsService } from '../connections/service'

export interface Actor {
  admin: AdminIdentity
  ip: string | null
}

export interface ConsoleDeps {
  admins: AdminsService
  audit: AuditLog
  tenants: TenantsService
  connections: ConnectionsService
}

export function createConsoleService(ctx: Context, { admins, audit, tenants, connections }: ConsoleDeps) {
  const { sqlite, box } = ctx
  const orgExists = (orgId: string) => !!sqlite.query('SELECT 1 FROM orgs WHERE id = ?').get(orgId)

  function see(actor: Actor, orgId: string): void {
    if (!canSee(actor.admin, orgId) || !orgExists(orgId)) throw new ApiError('not_found')
  }
  function manage(actor: Actor, orgId: string): void {
    see(actor, orgId)
    if (!canManage(actor.admin, orgId)) throw new ApiError('forbidden')
  }
  function appOf(orgId: string, appId: string): void {
    if (!sqlite.query('SELECT 1 FROM apps WHERE id = ? AND org_id = ? AND deleted_at IS NULL').get(appId, orgId)) throw new ApiError('app_not_found')
  }
  const log = (actor: Actor, orgId: string | null, action: string, targetId: string | null, data: Record<string, unknown> = {}) =>
    audit.record({ orgId, actor: `admin:${actor.admin.id}`, action, targetId, data, ip: actor.ip })

  return {
    orgExists,

    listOrgs(actor: Actor) {
      return tenants
        .listOrgs()
        .filter((o) => canSee(actor.admin, o.id))
        .map((o) => ({ ...o, role: actor.admin.isOwner ? ('owner' as const) : actor.admin.roles.get(o.id)! }))
    },

    /** Instance owners create Orgs (an Org admin administers the Orgs they were given). */
    createOrg(actor: Actor, name: string) {
      if (!actor.admin.isOwner) throw new ApiError('forbidden')
      const org = tenants.createOrg(name)
      log(actor, org.id, 'org.created', org.id, { name: org.name })
      return { ...org, role: 'owner' as const }
    },

    listApps(actor: Actor, orgId: string) {
      see(actor, orgId)
      return tenants.listApps(orgId)
    },

    createApp(actor: Actor, orgId: string, s: AppSettings & { name: string }) {
      manage(actor, orgId)
      const { signingSecret: _shownOnRevealOnly, ...app } = tenants.createApp(orgId, s)
      log(actor, orgId, 'app.created', app.id, { settings: Object.keys(s) })
      return app
    },

    updateApp(actor: Actor, orgId: string, appId: string, s: AppSettings) {
      manage(actor, orgId)
      appOf(orgId, appId)
      if (Object.keys(s).length === 0) throw new ApiError('no_op')
      const app = tenants.updateApp(orgId, appId, s)
      log(actor, orgId, 'app.updated', appId, { settings: Object.keys(s) })
      return app
    },

    deleteApp(actor: Actor, orgId: string, appId: string) {
      manage(actor, orgId)
      appOf(orgId, appId)
      const out = tenants.deleteApp(orgId, appId)
      log(actor, orgId, 'app.deleted', appId)
      return out
    },

    /** The signing secret, after the admin re-entered their password. Audited. */
    async revealSecret(actor: Actor, orgId: string, appId: string, password: string) {
      manage(actor, orgId)
      appOf(orgId, appId)
      await admins.confirmPassword(actor.admin.id, password)
      const row = sqlite.query('SELECT signing_secret_enc AS enc FROM apps WHERE id = ?').get(appId) as { enc: string }
      log(actor, orgId, 'app.secret_revealed', appId)
      return { signingSecret: box.open(row.enc).toString('hex') }
    },

    /** A new signing secret: every outstanding user token signed with the old one fails at once. */
    rotateSecret(actor: Actor, orgId: string, appId: string) {
      manage(actor, orgId)
      appOf(orgId, appId)
      const out = tenants.rotateSecret(orgId, appId)
      log(actor, orgId, 'app.secret_rotated', appId)
      return out
    },

    repo(actor: Actor, orgId: string, appId: string) {
      manage(actor, orgId)
      appOf(orgId, appId)
      return { connection: connections.get(orgId, appId) }
    },

    /**
     * Connects (or replaces) the App's repository and agent. Instance owners only: the agent and verify
     * commands run on this server, which an Org admin must not be able to make it do.
     * An empty token keeps the stored one.
     */
    connectRepo(actor: Actor, orgId: string, appId: string, input: ConnectionInput) {
      manage(actor, orgId)
      appOf(orgId, appId)
      if (!actor.admin.isOwner) throw new ApiError('forbidden', undefined, 'Only the instance owner connects repositories: the agent runs commands on this server.')
      const hostToken = input.hostToken || connections.load(appId)?.hostToken || undefined
      const connection = connections.connect(orgId, appId, { ...input, hostToken })
      log(actor, orgId, 'app.repo_connected', appId, { gitUrl: input.gitUrl, host: connection.host, agent: connection.agent, tokenChanged: !!input.hostToken })
      return { connection }
    },

    disconnectRepo(actor: Actor, orgId: string, appId: string) {
      manage(actor, orgId)
      appOf(orgId, appId)
      if (!actor.admin.isOwner) throw new ApiError('forbidden')
      const out = connections.disconnect(orgId, appId)
      log(actor, orgId, 'app.repo_disconnected', appId)
      return out
    },

    listKeys(actor: Actor, orgId: string) {
      manage(actor, orgId)
      const activity = new Map(
        (sqlite.query('SELECT k.id, a.created_by AS createdBy, a.last_used_at AS lastUsedAt FROM api_keys k LEFT JOIN api_key_activity a ON a.key_id = k.id WHERE k.org_id = ?').all(orgId) as {
          id: string
          createdBy: string | null
          lastUsedAt: number | null
        }[]).map((r) => [r.id, r]),
      )
      const emails = new Map((sqlite.query('SELECT id, email FROM admins').all() as { id: string; email: string }[]).map((a) => [`admin:${a.id}`, a.email]))
      return tenants
        .listKeys(orgId)
        .reverse()
        .map((k) => {
          const a = activity.get(k.id)
          const by = a?.createdBy ?? 'cli'
          return { ...k, createdBy: emails.get(by) ?? by, lastUsedAt: a?.lastUsedAt ? isoUtc(a.lastUsedAt) : null }
        })
    },

    /** Creates an `sk_` key; the plaintext is in this response only. */
    createKey(actor: Actor, orgId: string, name: string) {
      manage(actor, orgId)
      const key = tenants.createKey(orgId, name)
      sqlite.query('INSERT INTO api_key_activity (key_id, created_by) VALUES (?, ?)').run(key.id, `admin:${actor.admin.id}`)
      log(actor, orgId, 'key.created', key.id, { name })
      return { id: key.id, key: key.key, name: key.name, prefix: key.key.slice(0, 7) }
    },

    revokeKey(actor: Actor, orgId: string, keyId: string) {
      manage(actor, orgId)
      if (!sqlite.query('SELECT 1 FROM api_keys WHERE id = ? AND org_id = ?').get(keyId, orgId)) throw new ApiError('not_found')
      const out = tenants.revokeKey(orgId, keyId)
      log(actor, orgId, 'key.revoked', keyId)
      return out
    },

    /** Agent spending per App over the last `days` days (runs, tokens, cost), from the runs table. */
    costs(actor: Actor, orgId: string, days: number) {
      see(actor, orgId)
      const since = ctx.clock.now() - days * 86_400_000
      return sqlite
        .query(
          'SELECT a.id AS appId, COUNT(r.id) AS runs, COALESCE(SUM(r.tokens_in), 0) AS tokensIn, COALESCE(SUM(r.tokens_out), 0) AS tokensOut, COALESCE(SUM(r.cost_usd), 0) AS costUsd ' +
            'FROM apps a LEFT JOIN agent_runs r ON r.app_id = a.id AND r.created_at >= ? WHERE a.org_id = ? AND a.deleted_at IS NULL GROUP BY a.id ORDER BY a.id',
        )
        .all(since, orgId) as { appId: string; runs: number; tokensIn: number; tokensOut: number; costUsd: number }[]
    },

    listAudit(actor: Actor, orgId: string, cursor: string | undefined, limit: number) {
      manage(actor, orgId)
      return audit.list(null, { orgId, cursor, limit })
    },
  }
}
export type ConsoleService = ReturnType<typeof createConsoleService>
