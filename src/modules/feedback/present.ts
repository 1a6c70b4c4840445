/** Turns stored rows into the API's feedback shapes (spec 2.2). */
import { isoUtc } from '../../core/clock'
import type { FeedbackStatus } from '../../core/fsm'
import type { FeedbackRow, ListRow } from './repo'
import type { FeedbackItem, FullFeedbackItem } from './model'
import { WITHHELD } from '../../sanitize/report'
import { isSanitized, PENDING_TEXT, servableText } from '../../sanitize/servable'
import { token } from '../../sanitize/tokens'

const isoOrNull = (ms: number | null): string | null => (ms === null ? null : isoUtc(ms))
const parseOr = <T>(json: string | null, fallback: T): T => (json === null ? fallback : (JSON.parse(json) as T))

function submittedBy(row: ListRow): FeedbackItem['submittedBy'] {
  return {
    mode: row.submittedMode as 'public' | 'private',
    externalUserId: row.externalUserId,
    email: row.email,
    name: row.submitterName,
  }
}

/**
 * A report the worker has not sanitized (still `received` or `sanitizing`, or archived before it got
 * there: no `redactions` yet) is served with its free text withheld: `text` is `[REDACTED:pending]`,
 * `url`, `userAgent`, `submissionMeta` and `componentTarget` are null and `consoleLogs` is empty. Never raw, and never sanitized here: a report within every limit
 * takes tens of milliseconds to sanitize, and the HTTP thread serves every other request meanwhile.
 * The worker sanitizes it within moments; the next read shows it. A report that failed before it could
 * be sanitized (a damaged row) says `[REDACTED:unsanitizable]` instead: it never will be.
 */
function servable(row: FeedbackRow): FeedbackRow {
  if (isSanitized(row)) return row
  const t = withheldText(row)
  return { ...row, text: t, url: null, userAgent: null, consoleLogs: null, metadata: null, componentTarget: null }
}

/** The same for a list entry, which carries only text and url of the free-text fields. */
function servableListRow(row: ListRow): ListRow {
  if (isSanitized(row)) return row
  return { ...row, text: withheldText(row), url: null }
}

const withheldText = (row: { status: string }): string => (row.status === 'failed' ? token(WITHHELD) : PENDING_TEXT)

export function toListItem(stored: ListRow): FeedbackItem {
  const row = servableListRow(stored)
  return {
    id: row.id,
    appId: row.appId,
    status: row.status as FeedbackStatus,
    submittedBy: submittedBy(row),
    severity: row.severity as FeedbackItem['severity'],
    text: row.text,
    url: row.url,
    createdAt: isoUtc(row.createdAt),
    processedAt: isoOrNull(row.processedAt),
    mergeRequestUrl: row.mergeRequestUrl,
    duplicateOfId: row.duplicateOfId,
    duplicateCount: row.duplicateCount,
    theme: row.theme,
    consolidatedText: row.consolidatedText === null ? null : servableText(row.consolidatedText, row),
    lastDuplicateAt: isoOrNull(row.lastDuplicateAt),
  }
}

/** `statusReason`: why the report waits where it is, when something holds it up (see the service). */
export function toFullItem(stored: FeedbackRow, duplicates: FeedbackRow[], statusReason: string | null = null): FullFeedbackItem {
  const row = servable(stored)
  return {
    ...toListItem(row),
    updatedAt: isoUtc(row.updatedAt),
    failureReason: row.failureReason,
    statusReason,
    attachments: parseOr(row.attachments, []),
    consoleLogs: parseOr(row.consoleLogs, []),
    userAgent: row.userAgent,
    viewport: parseOr(row.viewport, null),
    componentTarget: parseOr(row.componentTarget, null),
    submissionMeta: parseOr(row.metadata, null),
    userContext: parseOr(row.userContext, null),
    redactions: parseOr(row.redactions, {}),
    duplicates: duplicates.map((d) => ({ id: d.id, text: servableText(d.text, d), submittedBy: submittedBy(d), createdAt: isoUtc(d.createdAt) })),
  }
}
