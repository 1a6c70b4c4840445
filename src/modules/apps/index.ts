/** GET /v1/apps (sk): every live App of the caller's Org (spec 4.3). */
import { Elysia } from 'elysia'
import { orgAuth, type AuthDeps } from '../../http/auth'
import { BEARER_SK, errorSchemas, ORG_AUTH_ERRORS } from '../../http/error-docs'
import { AppList } from './model'
import { toApp, type AppsRepo } from './repo'

export function appRoutes(auth: AuthDeps, apps: AppsRepo) {
  return new Elysia({ name: 'apps' }).use(orgAuth(auth)).get('/v1/apps', async ({ org }) => ({ data: (await apps.listForOrg(org.orgId)).map(toApp) }), {
    access: 'org.read',
    response: { 200: AppList, ...errorSchemas(...ORG_AUTH_ERRORS) },
    detail: { summary: 'List the Apps of your Org', tags: ['apps'], security: BEARER_SK },
  })
}
