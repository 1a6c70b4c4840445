/**
 * TypeBox schemas of the feedback routes. The same objects validate requests (Elysia compiles them)
 * and generate /openapi.json. Every object is closed (`additionalProperties: false`): the spec
 * rejects unknown fields with invalid_body.
 */
import { chars, oneOf, oneOfOrNull, int } from '../../core/schema'
import { t, type Static } from 'elysia'
import { ID_PATTERN } from '../../core/ids'
import { LIMITS } from '../../core/limits'
import { FEEDBACK_STATUSES, CUSTOMER_TARGETS } from '../../core/fsm'
import { TrackerIssueSchema } from '../trackers/model'

const closed = { additionalProperties: false } as const
const Id = t.String({ pattern: ID_PATTERN, description: '24-character lowercase hex id' })
const Severity = oneOfOrNull(['low', 'medium', 'high'])

/** Console levels a widget may send; anything else is invalid_body. */
export const CONSOLE_LEVELS = ['debug', 'trace', 'log', 'info', 'warn', 'error'] as const
/** Attachment kinds: a screenshot, a screen recording, any other file, or a session replay (at most one). */
export const ATTACHMENT_KINDS = ['screenshot', 'recording', 'attachment', 'replay'] as const
/** Where a replay attachment's scrub stands (GET /v1/feedback/:id): downloadable only when 'ready'. */
export const REPLAY_STATES = ['pending', 'ready', 'unreadable'] as const

export const Viewport = t.Object(
  { w: t.Number({ minimum: 0 }), h: t.Number({ minimum: 0 }), dpr: t.Number({ exclusiveMinimum: 0 }) },
  closed,
)

export const ConsoleLogEntry = t.Object(
  {
    level: oneOf(CONSOLE_LEVELS),
    message: chars({ maxLength: LIMITS.consoleMessageMax }),
    ts: int({ minimum: 0, description: 'Epoch milliseconds' }),
  },
  closed,
)

export const AttachmentRef = t.Object(
  {
    key: t.String({ minLength: 1, maxLength: 512 }),
    kind: oneOf(ATTACHMENT_KINDS),
    contentType: t.String({ minLength: 1, maxLength: 255 }),
    byteSize: int({ minimum: 0, description: 'At most 15 MB (413 payload_too_large above)' }),
    width: t.Optional(int({ minimum: 0 })),
    height: t.Optional(int({ minimum: 0 })),
  },
  closed,
)

const Coordinate = (min: number) => t.Number({ minimum: min, maximum: LIMITS.bboxCoordinateMax })
export const BBox = t.Object(
  { x: Coordinate(-LIMITS.bboxCoordinateMax), y: Coordinate(-LIMITS.bboxCoordinateMax), w: Coordinate(0), h: Coordinate(0) },
  { ...closed, description: 'CSS pixels relative to the page; each value within ±1,000,000' },
)

export const ComponentTarget = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: LIMITS.componentNameMax }),
    meta: t.Optional(t.Record(t.String(), t.Unknown(), { description: 'Free-form, e.g. { selector, role, text }; at most 4 KB of JSON' })),
    bbox: t.Optional(BBox),
    screenshotKey: t.Optional(t.String({ minLength: 1, maxLength: 512 })),
  },
  closed,
)

export const Identity = t.Object(
  {
    email: t.Optional(t.String({ maxLength: 320 })),
    name: t.Optional(t.String({ maxLength: 256 })),
    externalUserId: t.Optional(t.String({ maxLength: LIMITS.reporterIdMax })),
  },
  closed,
)

/** GET /v1/feedback?spam=: hide spam (default), only the spam folder, or both. */
export const SPAM_FILTERS = ['exclude', 'only', 'include'] as const
export type SpamFilter = (typeof SPAM_FILTERS)[number]

export const ClientSignals = t.Object(
  {
    honeypot: t.Optional(t.String({ maxLength: 1000, description: "The widget's hidden field's content (a person leaves it empty)" })),
    formMs: t.Optional(int({ minimum: 0, maximum: 86_400_000, description: 'Milliseconds between the form opening and its submission' })),
  },
  { ...closed, description: 'Signals of the widget (abuse defence, docs/api.md): a report that trips them is still answered 201, and classified as spam' },
)

