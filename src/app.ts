/**
 * createApp(ctx, services, log, ops): the root Elysia app. Mounts the cross-cutting plugins and every module's
 * routes over the services built once in src/runtime/services.ts; no logic, no service construction.
 */
import { Elysia } from 'elysia'
import { openapi } from '@elysiajs/openapi'
import type { Context } from './context'
import type { Logger } from './core/logger'
import { foundation } from './http/foundation'
import { BodyBudget } from './http/body-budget'
import { widgetCors } from './http/cors-policy'
import { appRoutes } from './modules/apps/index'
import { orgFeedbackRoutes, widgetFeedbackRoutes } from './modules/feedback/index'
import { tokenRoutes } from './modules/tokens/index'
import { healthRoutes } from './modules/health/index'
import { VERSION } from './version'
import { EmbeddedBlobStore } from './blobs/embedded-store'
import { triageRoutes } from './modules/feedback/triage'
import { agentRunRoutes } from './modules/agent-runs/index'
import { embeddedUploadRoutes, uploadUrlRoutes } from './modules/uploads/index'
import { docsAssets, DOCS_INIT_PATH, DOCS_PATH, DOCS_SCRIPT_PATH, DOCS_STYLE_PATH, DOCS_THEME_PATH } from './http/docs-assets'
import { sessionRoutes } from './modules/admin-api/session-routes'
import { consoleRoutes } from './modules/admin-api/console-routes'
import { inboxRoutes } from './modules/admin-api/inbox-routes'
import { dashboardPages } from './admin-ui/pages'
import { providerSignOut, ssoRoutes } from './admin-ui/sso-routes'
import { crossSiteGuard } from './http/admin-auth'
import { assertEveryRouteDeclaresAccess } from './http/access-guard'
import { noteDeclaredQueries } from './http/url-nul'
import { noteBodylessRoutes } from './http/bodyless'
import { eventRoutes } from './modules/events/index'
import { auditRoutes } from './modules/audit/routes'
import { reporterRoutes } from './modules/reporters/index'
import { erasureDigestKey } from './modules/reporters/service'
import { webhookRoutes } from './modules/webhooks/index'
import { chatopsRoutes, slackCommandRoutes } from './modules/chatops/index'
import { gitHookRoutes } from './modules/git-hooks/index'
import { trackerHookRoutes, trackerRoutes } from './modules/trackers/index'
import { confirmRoutes, mailRoutes, meRoutes, unsubscribeRoutes } from './modules/mail/index'
import type { Services } from './runtime/services'
import { widgetAssets } from './http/widget-assets'
import { demoPage } from './http/demo-page'
import type { Readiness } from './modules/health/readiness'
import { metricsRoutes } from './modules/metrics/index'
import type { Metrics } from './modules/metrics/service'
import { rootRoutes } from './modules/health/root'
import { challengeRoutes } from './modules/abuse/index'
import { widgetConfigRoutes } from './modules/apps/widget-config'


/** The API's name and one paragraph on it: the OpenAPI document's and the explorer page's. */
const API_TITLE = 'fixloop API'
const API_DESCRIPTION =
  'Feedback intake and triage. Widget routes take an App public key (pub_); server routes take an Org API key (sk_). Errors use the envelope { error: { code, message, details? } }.'

/** Operations endpoints built by server.ts (they need the worker and the checkpointer it starts). */
export interface OpsDeps {
  readiness: Readiness
  metrics: Metrics
}

