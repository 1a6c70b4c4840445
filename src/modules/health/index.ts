/**
 * GET /healthz: the process is up and serving (liveness).
 * GET /readyz: every readiness check passes (readiness.ts); otherwise 503 not_ready with the failing
 * checks' reasons in error.details. Public (proxies pass it to load balancers): nothing that names a
 * tenant unless the operator's FIXLOOP_METRICS_TOKEN is given.
 */
import { Elysia, t } from 'elysia'
import { ApiError } from '../../core/errors'
import { errorSchemas } from '../../http/error-docs'
import { operatorToken } from '../../http/operator-token'
import type { Readiness } from './readiness'

const CheckSchema = t.Object({
  ok: t.Boolean(),
  reason: t.Optional(t.String()),
  // Cluster mode's `node` check: this node's id, the roles it holds and the live nodes it counts.
  node: t.Optional(t.String()),
  roles: t.Optional(t.Array(t.String())),
  // The partitions of Apps this node clusters (0..15; `processing` is among the roles while it holds any).
  partitions: t.Optional(t.Array(t.Integer())),
  liveNodes: t.Optional(t.Integer()),
  // Live nodes not heard on this node's Redis (a warning: the node stays ready).
  unheardPeers: t.Optional(t.Array(t.String())),
  warning: t.Optional(t.String()),
  // The advisory `trackers` check: how many issue-tracker connections fail, never a reason for 503; which
  // ones (App ids, the trackers' answers) only for the operator's FIXLOOP_METRICS_TOKEN.
  advisory: t.Optional(t.Boolean()),
  failing: t.Optional(t.Integer({ minimum: 0 })),
  connections: t.Optional(
    t.Array(t.Object({ appId: t.String(), kind: t.String(), lastError: t.Union([t.String(), t.Null()]), lastErrorAt: t.Union([t.String(), t.Null()]), retryAt: t.Union([t.String(), t.Null()]) })),
  ),
})

/** `metricsToken`: FIXLOOP_METRICS_TOKEN; given as a bearer token, /readyz adds the details that name tenants. */
export function healthRoutes(readiness: Readiness, version: string, metricsToken: string | undefined) {
  const operator = operatorToken(metricsToken)
  return new Elysia({ name: 'health' })
    .get('/healthz', () => ({ status: 'ok' as const, version }), {
      response: { 200: t.Object({ status: t.Literal('ok'), version: t.String() }) },
      detail: { summary: 'Liveness', tags: ['operations'] },
    })
    .get(
      '/readyz',
      async ({ request }) => {
        // A wrong or missing token is not an error here (a load balancer sends none): the public view.
        const { ready, checks } = await readiness.check({ details: operator(request) === 'match' })
        if (!ready) {
          const reason = Object.entries(checks)
            .filter(([, c]) => !c.ok && !c.advisory)
            .map(([name, c]) => `${name}: ${c.reason ?? 'failed'}`)
            .join('; ')
          throw new ApiError('not_ready', { reason, checks })
        }
        return { status: 'ready' as const, checks }
      },
      {
        response: { 200: t.Object({ status: t.Literal('ready'), checks: t.Record(t.String(), CheckSchema) }), ...errorSchemas('not_ready') },
        detail: {
          summary: 'Readiness: database writable, disk space, worker, checkpointer, master key, migrations',
          description:
            'Each check is reported under `checks`; when one fails the answer is 503 not_ready and error.details.reason names it (error.details.checks holds every check). The advisory `trackers` check counts failing issue-tracker connections (`failing`); with `Authorization: Bearer <FIXLOOP_METRICS_TOKEN>` it lists them too (`connections`: App id, kind, the last error).',
          tags: ['operations'],
        },
      },
    )
}
