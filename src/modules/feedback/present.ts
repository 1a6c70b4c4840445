/** Turns stored rows into the API's feedback shapes (spec 2.2). */
import { isoUtc } from '../../core/clock'
import type { FeedbackStatus } from '../../core/fsm'
import type { FeedbackRow } from './repo'
import type { FeedbackItem, FullFeedbackItem } from './model'
import { previewStored } from '../../sanitize/report'

const isoOrNull = (ms: number | null): string | null => (ms === null ? null : isoUtc(ms))
const parseOr = <T>(json: string | null, fallback: T): T => (json === null ? fallback : (JSON.parse(json) as T))

function submittedBy(row: FeedbackRow): FeedbackItem['submittedBy'] {
  return {
    mode: row.submittedMode as 'public' | 'private',
    externalUserId: row.externalUserId,
    email: row.email,
    name: row.submitterName,
  }
}

/**
 * A report the worker has not sanitized (still `received` or `sanitizing`, or archived or failed before
 * it could be: no `redactions` yet) is shown sanitized on the fly with the same rules, so no read ever
 * serves a raw value; once the worker runs it stores the same text.
 */
function servable(row: FeedbackRow): FeedbackRow {
  if (row.redactions !== null) return row
  return { ...row, ...previewStored(row, { email: row.email, name: row.submitterName, externalUserId: row.externalUserId }) }
}

export function toListItem(stored: FeedbackRow): FeedbackItem {
  const row = servable(stored)
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
    consolidatedText: row.consolidatedText,
    lastDuplicateAt: isoOrNull(row.lastDuplicateAt),
  }
}

export function toFullItem(stored: FeedbackRow, duplicates: FeedbackRow[]): FullFeedbackItem {
  const row = servable(stored)
  return {
    ...toListItem(row),
    updatedAt: isoUtc(row.updatedAt),
    failureReason: row.failureReason,
    attachments: parseOr(row.attachments, []),
    consoleLogs: parseOr(row.consoleLogs, []),
    userAgent: row.userAgent,
    viewport: parseOr(row.viewport, null),
    componentTarget: parseOr(row.componentTarget, null),
    submissionMeta: parseOr(row.metadata, null),
    userContext: parseOr(row.userContext, null),
    redactions: parseOr(row.redactions, {}),
    duplicates: duplicates.map((d) => ({ id: d.id, text: d.text, submittedBy: submittedBy(d), createdAt: isoUtc(d.createdAt) })),
  }
}
