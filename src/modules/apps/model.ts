/** The App resource (spec 2.1) as returned by GET /v1/apps and the CLI. */
import { oneOf } from '../../core/schema'
import { t, type Static } from 'elysia'
import { ID_PATTERN } from '../../core/ids'

export const PROCESSING_MODES = ['manual', 'auto_pr'] as const
export type ProcessingMode = (typeof PROCESSING_MODES)[number]

export const App = t.Object(
  {
    id: t.String({ pattern: ID_PATTERN }),
    slug: t.String(),
    name: t.String(),
    description: t.String(),
    publicKey: t.String({ description: 'Prefix pub_. Safe to ship to browsers.' }),
    publicSubmissionEnabled: t.Boolean(),
    processingMode: oneOf(PROCESSING_MODES),
    batchEnabled: t.Boolean(),
    batchWindowHours: t.Number(),
    allowedOrigins: t.Array(t.String()),
    createdAt: t.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
)
export type App = Static<typeof App>

export const AppList = t.Object({ data: t.Array(App) }, { additionalProperties: false })