export const SubmitBody = t.Object(
  {
    text: chars({ minLength: LIMITS.textMin, maxLength: LIMITS.textMax }),
    severity: t.Optional(Severity),
    url: t.Optional(chars({ maxLength: LIMITS.urlMax, description: 'Absolute URL of the page' })),
    userAgent: t.Optional(chars({ maxLength: LIMITS.userAgentMax })),
    viewport: t.Optional(Viewport),
    consoleLogs: t.Optional(t.Array(ConsoleLogEntry, { maxItems: LIMITS.consoleLogsMax })),
    attachments: t.Optional(t.Array(AttachmentRef, { maxItems: LIMITS.attachmentsMax })),
    componentTarget: t.Optional(ComponentTarget),
    metadata: t.Optional(t.Record(t.String(), t.Unknown(), { description: 'At most 4 KB of JSON' })),
    identity: t.Optional(Identity),
    notifyEmail: t.Optional(
      t.Boolean({
        description:
          'The reporter asks to be emailed once the report is resolved (docs/email.md). Needs identity.email (public mode) or an email in the user token\'s ctx (private mode), else 400 invalid_body. The address is stored encrypted and used only for that mail.',
      }),
    ),
    clientSignals: t.Optional(ClientSignals),
  },
  closed,
)
export type SubmitBody = Static<typeof SubmitBody>

export const SubmitResponse = t.Object({ id: Id, status: oneOf(FEEDBACK_STATUSES) }, closed)

const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()])

export const SubmittedBy = t.Object(
  {
    mode: oneOf(['public', 'private']),
    externalUserId: Nullable(t.String()),
    email: Nullable(t.String()),
    name: Nullable(t.String()),
  },
  closed,
)

export const SpamMark = t.Object(
  {
    score: t.Number({ minimum: 0, maximum: 1 }),
    reasons: t.Array(t.String(), { description: 'The signals that fired (docs/api.md "Spam classification")' }),
    markedAt: t.String({ format: 'date-time' }),
  },
  { ...closed, description: 'Set when the report is in the spam folder; null otherwise' },
)

const listMembers = {
  id: Id,
  appId: Id,
  status: oneOf(FEEDBACK_STATUSES),
  submittedBy: SubmittedBy,
  severity: Severity,
  text: t.String(),
  url: Nullable(t.String()),
  createdAt: t.String({ format: 'date-time' }),
  processedAt: Nullable(t.String({ format: 'date-time' })),
  mergeRequestUrl: t.Union([t.String(), t.Null()], {
    description:
      'The pull/merge request the agent run opened. Null on a `pr_opened` report when the run opened none: the App\'s repository is connected with `--host none` or `--pr-mode branch`, so the run pushed its branch `fixloop/<feedback id>` (the agent run\'s `branch`) and stopped there. Null in every other status.',
  }),
  duplicateOfId: Nullable(Id),
  duplicateCount: int(),
  theme: Nullable(t.String()),
  consolidatedText: Nullable(t.String()),
  lastDuplicateAt: Nullable(t.String({ format: 'date-time' })),
  suggestedDuplicateOf: Nullable(
    t.Object(
      {
        id: Id,
        score: t.Number({ minimum: 0, maximum: 1 }),
        reason: t.String(),
      },
      {
        ...closed,
        description:
          'A lead of the same App this report resembles, not close enough to merge automatically: confirm with POST /v1/feedback/:id/merge {leadId: id}, reject with POST /v1/feedback/:id/reject-suggestion. Null when there is none, once the report is a duplicate, and when the suggested lead no longer takes duplicates (archived, resolved, gone); a suggested lead merged since into another lead is shown as that lead.',
      },
    ),
  ),
  spam: Nullable(SpamMark),
  duplicateMatch: Nullable(
    t.Object(
      {
        automatic: t.Boolean({ description: 'True when clustering merged it, false for a merge by hand' }),
        score: Nullable(t.Number({ minimum: 0, maximum: 1, description: 'The merge\'s score (a merge by hand: the confirmed suggestion\'s score, else null)' })),
        reason: Nullable(t.String({ description: 'Why it was merged, e.g. "strong similarity 0.81"; null for a merge by hand of a pair not suggested' })),
      },
      { ...closed, description: 'On a duplicate: how it became one. Null on a lead.' },
    ),
  ),
  trackerIssue: t.Union([TrackerIssueSchema, t.Null()], { description: "The report's issue in the App's tracker (a duplicate shows its lead's); null when it has none. docs/trackers.md." }),
}

