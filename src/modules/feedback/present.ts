/** Turns stored rows into the API's feedback shapes (spec 2.2). */
import { isoUtc } from '../../core/clock'
import type { FeedbackStatus } from '../../core/fsm'
import type { FeedbackRow, ListRow } from './repo'
import type { FeedbackItem, FullFeedbackItem } from './model'
import { previewStored } from '../../sanitize/report'
import { isSanitized, servableText } from '../../sanitize/servable'
import { previews } from './preview-cache'

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
 * A report the worker has not sanitized (still `received` or `sanitizing`, or archived or failed before
 * it could be: no `redactions` yet) is shown sanitized on the fly with the same rules, so no read ever
 * serves a raw value; once the worker runs it stores the same text. The preview is made once per row
 * version (preview-cache.ts), not on every read.
 */
function servable(row: FeedbackRow): FeedbackRow {
  if (isSanitized(row)) return row
  const preview = previews.get(`${row.id}:${row.version}:full`, () =>
    previewStored(row, { email: row.email, name: row.submitterName, externalUserId: row.externalUserId }),
  )
  return { ...row, ...preview }
}

/** The same for a list entry, which carries only text and url of the free-text fields. */
function servableListRow(row: ListRow): ListRow {
  if (isSanitized(row)) return row
  const preview = previews.get(`${row.id}:${row.version}:list`, () =>
    previewStored(
      { text: row.text, url: row.url, userAgent: null, consoleLogs: null, metadata: null, componentTarget: null },
      { email: row.email, name: row.submitterName, externalUserId: row.externalUserId },
    ),
  )
  return { ...row, text: preview.text, url: preview.url }
}

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
