/** The App resource (spec 2.1) as returned by GET /v1/apps and the CLI. */
import { oneOf } from '../../core/schema'
import { t, type Static } from 'elysia'
import { ID_PATTERN } from '../../core/ids'
import { PROOF_OF_WORK_LEVELS } from '../../abuse/difficulty'

/** The spam folder's retention in days: 0 keeps spam forever; at most ten years. */
export const SPAM_RETENTION_DAYS_DEFAULT = 30
export const SPAM_RETENTION_DAYS_MAX = 3650
/** A report's retention in days: 0 (the default) keeps reports forever; at most ten years. */
export const RETENTION_DAYS_DEFAULT = 0
export const RETENTION_DAYS_MAX = 3650

/**
 * Session replay the widget records (issue 39, docs/api.md "Session replay"): off by default, so nothing
 * changes for an App that does not turn it on. `masked` masks every text node and input value and blocks
 * media; `inputs` masks input values only. The widget keeps the last `seconds` of the page in memory.
 */
export const REPLAY_MODES = ['off', 'masked', 'inputs'] as const
export type ReplayMode = (typeof REPLAY_MODES)[number]
export const REPLAY_SECONDS_DEFAULT = 60
export const REPLAY_SECONDS_MIN = 10
export const REPLAY_SECONDS_MAX = 300

export function isReplayMode(v: unknown): v is ReplayMode {
  return typeof v === 'string' && (REPLAY_MODES as readonly string[]).includes(v)
}

/** The App's replay settings as the API, the CLI and GET /v1/widget/config show them. */
export const ReplaySettings = t.Object(
  {
    mode: oneOf(REPLAY_MODES, { description: 'off (default): no recording; masked: all page text and input values masked, media blocked; inputs: input values masked, page text recorded' }),
    seconds: t.Integer({ minimum: REPLAY_SECONDS_MIN, maximum: REPLAY_SECONDS_MAX, description: 'Seconds of the page the widget keeps in memory (default 60)' }),
  },
  { additionalProperties: false },
)
export type ReplaySettings = Static<typeof ReplaySettings>

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
    proofOfWork: oneOf(PROOF_OF_WORK_LEVELS, {
      description: 'Proof of work asked of public-mode submissions and upload URLs (GET /v1/widget/challenge); off by default, so a client that knows nothing of it keeps working',
    }),
    spamEvents: t.Boolean({ description: 'Whether reports classified as spam still emit events (webhooks, Slack, the feed); default false' }),
    spamRetentionDays: t.Integer({ minimum: 0, maximum: SPAM_RETENTION_DAYS_MAX, description: 'Days a report stays in the spam folder before it is deleted with its attachments (0: kept forever); default 30' }),
    retentionDays: t.Integer({ minimum: 0, maximum: RETENTION_DAYS_MAX, description: 'Days a report is kept before it is deleted with its attachments (0: kept forever); default 0' }),
    replay: ReplaySettings,
    createdAt: t.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
)
export type App = Static<typeof App>

export const AppList = t.Object({ data: t.Array(App) }, { additionalProperties: false })