export const FeedbackItem = t.Object(listMembers, closed)
export type FeedbackItem = Static<typeof FeedbackItem>

export const DuplicateEntry = t.Object(
  { id: Id, text: t.String(), submittedBy: SubmittedBy, createdAt: t.String({ format: 'date-time' }) },
  closed,
)

export const FullFeedbackItem = t.Object(
  {
    ...listMembers,
    updatedAt: t.String({ format: 'date-time' }),
    failureReason: Nullable(t.String({ description: 'Why the item is failed; null otherwise' })),
    statusReason: Nullable(t.String({ description: 'Why the item waits where it is (e.g. queued on an App with no repository connected); null when it is not held up' })),
    attachments: t.Array(
      t.Object(
        {
          ...AttachmentRef.properties,
          url: t.Optional(t.String({ description: 'Short-lived download URL; a replay has one only once it is scrubbed (replayState ready)' })),
          replayState: t.Optional(
            oneOf(REPLAY_STATES, {
              description: 'Kind replay only: pending until the server has scrubbed it; ready (downloadable: the gzip of {"v":1,"events":[...]}, contentType and byteSize are the scrubbed object\'s); unreadable (not rrweb JSON or over the limits: removed)',
            }),
          ),
        },
        closed,
      ),
    ),
    consoleLogs: t.Array(ConsoleLogEntry),
    userAgent: Nullable(t.String()),
    viewport: Nullable(Viewport),
    componentTarget: Nullable(t.Object({ ...ComponentTarget.properties, screenshotUrl: t.Optional(t.String({ description: 'Short-lived download URL of screenshotKey' })) }, closed)),
    submissionMeta: Nullable(t.Record(t.String(), t.Unknown(), { description: 'The submission\'s `metadata`, as sent' })),
    userContext: Nullable(t.Record(t.String(), t.Unknown(), { description: 'Private mode: the user token\'s ctx claim' })),
    redactions: t.Record(t.String(), int(), { description: 'Per-rule counts of values the sanitizer replaced' }),
    duplicates: t.Array(DuplicateEntry, { maxItems: LIMITS.duplicatesInItemMax }),
  },
  closed,
)
export type FullFeedbackItem = Static<typeof FullFeedbackItem>

export const ListQuery = t.Object(
  {
    appId: t.Optional(Id),
    status: t.Optional(oneOf(FEEDBACK_STATUSES)),
    cursor: t.Optional(t.String({ pattern: ID_PATTERN, description: 'The id of the last item of the previous page' })),
    limit: t.Optional(t.Numeric({ minimum: LIMITS.listLimitMin, maximum: LIMITS.listLimitMax, multipleOf: 1, default: LIMITS.listLimitDefault })),
    includeDuplicates: t.Optional(t.BooleanString({ default: false })),
    spam: t.Optional(oneOf(SPAM_FILTERS, { description: 'exclude (default): hide spam; only: the spam folder; include: both' })),
  },
  closed,
)
export type ListQuery = Static<typeof ListQuery>

export const FeedbackPage = t.Object({ data: t.Array(FeedbackItem), nextCursor: Nullable(Id) }, closed)

export const IdParams = t.Object({ id: Id }, closed)

export const PatchBody = t.Object(
  {
    status: t.Optional(oneOf(CUSTOMER_TARGETS)),
    spam: t.Optional(t.Boolean({ description: 'false: not spam (restores the report into the normal lifecycle); true: mark as spam by hand. Not with status.' })),
  },
  closed,
)
export type PatchBody = Static<typeof PatchBody>

export const PatchResponse = t.Object({ id: Id, status: oneOf(FEEDBACK_STATUSES), spam: t.Optional(Nullable(SpamMark)) }, closed)
