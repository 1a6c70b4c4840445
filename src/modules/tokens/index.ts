/**
 * POST /v1/tokens/mint (sk): mints a private-mode user token signed with the App's secret (spec 4.8).
 * Whoever holds the token submits as that end user, so a dashboard session's mint is audited; an sk_
 * key's mints are its backend's everyday traffic (one per end-user session) and are not.
 */
import { Elysia, t } from 'elysia'
import { int } from '../../core/schema'
import { ApiError } from '../../core/errors'
import { ID_PATTERN } from '../../core/ids'
import { LIMITS, jsonByteLength } from '../../core/limits'
import { actedBy, orgAuth, type AuthDeps } from '../../http/auth'
import { BEARER_SK, errorSchemas, ORG_OWNER_ERRORS } from '../../http/error-docs'
import type { AuditLog } from '../audit/index'
import { mintUserToken } from '../../auth/user-token'
import type { CredentialDirectory } from '../../auth/directory'
import type { AppsRepo } from '../apps/repo'
import { identityDigest } from '../reporters/service'

export const MintQuery = t.Object({ appId: t.String({ pattern: ID_PATTERN }) }, { additionalProperties: false })
export const MintBody = t.Object(
  {
    sub: t.String({ minLength: 1, maxLength: LIMITS.reporterIdMax, description: 'The end-user id in your system' }),
    ctx: t.Optional(t.Record(t.String(), t.Unknown(), { description: 'At most 2 KB of JSON; email and name are shown as the submitter' })),
    // No schema `default`: Elysia would rebuild the body to fill it and drop an own `__proto__` member
    // unseen, where every other route refuses it as an unknown field (the handler applies the default).
    expiresInSeconds: t.Optional(int({ minimum: LIMITS.tokenLifetimeMin, maximum: LIMITS.tokenLifetimeMax, description: `Default ${LIMITS.tokenLifetimeDefault}` })),
  },
  { additionalProperties: false },
)
export const MintResponse = t.Object({ token: t.String(), expiresInSeconds: int() }, { additionalProperties: false })

/**
 * `erasureDigestKey`: the key of the audit log's identity digests (reporters/service.ts). A session's mint
 * is audited with the end user's digest, never their `sub` in clear: the log outlives an erasure of that
 * user and is exported to SIEMs; `fixloop audit digest --external-user-id SUB` matches it.
 */
export function tokenRoutes(auth: AuthDeps, apps: AppsRepo, directory: CredentialDirectory, audit: AuditLog, erasureDigestKey: Uint8Array) {
  return new Elysia({ name: 'tokens' }).use(orgAuth(auth)).post(
    '/v1/tokens/mint',
    async ({ org, query, body, request, server }) => {
      if (body.ctx !== undefined && jsonByteLength(body.ctx) > LIMITS.tokenCtxMaxBytes) {
        throw new ApiError('invalid_body', { issues: [{ path: '/ctx', message: `must be at most ${LIMITS.tokenCtxMaxBytes} bytes of JSON` }] })
      }
      const row = await apps.getForOrg(org.orgId, query.appId)
      if (!row) throw new ApiError('app_not_found')
      const known = await directory.appByPublicKey(row.publicKey)
      if (!known) throw new ApiError('app_not_found')
      const lifetime = body.expiresInSeconds ?? LIMITS.tokenLifetimeDefault
      const token = await mintUserToken(row.id, known.signingSecret, body.sub, body.ctx, lifetime, auth.clock.now())
      if (org.grant !== 'api_key') {
        const by = actedBy(auth, org, request, server)
        await audit.record({ orgId: org.orgId, actor: by.actor, ip: by.ip, action: 'token.minted', targetId: row.id, data: { identityDigest: identityDigest({ externalUserId: body.sub }, erasureDigestKey), expiresInSeconds: lifetime } })
      }
      return { token, expiresInSeconds: lifetime }
    },
    {
      access: 'tokens.mint',
      query: MintQuery,
      body: MintBody,
      parse: 'json',
      response: { 200: MintResponse, ...errorSchemas(...ORG_OWNER_ERRORS, 'invalid_body', 'app_not_found') },
      detail: {
        summary: 'Mint a private-mode user token',
        tags: ['tokens'],
        security: BEARER_SK,
      },
    },
  )
}
