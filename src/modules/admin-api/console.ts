/**
 * What the dashboard does to Orgs, Apps and keys: the tenants service's rules, written to the audit log
 * in the change's own transaction. Who may call what (another Org's ids are 404, a member's reach for
 * an owner's setting is 403) is checked before any of this runs, by the `access` each route declares
 * (src/core/access.ts, src/http/access-guard.ts). Secrets are shown only on an explicit reveal with the
 * password re-entered (or a fresh re-authentication at the identity provider); each reveal is audited.
 */
import { ApiError } from '../../core/errors'
import type { Store } from '../../db/store'
import type { SecretBox } from '../../core/crypto'
import type { Clock } from '../../core/clock'
import { isoUtc } from '../../core/clock'
import type { AppSettings, TenantsService } from '../tenants/service'
import type { ActedBy, AuditLog } from '../audit/index'
import { canSee, type AdminIdentity } from '../admins/service'
import type { PasswordReentry } from './password-reentry'
import type { ConnectionInput, ConnectionsService } from '../connections/service'

export interface Actor {
  admin: AdminIdentity
  ip: string | null
  /** The dashboard session acting (a step-up re-authentication is recorded on it). */
  sessionId: string
}

export interface ConsoleDeps {
  reentry: PasswordReentry
  audit: AuditLog
  tenants: TenantsService
  connections: ConnectionsService
}

/** What this service is given: the repositories and values it uses (a Context has them all). */
export interface ConsoleServiceDeps {
  store: Pick<Store, 'console'>
  box: SecretBox
  clock: Clock
}

