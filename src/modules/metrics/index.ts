/**
 * GET /metrics: Prometheus text format. When FIXLOOP_METRICS_TOKEN is set the scraper must send it as a
 * bearer token (compared in constant time); when unset the route is open, so keep it behind the proxy.
 */
import { Elysia, t } from 'elysia'
import { timingSafeEqual, createHash } from 'node:crypto'
import { ApiError } from '../../core/errors'
import { errorSchemas } from '../../http/error-docs'
import type { MetricsRegistry } from './registry'

const digest = (s: string) => createHash('sha256').update(s).digest()

export function metricsRoutes(registry: MetricsRegistry, token: string | undefined) {
  const expected = token ? digest(token) : undefined
  return new Elysia({ name: 'metrics' }).get(
    '/metrics',
    async ({ request, set }) => {
      if (expected) {
        const header = request.headers.get('authorization')
        if (!header) throw new ApiError('missing_authorization')
        const given = /^Bearer (.+)$/i.exec(header)?.[1] ?? ''
        if (!timingSafeEqual(digest(given), expected)) throw new ApiError('invalid_authorization')
      }
      set.headers['content-type'] = 'text/plain; version=0.0.4; charset=utf-8'
      return await registry.render()
    },
    {
      response: { 200: t.String({ description: 'Prometheus text exposition format 0.0.4' }), ...errorSchemas('missing_authorization', 'invalid_authorization') },
      detail: { summary: 'Prometheus metrics (bearer FIXLOOP_METRICS_TOKEN when set)', tags: ['operations'] },
    },
  )
}
