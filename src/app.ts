/**
 * createApp(deps): the root Elysia app. Mounts the cross-cutting plugins and the modules; no logic.
 */
import { Elysia } from 'elysia'
import { cors } from '@elysiajs/cors'
import { openapi } from '@elysiajs/openapi'
import type { Context } from './context'
import { Logger } from './core/logger'
import { GroupCommitter } from './db/group-commit'
import { CredentialDirectory } from './auth/directory'
import { ApiError } from './core/errors'
import { foundation } from './http/foundation'
import { createRateLimiters } from './http/rate-limit'
import { corsOrigin, WIDGET_CORS_HEADERS } from './http/cors-policy'
import type { AuthDeps } from './http/auth'
import { createAppsRepo } from './modules/apps/repo'
import { appRoutes } from './modules/apps/index'
import { createFeedbackService } from './modules/feedback/service'
import { orgFeedbackRoutes, widgetFeedbackRoutes } from './modules/feedback/index'
import { tokenRoutes } from './modules/tokens/index'
import { healthRoutes } from './modules/health/index'
import { VERSION } from './version'
import { createBlobStore } from './storage/index'
import { EmbeddedBlobStore } from './storage/embedded-store'
import { createClusterService } from './cluster/service'
import { triageRoutes } from './modules/feedback/triage'
import { agentRunRoutes } from './modules/agent-runs/index'
import { createUploadsService } from './modules/uploads/service'
import { embeddedUploadRoutes, uploadUrlRoutes } from './modules/uploads/index'
import { docsAssets, DOCS_SCRIPT_PATH, DOCS_STYLE_PATH } from './http/docs-assets'
import { createAdminsService } from './modules/admins/service'
import { createSessionStore } from './modules/admins/sessions'
import { createKeyActivity } from './modules/admins/key-activity'
import { createAuditLog } from './modules/audit/index'
import { createConsoleService } from './modules/admin-api/console'
import { createInbox } from './modules/admin-api/inbox'
import { sessionRoutes } from './modules/admin-api/session-routes'
import { consoleRoutes } from './modules/admin-api/console-routes'
import { inboxRoutes } from './modules/admin-api/inbox-routes'
import { dashboardPages } from './admin-ui/pages'
import { crossSiteGuard, type AdminAuthDeps } from './http/admin-auth'

export interface AppDeps {
  ctx: Context
  log: Logger
  /** Called after each group commit of new work, so the worker picks it up at once. */
  onNewWork?: () => void
}

export function createApp({ ctx, log, onNewWork }: AppDeps) {
  const directory = new CredentialDirectory(ctx.sqlite, ctx.box)
  const limiters = createRateLimiters(ctx.clock, ctx.config.rateLimitMultiplier)
  const committer = new GroupCommitter(ctx.sqlite)
  committer.onCommit = onNewWork
  const admins = createAdminsService(ctx.sqlite, ctx.box, ctx.clock)
  const audit = createAuditLog(ctx.sqlite, ctx.clock)
  const adminAuth: AdminAuthDeps = { admins, sessions: createSessionStore(ctx.sqlite, ctx.clock), publicUrl: ctx.config.publicUrl, trustProxy: ctx.config.trustProxy }
  const console_ = createConsoleService(ctx, admins, audit)
  const auth: AuthDeps = {
    directory,
    limiters,
    clock: ctx.clock,
    trustProxy: ctx.config.trustProxy,
    admin: { ...adminAuth, orgExists: console_.orgExists },
    keyUsed: createKeyActivity(ctx.sqlite, ctx.clock),
  }
  const apps = createAppsRepo(ctx.db)
  const store = createBlobStore(ctx)
  const uploads = createUploadsService(ctx.sqlite, store, committer, ctx.clock, log, ctx.config.uploadGraceHours * 3600_000)
  const feedback = createFeedbackService(ctx, committer, uploads)
  const cluster = createClusterService(ctx.sqlite, ctx.clock)
  const checkAppInOrg = (orgId: string, appId: string) => {
    if (!apps.getForOrg(orgId, appId)) throw new ApiError('app_not_found')
  }

  const app = new Elysia({ normalize: false })
    .use(foundation(log))
    .use(crossSiteGuard(adminAuth))
    .use(
      cors({
        origin: corsOrigin(directory),
        methods: ['POST', 'PUT'],
        allowedHeaders: WIDGET_CORS_HEADERS,
        exposeHeaders: ['X-Request-Id', 'Retry-After', 'Idempotent-Replayed'],
        credentials: false,
        maxAge: 600,
      }),
    )
    .use(
      openapi({
        path: '/docs',
        specPath: '/openapi.json',
        provider: 'swagger-ui',
        swagger: { cdn: DOCS_SCRIPT_PATH, theme: DOCS_STYLE_PATH, version: '' },
        documentation: {
          info: {
            title: 'fixloop API',
            version: VERSION,
            description: 'Feedback intake and triage. Widget routes take an App public key (pub_); server routes take an Org API key (sk_). Errors use the envelope { error: { code, message, details? } }.',
          },
          components: {
            securitySchemes: {
              publicKey: { type: 'http', scheme: 'bearer', description: 'App public key, pub_...' },
              orgKey: { type: 'http', scheme: 'bearer', description: 'Org API key, sk_...' },
              adminSession: {
                type: 'apiKey',
                in: 'cookie',
                name: 'fixloop_admin',
                description: 'Dashboard session (POST /admin/api/session). Mutations also need X-CSRF-Token. With X-Fixloop-Org: <orgId> the session may call the sk_ routes for that Org.',
              },
            },
          },
        },
        exclude: { paths: ['/docs', '/openapi.json', DOCS_SCRIPT_PATH, DOCS_STYLE_PATH] },
      }),
    )
    .use(docsAssets())
    .use(healthRoutes(ctx.sqlite, VERSION))
    .use(widgetFeedbackRoutes(auth, feedback))
    .use(uploadUrlRoutes(auth, uploads, ctx.config.publicUrl))
    .use(store instanceof EmbeddedBlobStore ? embeddedUploadRoutes(uploads, store) : new Elysia({ name: 'no-embedded-uploads' }))
    .use(orgFeedbackRoutes(auth, feedback, checkAppInOrg, ctx.config.publicUrl))
    .use(triageRoutes(auth, cluster, feedback, ctx.config.publicUrl))
    .use(agentRunRoutes(auth, ctx.sqlite))
    .use(appRoutes(auth, apps))
    .use(tokenRoutes(auth, apps, directory))
    .use(sessionRoutes(adminAuth, audit, ctx.clock, ctx.config.rateLimitMultiplier))
    .use(consoleRoutes(adminAuth, console_))
    .use(inboxRoutes(adminAuth, createInbox(ctx.sqlite), console_.orgExists, ctx.clock))
    .use(dashboardPages(adminAuth, ctx.sqlite))

  return { app, committer, directory, limiters, uploads, cluster, admins }
}