/** `demoPublicKey`: `fixloop serve --demo` gives the demo App's public key (read when /demo is requested). */
export function createApp(ctx: Context, s: Services, log: Logger, ops: OpsDeps, demoPublicKey?: () => string | undefined) {
  const { auth, directory, blobs, uploads, feedback, apps } = s
  const publicUrl = ctx.config.publicUrl

  // Strict routing: a path answers only in its one spelling (no trailing-slash or double-slash twin), so a
  // proxy rule such as nginx's `location = /metrics` covers every request that reaches the route
  // (src/http/url-path.ts says what Bun resolves before routing). standardHostname: false makes Elysia
  // find the path after "http://" instead of guessing it starts past the 11th character, which a Host
  // shorter than 4 characters broke: `Host: ab` + `/cd/metrics` was routed to /metrics.
  const app = new Elysia({ normalize: false, strictPath: true, handler: { standardHostname: false } })
    .use(foundation(log, ops.metrics.requests, ctx.config.trustProxy, new BodyBudget(ctx.config.bodyBufferBytes, ctx.config.bodyBufferPerAddressBytes * ctx.config.rateLimitMultiplier)))
    .use(crossSiteGuard(s.adminAuth))
    // Only widget routes speak CORS (src/http/cors-policy.ts): widgetCors decides the allowed origin there,
    // adds the rest and answers their preflights.
    .use(widgetCors(directory))
    .use(
      openapi({
        // The explorer page is ours (docs-assets.ts: no inline script, a strict CSP); the plugin serves the document.
        path: DOCS_PATH,
        specPath: '/openapi.json',
        provider: null,
        documentation: {
          info: {
            title: API_TITLE,
            version: VERSION,
            description: API_DESCRIPTION,
          },
          components: {
            securitySchemes: {
              publicKey: { type: 'http', scheme: 'bearer', description: 'App public key, pub_...' },
              orgKey: { type: 'http', scheme: 'bearer', description: 'Org API key, sk_...' },
              adminSession: {
                type: 'apiKey',
                in: 'cookie',
                name: 'fixloop_admin',
                description:
                  'Dashboard session (POST /admin/api/session): the cookie is __Host-fixloop_admin over https, fixloop_admin over plain http; two of them are refused. Mutations also need X-CSRF-Token. With X-Fixloop-Org: <orgId> the session may call the sk_ routes for that Org.',
              },
            },
          },
        },
        // staticFile: false so /widget.js (a route with a file extension) is documented too.
        exclude: { staticFile: false, paths: [DOCS_PATH, '/openapi.json', DOCS_SCRIPT_PATH, DOCS_STYLE_PATH, DOCS_INIT_PATH, DOCS_THEME_PATH] },
      }),
    )
    .use(docsAssets(API_TITLE, API_DESCRIPTION))
    .use(widgetAssets())
    .use(demoPublicKey ? demoPage(demoPublicKey) : new Elysia({ name: 'no-demo' }))
    .use(rootRoutes(VERSION, demoPublicKey !== undefined))
    .use(healthRoutes(ops.readiness, VERSION, ctx.config.metricsToken))
    .use(metricsRoutes(ops.metrics.registry, ctx.config.metricsToken))
    .use(challengeRoutes(auth, s.pow, async (appId) => (await s.mail.repo.smtp(appId)) !== null))
    .use(widgetConfigRoutes(auth))
    .use(widgetFeedbackRoutes(auth, s.intake))
    .use(uploadUrlRoutes(auth, uploads, publicUrl, s.pow))
    .use(blobs instanceof EmbeddedBlobStore ? embeddedUploadRoutes(uploads, blobs, async (appId) => (await directory.appById(appId)) !== null) : new Elysia({ name: 'no-embedded-uploads' }))
    .use(orgFeedbackRoutes(auth, feedback, publicUrl))
    .use(triageRoutes(auth, s.triage, feedback, publicUrl, s.audit))
    .use(agentRunRoutes(auth, s.agentRuns))
    .use(appRoutes(auth, apps))
    .use(tokenRoutes(auth, apps, directory, s.audit, erasureDigestKey(ctx.urlSigningKey)))
    .use(sessionRoutes(s.adminAuth, s.audit, s.reentry, s.throttles, s.auth.limiters.setupLink, { password: ctx.config.passwordSignIn, sso: ctx.config.sso !== undefined }, s.relyingParty ? providerSignOut(s.relyingParty, ctx.box) : undefined))
    .use(ssoRoutes({ auth: s.adminAuth, relyingParty: s.relyingParty, providerName: ctx.config.sso ? new URL(ctx.config.sso.issuer).host : undefined, passwordSignIn: ctx.config.passwordSignIn, audit: s.audit, box: ctx.box, clock: ctx.clock, log, trustProxy: ctx.config.trustProxy, starts: s.auth.limiters.ssoStart, spend: s.pow.spend }))
    .use(consoleRoutes(s.adminAuth, s.console))
    .use(
      inboxRoutes(s.adminAuth, s.inbox, s.console.orgExists, ctx.clock, (orgId, id) => s.mail.notification(orgId, id), {
        app: (orgId, appId) => ctx.store.apps.everInOrg(orgId, appId),
        feedback: async (orgId, id) => (await ctx.store.feedback.get(orgId, id)) !== undefined,
      }),
    )
    .use(dashboardPages(s.adminAuth, s.console, ctx.config.s3 ? new URL(ctx.config.s3.endpoint).origin : undefined))
    .use(eventRoutes(auth, s.events))
    .use(auditRoutes(auth, s.audit))
    .use(reporterRoutes(auth, s.reporters, publicUrl))
    .use(webhookRoutes(auth, s.webhooks))
    .use(slackCommandRoutes(s.slashCommands))
    .use(gitHookRoutes(s.gitHooks))
    .use(trackerRoutes(auth, s.trackers, publicUrl))
    .use(trackerHookRoutes(s.trackers))
    .use(chatopsRoutes(auth, s.chatops))
    .use(mailRoutes(auth, s.mail))
    .use(unsubscribeRoutes(s.mail))
    .use(confirmRoutes(s.mail))
    .use(meRoutes(auth, s.mail))

  // A /v1 or /admin/api route that says nothing about who may call it is refused here, before it can serve.
  assertEveryRouteDeclaresAccess(app.routes)
  // The query parameters each route reads, for the NUL rule at the edge (http/url-nul.ts).
  noteDeclaredQueries(app.routes)
  // The routes that take no body, so fields sent to them are refused like unknown fields (http/bodyless.ts).
  noteBodylessRoutes(app.routes)
  return app
}
