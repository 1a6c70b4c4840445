/** The App resource (spec 2.1) as returned by GET /v1/apps and the CLI. */
import { oneOf } from '../../core/schema'
import { t, type Static } from 'elysia'
import { ID_PATTERN } from '../../core/ids'
import { PROOF_OF_WORK_LEVELS } from '../../abuse/difficulty'
import { PROCESSING_MODES, REPLAY_MODES, REPLAY_SECONDS_MAX, REPLAY_SECONDS_MIN, RETENTION_DAYS_MAX, SPAM_RETENTION_DAYS_MAX } from './values'

export {
  isReplayMode,
  PROCESSING_MODES,
  REPLAY_MODES,
  REPLAY_SECONDS_DEFAULT,
  REPLAY_SECONDS_MAX,
  REPLAY_SECONDS_MIN,
  RETENTION_DAYS_DEFAULT,
  RETENTION_DAYS_MAX,
  SPAM_RETENTION_DAYS_DEFAULT,
  SPAM_RETENTION_DAYS_MAX,
  type ProcessingMode,
  type ReplayMode,
} from './values'

/** The App's replay settings as the API, the CLI and GET /v1/widget/config show them. */
export const ReplaySettings = t.Object(
  {
    mode: oneOf(REPLAY_MODES, { description: 'off (default): no recording; masked: all page text and input values masked, media blocked; inputs: input values masked, page text recorded' }),
    seconds: t.Integer({ minimum: REPLAY_SECONDS_MIN, maximum: REPLAY_SECONDS_MAX, description: 'Seconds of the page the widget keeps in memory (default 60)' }),
  },
  { additionalProperties: false },
)
export type ReplaySettings = Static<typeof ReplaySettings>

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
