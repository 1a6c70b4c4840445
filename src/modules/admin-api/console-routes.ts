/**
 * The dashboard's Org, App, key and audit routes. Every route names its Org in the path and is
 * answered only for Orgs the signed-in admin belongs to (404 otherwise), and only with the role its
 * `access` declares (403 otherwise); mutations need X-CSRF-Token.
 */
import { Elysia, t } from 'elysia'
import { errorSchemas } from '../../http/error-docs'
import { authenticateAdmin, type AdminAuthDeps } from '../../http/admin-auth'
import { accessGuard } from '../../http/access-guard'
import { clientAddress } from '../../http/client-address'
import { App, AppList } from '../apps/model'
import type { ConsoleService } from './console'
import {
  ADMIN_SESSION, ApiKeyList, AppCreateBody, AppParams, AppUpdateBody, AuditQuery, CreatedKey, KeyBody, KeyParams, OrgBody, OrgList,
  Org, OrgParams, PasswordBody, SecretResponse, CostList, RepoBody, RepoView,
} from './model'

const AUTH = ['not_signed_in', 'csrf_failed', 'rate_limited'] as const
const doc = (summary: string, description?: string) => ({ summary, description, tags: ['admin'], security: ADMIN_SESSION })

export function consoleRoutes(deps: AdminAuthDeps, svc: ConsoleService) {
  return new Elysia({ name: 'admin-console' })
    .use(accessGuard({ orgExists: svc.orgExists }))
    .derive(async ({ request, server }) => {
      const caller = await authenticateAdmin(deps, request)
      return { caller, actor: { admin: caller.admin, ip: clientAddress(request, server, deps.trustProxy), sessionId: caller.session.id } }
    })
    .get('/admin/api/orgs', async ({ actor }) => ({ data: await svc.listOrgs(actor) }), { access: 'signed_in', response: { 200: OrgList, ...errorSchemas(...AUTH) }, detail: doc('Orgs you belong to (every Org for the instance owner)') })
    .post('/admin/api/orgs', ({ actor, body }) => svc.createOrg(actor, body.name), {
      access: 'orgs.create',
      body: OrgBody,
      parse: 'json',
      response: { 200: Org, ...errorSchemas(...AUTH, 'invalid_body', 'invalid_argument', 'forbidden') },
      detail: doc('Create an Org (instance owner)'),
    })
    .get('/admin/api/orgs/:orgId/apps', async ({ params }) => ({ data: await svc.listApps(params.orgId) }), {
      access: 'org.read',
      params: OrgParams,
      response: { 200: AppList, ...errorSchemas(...AUTH, 'invalid_id', 'not_found') },
      detail: doc("The Org's live Apps"),
    })
    .post('/admin/api/orgs/:orgId/apps', ({ actor, params, body }) => svc.createApp(actor, params.orgId, body), {
      access: 'apps.manage',
      params: OrgParams,
      body: AppCreateBody,
      parse: 'json',
      response: { 200: App, ...errorSchemas(...AUTH, 'invalid_id', 'invalid_body', 'invalid_argument', 'slug_taken', 'not_found', 'forbidden') },
      detail: doc('Create an App', 'The signing secret is not in the response: reveal it with POST …/secret/reveal.'),
    })
    .patch('/admin/api/orgs/:orgId/apps/:appId', ({ actor, params, body }) => svc.updateApp(actor, params.orgId, params.appId, body), {
      access: 'apps.manage',
      params: AppParams,
      body: AppUpdateBody,
      parse: 'json',
      response: { 200: App, ...errorSchemas(...AUTH, 'invalid_id', 'invalid_body', 'invalid_argument', 'slug_taken', 'no_op', 'not_found', 'app_not_found', 'forbidden') },
      detail: doc("Change an App's settings"),
    })
    .delete('/admin/api/orgs/:orgId/apps/:appId', ({ actor, params }) => svc.deleteApp(actor, params.orgId, params.appId), {
      access: 'apps.manage',
      params: AppParams,
      response: { 200: t.Object({ id: t.String(), deletedAt: t.String() }), ...errorSchemas(...AUTH, 'invalid_id', 'not_found', 'app_not_found', 'forbidden') },
      detail: doc('Delete an App (its public key stops working; stored feedback stays)'),
    })
    .post('/admin/api/orgs/:orgId/apps/:appId/secret/reveal', ({ actor, params, body }) => svc.revealSecret(actor, params.orgId, params.appId, body.password), {
      access: 'apps.manage',
      params: AppParams,
      body: PasswordBody,
      parse: 'json',
      response: { 200: SecretResponse, ...errorSchemas(...AUTH, 'invalid_id', 'invalid_body', 'invalid_credentials', 'not_found', 'app_not_found', 'forbidden') },
      detail: doc('Reveal the signing secret (password re-entered, or a re-authentication at the identity provider; audited)', 'Without `password`, the session must hold an unused re-authentication for `secret_reveal` at most 5 minutes old (POST /admin/api/me/reauth); otherwise 401 invalid_credentials with `details.reauthRequired` and, when single sign-on is configured, `details.reauth`.'),
    })
    .post('/admin/api/orgs/:orgId/apps/:appId/secret/rotate', ({ actor, params, body }) => svc.rotateSecret(actor, params.orgId, params.appId, body.password), {
      access: 'apps.manage',
      params: AppParams,
      body: PasswordBody,
      parse: 'json',
      response: { 200: SecretResponse, ...errorSchemas(...AUTH, 'invalid_id', 'invalid_body', 'invalid_credentials', 'not_found', 'app_not_found', 'forbidden') },
      detail: doc(
        'Rotate the signing secret (password re-entered, or a re-authentication at the identity provider; audited)',
        'Every outstanding user token signed with the old secret stops working at once. The answer holds the new secret, so the proof is a reveal\'s: without `password`, the session must hold an unused re-authentication for `secret_rotate` at most 5 minutes old (POST /admin/api/me/reauth); otherwise 401 invalid_credentials with `details.reauthRequired`.',
      ),
    })
    .get('/admin/api/orgs/:orgId/apps/:appId/repo', ({ params }) => svc.repo(params.orgId, params.appId), {
      access: 'apps.manage',
      params: AppParams,
      response: { 200: RepoView, ...errorSchemas(...AUTH, 'invalid_id', 'not_found', 'app_not_found', 'forbidden') },
      detail: doc("The App's repository and agent connection (never the token)"),
    })
    .put(
      '/admin/api/orgs/:orgId/apps/:appId/repo',
      ({ actor, params, body: { password, ...body } }) => svc.connectRepo(actor, params.orgId, params.appId, { ...body, hostToken: body.hostToken?.trim() || undefined }, password),
      {
        access: 'repos.manage',
        params: AppParams,
        body: RepoBody,
        parse: 'json',
        response: { 200: RepoView, ...errorSchemas(...AUTH, 'invalid_id', 'invalid_body', 'invalid_argument', 'invalid_credentials', 'not_found', 'app_not_found', 'forbidden') },
        detail: doc(
          'Connect a repository and agent (instance owner; password re-entered, or a re-authentication at the identity provider)',
          'Same rules as `fixloop app connect-repo`. Reports waiting in queued get their run. The agent and verify commands run on this server for every queued report, long after the session that set them, so it asks for the proof a reveal does: `password`, or without it an unused re-authentication for `repo_connect` at most 5 minutes old (POST /admin/api/me/reauth); otherwise 401 invalid_credentials with `details.reauthRequired`.',
        ),
      },
    )
    .delete('/admin/api/orgs/:orgId/apps/:appId/repo', ({ actor, params }) => svc.disconnectRepo(actor, params.orgId, params.appId), {
      access: 'repos.manage',
      params: AppParams,
      response: { 200: t.Object({ appId: t.String(), disconnected: t.Boolean() }), ...errorSchemas(...AUTH, 'invalid_id', 'not_found', 'app_not_found', 'forbidden') },
      detail: doc('Disconnect the repository (instance owner)'),
    })
    .get('/admin/api/orgs/:orgId/keys', async ({ params }) => ({ data: await svc.listKeys(params.orgId) }), {
      access: 'keys.manage',
      params: OrgParams,
      response: { 200: ApiKeyList, ...errorSchemas(...AUTH, 'invalid_id', 'not_found', 'forbidden') },
      detail: doc("The Org's sk_ keys (prefix only), newest first"),
    })
    .post('/admin/api/orgs/:orgId/keys', ({ actor, params, body }) => svc.createKey(actor, params.orgId, body.name, body.password), {
      access: 'keys.manage',
      params: OrgParams,
      body: KeyBody,
      parse: 'json',
      response: { 200: CreatedKey, ...errorSchemas(...AUTH, 'invalid_id', 'invalid_body', 'invalid_credentials', 'not_found', 'forbidden') },
      detail: doc(
        'Create an sk_ key (the key is in this response only; password re-entered, or a re-authentication at the identity provider)',
        'A key works until it is revoked, whatever becomes of the session, so it asks for the proof a reveal does: `password`, or without it an unused re-authentication for `key_create` at most 5 minutes old (POST /admin/api/me/reauth); otherwise 401 invalid_credentials with `details.reauthRequired`.',
      ),
    })
    .delete('/admin/api/orgs/:orgId/keys/:keyId', ({ actor, params }) => svc.revokeKey(actor, params.orgId, params.keyId), {
      access: 'keys.manage',
      params: KeyParams,
      response: { 200: t.Object({ id: t.String(), revokedAt: t.String() }), ...errorSchemas(...AUTH, 'invalid_id', 'not_found', 'forbidden') },
      detail: doc('Revoke an sk_ key (refused at once)'),
    })
    .get('/admin/api/orgs/:orgId/costs', async ({ params }) => ({ days: 30, data: await svc.costs(params.orgId, 30) }), {
      access: 'org.read',
      params: OrgParams,
      response: { 200: CostList, ...errorSchemas(...AUTH, 'invalid_id', 'not_found') },
      detail: doc('Agent runs, tokens and cost per App over the last 30 days'),
    })
    .get('/admin/api/orgs/:orgId/audit', ({ params, query }) => svc.listAudit(params.orgId, query.cursor, query.limit ?? 50), {
      access: 'audit.read',
      params: OrgParams,
      query: AuditQuery,
      response: { 200: t.NoValidate(t.Object({ data: t.Array(t.Unknown()), nextCursor: t.Union([t.String(), t.Null()]) })), ...errorSchemas(...AUTH, 'invalid_id', 'invalid_body', 'not_found', 'forbidden') },
      detail: doc("The Org's audit log, newest first"),
    })
}
