/**
 * GET /v1/widget/config (pub_ key): what the widget must know of its App at page load, before any report
 * is written (issue 39). Today that is the App's session replay settings: the recorder starts at load, so
 * it cannot wait for the challenge the form asks for on send.
 *
 * Same credentials, Origin rule and CORS as GET /v1/widget/challenge, with its own per-address buckets of
 * the same size (http/auth.ts `config`). The answer is the same for every caller of the App, so the
 * browser may keep it for a minute: a settings change reaches widgets within that minute.
 */
import { Elysia, t } from 'elysia'
import { authenticateWidget, type AuthDeps } from '../../http/auth'
import { accessGuard } from '../../http/access-guard'
import { BEARER_PUB, errorSchemas, WIDGET_AUTH_ERRORS } from '../../http/error-docs'
import { ReplaySettings } from './model'
import { replayOf } from './repo'

/** How long a browser may reuse the answer (seconds). */
export const WIDGET_CONFIG_MAX_AGE = 60

export const WidgetConfig = t.Object(
  {
    replay: ReplaySettings,
  },
  { additionalProperties: false, description: 'Additive: a widget ignores fields it does not know' },
)

export function widgetConfigRoutes(auth: AuthDeps) {
  return new Elysia({ name: 'widget-config' })
    .use(accessGuard())
    .derive(async ({ request, server }) => ({ caller: await authenticateWidget(auth, request, server, 'config') }))
    .get(
      '/v1/widget/config',
      ({ caller, set }) => {
        // private: only the browser keeps it (the request carries a key); Vary: another App's key on
        // the same page asks again rather than reading this App's answer.
        set.headers['cache-control'] = `private, max-age=${WIDGET_CONFIG_MAX_AGE}`
        set.headers.vary = 'Origin, Authorization, X-Service-User-Token'
        return { replay: replayOf(caller.app.row) }
      },
      {
        access: 'widget',
        response: { 200: WidgetConfig, ...errorSchemas(...WIDGET_AUTH_ERRORS) },
        detail: {
          summary: "Get the App's settings the widget needs at page load (session replay)",
          description:
            'Answers {"replay": {"mode", "seconds"}}: with mode off the widget records nothing; masked or inputs, it keeps the last `seconds` of the page in memory and uploads them (kind "replay") only when a report is sent. Cache-Control: private, max-age=60.',
          tags: ['widget'],
          security: BEARER_PUB,
        },
      },
    )
}
