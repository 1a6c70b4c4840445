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
import { canManage, canSee, type AdminIdentity } from '../admins/service'
import type { PasswordReentry } from './password-reentry'
import type { ConnectionInput, ConnectionsService } from '../connections/service'
import { createConsoleRepo } from './console-repo'

export interface Actor {
  admin: AdminIdentity
  ip: string | null
}

export interface ConsoleDeps {
  reentry: PasswordReentry
  audit: AuditLog
  tenants: TenantsService
  connections: ConnectionsService
}

export function createConsoleService(ctx: Context, { reentry, audit, tenants, connections }: ConsoleDeps) {
  const { box } = ctx
  const repo = createConsoleRepo(ctx.sqlite)
  const orgExists = repo.orgExists

  function see(actor: Actor, orgId: string): void {
    if (!canSee(actor.admin, orgId) || !orgExists(orgId)) throw new ApiError('not_found')
  }
  function manage(actor: Actor, orgId: string): void {
    see(actor, orgId)
    if (!canManage(actor.admin, orgId)) throw new ApiError('forbidden')
  }
  function appOf(orgId: string, appId: string): void {
    if (!repo.appInOrg(orgId, appId)) throw new ApiError('app_not_found')
  }
  const log = (actor: Actor, orgId: string | null, action: string, targetId: string | null, data: Record<string, unknown> = {}) =>
    audit.record({ orgId, actor: `admin:${actor.admin.id}`, action, targetId, data, ip: actor.ip })

  return {
    orgExists,
    appInOrg: repo.appInOrg,
    feedbackInOrg: repo.feedbackInOrg,

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

    /** The signing secret, after the admin re-entered their password (throttled; failures audited too). Audited. */
    async revealSecret(actor: Actor, orgId: string, appId: string, password: string) {
      manage(actor, orgId)
      appOf(orgId, appId)
      await reentry.confirm(actor.admin.id, password, { purpose: 'secret_reveal', ip: actor.ip, orgId, targetId: appId })
      log(actor, orgId, 'app.secret_revealed', appId)
      return { signingSecret: box.open(repo.sealedSecret(appId)).toString('hex') }
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
      const activity = repo.keyActivity(orgId)
      const emails = repo.adminEmails()
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
      repo.recordKeyCreator(key.id, `admin:${actor.admin.id}`)
      log(actor, orgId, 'key.created', key.id, { name })
      return { id: key.id, key: key.key, name: key.name, prefix: key.key.slice(0, 7) }
    },

    revokeKey(actor: Actor, orgId: string, keyId: string) {
      manage(actor, orgId)
      if (!repo.keyInOrg(orgId, keyId)) throw new ApiError('not_found')
      const out = tenants.revokeKey(orgId, keyId)
      log(actor, orgId, 'key.revoked', keyId)
      return out
    },

    /** Agent spending per App over the last `days` days (runs, tokens, cost), from the runs table. */
    costs(actor: Actor, orgId: string, days: number) {
      see(actor, orgId)
      return repo.costsSince(orgId, ctx.clock.now() - days * 86_400_000)
    },

    listAudit(actor: Actor, orgId: string, cursor: string | undefined, limit: number) {
      manage(actor, orgId)
      return audit.list(null, { orgId, cursor, limit })
    },
  }
}
export type ConsoleService = ReturnType<typeof createConsoleService>
