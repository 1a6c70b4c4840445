/**
 * GET /healthz: the process is up and serving (liveness).
 * GET /readyz: the database answers and every embedded migration is applied (readiness).
 */
import { Elysia, t } from 'elysia'
import type { Database } from 'bun:sqlite'
import { ApiError } from '../../core/errors'
import { pendingMigrations } from '../../db/migrate'
import { errorSchemas } from '../../http/error-docs'

export function healthRoutes(sqlite: Database, version: string) {
  return new Elysia({ name: 'health' })
    .get('/healthz', () => ({ status: 'ok' as const, version }), {
      response: { 200: t.Object({ status: t.Literal('ok'), version: t.String() }) },
      detail: { summary: 'Liveness', tags: ['operations'] },
    })
    .get(
      '/readyz',
      () => {
        // Reading the applied migrations is itself the database round trip.
        let pending: string[]
        try {
          pending = pendingMigrations(sqlite)
        } catch {
          throw new ApiError('not_ready', { reason: 'database unreachable' })
        }
        if (pending.length > 0) throw new ApiError('not_ready', { reason: 'migrations pending', pending })
        return { status: 'ready' as const }
      },
      {
        response: { 200: t.Object({ status: t.Literal('ready') }), ...errorSchemas('not_ready') },
        detail: { summary: 'Readiness: database reachable, migrations applied', tags: ['operations'] },
      },
    )
}
