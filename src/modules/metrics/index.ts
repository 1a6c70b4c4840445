/**
 * GET /metrics: Prometheus text format. When FIXLOOP_METRICS_TOKEN is set the scraper must send it as a
 * bearer token (compared in constant time); when unset the route is open, so keep it behind the proxy.
 */
import { Elysia, t } from 'elysia'
import { ApiError } from '../../core/errors'
import { errorSchemas } from '../../http/error-docs'
import { operatorToken } from '../../http/operator-token'
import type { MetricsRegistry } from './registry'

export function metricsRoutes(registry: MetricsRegistry, token: string | undefined) {
  const operator = operatorToken(token)
  return new Elysia({ name: 'metrics' }).get(
    '/metrics',
    async ({ request, set }) => {
      const auth = operator(request)
      if (auth === 'absent') throw new ApiError('missing_authorization')
      if (auth === 'mismatch') throw new ApiError('invalid_authorization')
      set.headers['content-type'] = 'text/plain; version=0.0.4; charset=utf-8'
      return await registry.render()
    },
    {
      response: { 200: t.String({ description: 'Prometheus text exposition format 0.0.4' }), ...errorSchemas('missing_authorization', 'invalid_authorization') },
      detail: { summary: 'Prometheus metrics (bearer FIXLOOP_METRICS_TOKEN when set)', tags: ['operations'] },
    },
  )
}