export function createConsoleService(ctx: ConsoleServiceDeps, { reentry, audit, tenants, connections }: ConsoleDeps) {
  const { box } = ctx
  const repo = ctx.store.console
  const orgExists = repo.orgExists

  async function appOf(orgId: string, appId: string): Promise<void> {
    if (!(await repo.appInOrg(orgId, appId))) throw new ApiError('app_not_found')
  }
  /** The audit identity of a dashboard action. */
  const by = (actor: Actor): ActedBy => ({ actor: `admin:${actor.admin.id}`, ip: actor.ip })
  const entry = (actor: Actor, orgId: string | null, action: string, targetId: string | null, data: Record<string, unknown> = {}) =>
    ({ orgId, actor: `admin:${actor.admin.id}`, action, targetId, data, ip: actor.ip })

  return {
    orgExists,
    appInOrg: repo.appInOrg,
    feedbackInOrg: repo.feedbackInOrg,

    async listOrgs(actor: Actor) {
      return (await tenants.listOrgs())
        .filter((o) => canSee(actor.admin, o.id))
        .map((o) => ({ ...o, role: actor.admin.isOwner ? ('owner' as const) : actor.admin.roles.get(o.id)! }))
    },

    /** Instance owners create Orgs (an Org admin administers the Orgs they were given). */
    async createOrg(actor: Actor, name: string) {
      const org = await tenants.createOrg(name, by(actor))
      return { ...org, role: 'owner' as const }
    },

    listApps: (orgId: string) => tenants.listApps(orgId),

    async createApp(actor: Actor, orgId: string, s: AppSettings & { name: string }) {
      const { signingSecret: _shownOnRevealOnly, ...app } = await tenants.createApp(orgId, s, by(actor))
      return app
    },

    async updateApp(actor: Actor, orgId: string, appId: string, s: AppSettings) {
      await appOf(orgId, appId)
      if (Object.keys(s).length === 0) throw new ApiError('no_op')
      return tenants.updateApp(orgId, appId, s, by(actor))
    },

    async deleteApp(actor: Actor, orgId: string, appId: string) {
      await appOf(orgId, appId)
      return tenants.deleteApp(orgId, appId, by(actor))
    },

    /**
     * The signing secret, after the admin re-entered their password (throttled; failures audited too) or,
     * without one, re-authenticated at the identity provider for this (password-reentry.ts). Audited.
     */
    async revealSecret(actor: Actor, orgId: string, appId: string, password: string | undefined) {
      await appOf(orgId, appId)
      await reentry.confirm({ adminId: actor.admin.id, sessionId: actor.sessionId }, password, { purpose: 'secret_reveal', ip: actor.ip, orgId, targetId: appId })
      const sealed = await repo.sealedSecret(orgId, appId)
      if (sealed === undefined) throw new ApiError('app_not_found')
      await audit.record(entry(actor, orgId, 'app.secret_revealed', appId))
      return { signingSecret: box.open(sealed).toString('hex') }
    },

    /**
     * A new signing secret: every outstanding user token signed with the old one fails at once. The answer
     * holds the new secret, so it asks for the same proof as a reveal (else rotating would be a reveal
     * without one).
     */
    async rotateSecret(actor: Actor, orgId: string, appId: string, password: string | undefined) {
      await appOf(orgId, appId)
      await reentry.confirm({ adminId: actor.admin.id, sessionId: actor.sessionId }, password, { purpose: 'secret_rotate', ip: actor.ip, orgId, targetId: appId })
      return tenants.rotateSecret(orgId, appId, by(actor))
    },

    async repo(orgId: string, appId: string) {
      await appOf(orgId, appId)
      return { connection: await connections.get(orgId, appId) }
    },

    /**
     * Connects (or replaces) the App's repository and agent. Instance owners only: the agent and verify
     * commands run on this server, which an Org admin must not be able to make it do. For the same reason
     * the admin proves again who they are (`repo_connect`): a stolen session could otherwise leave a
     * command behind that runs for every queued report after the session is revoked.
     * An empty token keeps the stored one, while the host, its API URL and the git remote are unchanged.
     */
    async connectRepo(actor: Actor, orgId: string, appId: string, input: ConnectionInput, password: string | undefined) {
      await appOf(orgId, appId)
      await reentry.confirm({ adminId: actor.admin.id, sessionId: actor.sessionId }, password, { purpose: 'repo_connect', ip: actor.ip, orgId, targetId: appId })
      const hostToken = input.hostToken || (await connections.keptHostToken(appId, input))
      // The connection, the runs it releases and its audit row commit together (connections/repo.ts).
      const connection = await connections.connect(orgId, appId, { ...input, hostToken }, { ...by(actor), note: { tokenChanged: !!input.hostToken } })
      return { connection }
    },

    async disconnectRepo(actor: Actor, orgId: string, appId: string) {
      await appOf(orgId, appId)
      return connections.disconnect(orgId, appId, by(actor))
    },

    async listKeys(orgId: string) {
      const activity = await repo.keyActivity(orgId)
      const emails = await repo.adminEmails()
      return (await tenants.listKeys(orgId))
        .reverse()
        .map((k) => {
          const a = activity.get(k.id)
          const by = a?.createdBy ?? 'cli'
          return { ...k, createdBy: emails.get(by) ?? by, lastUsedAt: a?.lastUsedAt ? isoUtc(a.lastUsedAt) : null }
        })
    },

    /** Creates an `sk_` key; the plaintext is in this response only. */
    /** An sk_ key works until revoked, whatever becomes of the session: created after a proof, as a reveal. */
    async createKey(actor: Actor, orgId: string, name: string, password: string | undefined) {
      await reentry.confirm({ adminId: actor.admin.id, sessionId: actor.sessionId }, password, { purpose: 'key_create', ip: actor.ip, orgId })
      const key = await tenants.createKey(orgId, name, by(actor))
      return { id: key.id, key: key.key, name: key.name, prefix: key.key.slice(0, 7) }
    },

    async revokeKey(actor: Actor, orgId: string, keyId: string) {
      if (!(await repo.keyInOrg(orgId, keyId))) throw new ApiError('not_found')
      return tenants.revokeKey(orgId, keyId, by(actor))
    },

    /** Agent spending per App over the last `days` days (runs, tokens, cost), from the runs table. */
    costs: (orgId: string, days: number) => repo.costsSince(orgId, ctx.clock.now() - days * 86_400_000),

    async listAudit(orgId: string, cursor: string | undefined, limit: number) {
      const page = await audit.list(null, { orgId, cursor, limit })
      // People read the log: "admin:<id>" becomes the admin's email, a target id the thing's name.
      const adminOf = (a: string) => (a.startsWith('admin:') ? a.slice(6) : '')
      const names = await repo.auditNames(orgId, page.data.flatMap((e) => [adminOf(e.actor), e.targetId ?? '']))
      return {
        ...page,
        data: page.data.map((e) => ({ ...e, actorLabel: names.get(adminOf(e.actor)) ?? null, targetLabel: (e.targetId && names.get(e.targetId)) ?? null })),
      }
    },
  }
}
export type ConsoleService = ReturnType<typeof createConsoleService>
