/**
 * GET /healthz: the process is up and serving (liveness).
 * GET /readyz: every readiness check passes (readiness.ts); otherwise 503 not_ready with the failing
 * checks' reasons in error.details.
 */
import { Elysia, t } from 'elysia'
import { ApiError } from '../../core/errors'
import { errorSchemas } from '../../http/error-docs'
import type { Readiness } from './readiness'

const CheckSchema = t.Object({
  ok: t.Boolean(),
  reason: t.Optional(t.String()),
  // Cluster mode's `node` check: this node's id, the roles it holds and the live nodes it counts.
  node: t.Optional(t.String()),
  roles: t.Optional(t.Array(t.String())),
  liveNodes: t.Optional(t.Integer()),
  // The advisory `trackers` check: failing issue-tracker connections, never a reason for 503.
  advisory: t.Optional(t.Boolean()),
  failing: t.Optional(
    t.Array(t.Object({ appId: t.String(), kind: t.String(), lastError: t.Union([t.String(), t.Null()]), lastErrorAt: t.Union([t.String(), t.Null()]), retryAt: t.Union([t.String(), t.Null()]) })),
  ),
})

export function healthRoutes(readiness: Readiness, version: string) {
  return new Elysia({ name: 'health' })
    .get('/healthz', () => ({ status: 'ok' as const, version }), {
      response: { 200: t.Object({ status: t.Literal('ok'), version: t.String() }) },
      detail: { summary: 'Liveness', tags: ['operations'] },
    })
    .get(
      '/readyz',
      async () => {
        const { ready, checks } = await readiness.check()
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
          description: 'Each check is reported under `checks`; when one fails the answer is 503 not_ready and error.details.reason names it.',
          tags: ['operations'],
        },
      },
    )
}
