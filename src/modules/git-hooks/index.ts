/**
 * POST /v1/git-hooks/:appId: the git host's webhook (GitHub, Gitea/Forgejo, GitLab) for the pull/merge
 * requests fixloop opened. No key: the host signs each delivery with the App's webhook secret.
 */
import { Elysia, t } from 'elysia'
import { ID_PATTERN } from '../../core/ids'
import { accessGuard } from '../../http/access-guard'
import { errorSchemas } from '../../http/error-docs'
import { jsonDepthExceeds, MAX_JSON_DEPTH, readBodyBounded } from '../../http/strict-json'
import { ApiError } from '../../core/errors'
import type { GitHooksService } from './service'

/** Pull-request events are a few tens of KB; a delivery over this is refused (413) before it is verified. */
export const GIT_HOOK_BODY_MAX_BYTES = 1024 * 1024

export function gitHookRoutes(hooks: GitHooksService) {
  return new Elysia({ name: 'git-hooks' }).use(accessGuard()).post(
    '/v1/git-hooks/:appId',
    async ({ params, request }) => {
      // The raw bytes, as the host signed them (the JSON reader leaves this route alone).
      const raw = await readBodyBounded(request, GIT_HOOK_BODY_MAX_BYTES)
      if (jsonDepthExceeds(raw)) throw new ApiError('invalid_body', { issues: [{ path: '/', message: `JSON nested deeper than ${MAX_JSON_DEPTH} levels` }] })
      return { received: true as const, ...(await hooks.receive(params.appId, request.headers, raw)) }
    },
    {
      access: 'git_host_signature',
      params: t.Object({ appId: t.String({ pattern: ID_PATTERN }) }, { additionalProperties: false }),
      response: {
        200: t.NoValidate(
          t.Object({
            received: t.Literal(true),
            outcome: t.String({ description: 'moved | unchanged | deferred | replayed | ignored | review_queued | review_refused' }),
            reason: t.Optional(t.String()),
            position: t.Optional(t.Integer({ minimum: 1, description: 'review_queued: how many reviews of this pull request wait for an iteration, this one included' })),
          }),
        ),
        ...errorSchemas('invalid_id', 'invalid_authorization', 'invalid_body', 'payload_too_large'),
      },
      detail: {
        summary: 'Git host webhook (called by GitHub, Gitea/Forgejo or GitLab)',
        description:
          "Verified with the App's webhook secret (`fixloop app connect-repo` prints it once; `fixloop app rotate-webhook-secret` replaces it): GitHub `X-Hub-Signature-256`, Gitea `X-Gitea-Signature` / Forgejo `X-Forgejo-Signature` (hex HMAC-SHA256 of the body), GitLab `X-Gitlab-Token`. A delivery id seen before is acknowledged and ignored; a delivery about a pull request fixloop did not open changes nothing. docs/agents.md \"Following the pull request\".",
        tags: ['agent runs'],
        requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', description: "The host's webhook payload (pull_request, pull_request_review, issue_comment, Merge Request Hook, Note Hook)" } } } },
      },
    },
  )
}
