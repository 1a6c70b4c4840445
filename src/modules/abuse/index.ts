/**
 * GET /v1/widget/challenge (pub_ key): a proof-of-work challenge for the next public request (issue 27),
 * and what else the widget needs to know of its App before the form is used (`notifyEmail`: can it mail).
 */
import { Elysia, t } from 'elysia'
import { authenticateWidget, type AuthDeps } from '../../http/auth'
import { accessGuard } from '../../http/access-guard'
import { BEARER_PUB, errorSchemas, WIDGET_AUTH_ERRORS } from '../../http/error-docs'
import { oneOf } from '../../core/schema'
import { PROOF_OF_WORK_LEVELS } from '../../abuse/difficulty'
import type { PowService } from '../../abuse/pow-service'

export const ChallengeResponse = t.Object(
  {
    required: t.Boolean({ description: 'False when the App asks no proof of work (proofOfWork off) or the request is in private mode (a valid user token)' }),
    difficulty: oneOf(PROOF_OF_WORK_LEVELS),
    challenge: t.Union(
      [
        t.Object(
          {
            algorithm: t.Literal('SHA-256'),
            challenge: t.String({ description: 'hex SHA-256 of salt + the secret number' }),
            maxnumber: t.Integer({ description: 'The number lies in [0, maxnumber]: the difficulty' }),
            salt: t.String({ description: 'Carries the App, the difficulty and the expiry (expires=<unix seconds>); send it back unchanged' }),
            signature: t.String({ description: 'hex HMAC of the challenge; send it back unchanged' }),
          },
          { additionalProperties: false, description: 'An ALTCHA (v1) challenge' },
        ),
        t.Null(),
      ],
      { description: 'Null when required is false' },
    ),
    notifyEmail: t.Boolean({
      description: 'Whether the App can send the reporter\'s "fixed" mail (it has SMTP settings): the widget offers "Email me when this is fixed" only then. Additive: older clients ignore it.',
    }),
  },
  { additionalProperties: false },
)

/** `canMail(appId)`: whether the App has SMTP settings (the mail module's answer, injected by the composition root). */
export function challengeRoutes(auth: AuthDeps, pow: PowService, canMail: (appId: string) => Promise<boolean>) {
  return new Elysia({ name: 'widget-challenge' })
    .use(accessGuard())
    .derive(async ({ request, server }) => ({ caller: await authenticateWidget(auth, request, server, 'challenge') }))
    .get(
      '/v1/widget/challenge',
      async ({ caller, set }) => {
        set.headers['cache-control'] = 'no-store'
        const notifyEmail = await canMail(caller.app.row.id)
        if (caller.user) return { required: false, difficulty: 'off' as const, challenge: null, notifyEmail }
        return { ...(await pow.challenge({ id: caller.app.row.id, proofOfWork: caller.app.row.proofOfWork }, caller.clientKey)), notifyEmail }
      },
      {
        access: 'widget',
        response: { 200: ChallengeResponse, ...errorSchemas(...WIDGET_AUTH_ERRORS) },
        detail: {
          summary: 'Get a proof-of-work challenge for the next public submission or upload URL',
          description:
            'Solve it (find number in [0, maxnumber] with SHA-256(salt + number) = challenge, as hex) and send base64(JSON {algorithm, challenge, number, salt, signature}) in X-Fixloop-Proof-Of-Work on POST /v1/feedback or POST /v1/feedback/upload-url. One solution is good for one request, for 10 minutes. The difficulty rises while the App or the address floods.',
          tags: ['widget'],
          security: BEARER_PUB,
        },
      },
    )
}
