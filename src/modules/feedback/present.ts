/** Turns stored rows into the API's feedback shapes (spec 2.2). */
import { isoUtc } from '../../core/clock'
import type { FeedbackStatus } from '../../core/fsm'
import type { FeedbackRow, ListRow } from './repo'
import type { FeedbackItem, FullFeedbackItem } from './model'
import { freeTextLength, previewStored, type StoredReport } from '../../sanitize/report'
import { isSanitized, PENDING_TEXT, servableText } from '../../sanitize/servable'
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
 * A report the worker has not sanitized (still `received` or `sanitizing`, or archived before it got
 * there: no `redactions` yet) is never served raw. Within a budget it is shown sanitized on the fly with
 * the same rules (what the worker stores later is the same text), made once per row version
 * (preview-cache.ts). The budget bounds what one read may cost the HTTP thread, which serves everyone
 * meanwhile: PREVIEW_BUDGET_CHARS of free text per request (an ordinary report is far below it; one at
 * every limit, ~510 K characters, is far above it). Past the budget the report is served pending: `text`
 * `[REDACTED:pending]`, `url`, `userAgent`, `submissionMeta` and `componentTarget` null, `consoleLogs`
 * empty; the worker sanitizes it within moments and the next read shows it.
 */
export const PREVIEW_BUDGET_CHARS = 32 * 1024

/** What previews one request may still make, in characters of free text. */
export interface PreviewBudget {
  chars: number
}
export const previewBudget = (): PreviewBudget => ({ chars: PREVIEW_BUDGET_CHARS })

/** The cached preview of `columns`, or a new one if the budget allows it; undefined: serve it pending. */
function preview(key: string, columns: StoredReport, row: ListRow, budget: PreviewBudget): StoredReport | undefined {
  const hit = previews.peek(key)
  if (hit) return hit
  const cost = freeTextLength(columns)
  if (cost > budget.chars) return undefined
  budget.chars -= cost
  return previews.get(key, () => previewStored(columns, { email: row.email, name: row.submitterName, externalUserId: row.externalUserId }))
}

function servable(row: FeedbackRow, budget: PreviewBudget): FeedbackRow {
  if (isSanitized(row)) return row
  const shown = preview(`${row.id}:${row.version}:full`, row, row, budget)
  if (shown) return { ...row, ...shown }
  return { ...row, text: PENDING_TEXT, url: null, userAgent: null, consoleLogs: null, metadata: null, componentTarget: null }
}

/** The same for a list entry, which carries only text and url of the free-text fields. */
function servableListRow(row: ListRow, budget: PreviewBudget): ListRow {
  if (isSanitized(row)) return row
  const columns = { text: row.text, url: row.url, userAgent: null, consoleLogs: null, metadata: null, componentTarget: null }
  const shown = preview(`${row.id}:${row.version}:list`, columns, row, budget)
  return { ...row, text: shown?.text ?? PENDING_TEXT, url: shown ? shown.url : null }
}

/**
 * `budget`: shared by the rows of one request (a list page). `suggestedLead`: the row's suggested lead as
 * served now (src/dedup/suggestions.ts `servedSuggestionLead`; null: none or stale).
 */
export function toListItem(stored: ListRow, budget: PreviewBudget = previewBudget(), suggestedLead: string | null = null): FeedbackItem {
  return listItemOf(servableListRow(stored, budget), suggestedLead)
}

/** The stored suggestion served with `leadId` (the lead it points at now), or null. */
function suggestionOf(row: ListRow, leadId: string | null): FeedbackItem['suggestedDuplicateOf'] {
  if (!leadId || row.duplicateOfId || row.suggestedScore === null) return null
  return { id: leadId, score: row.suggestedScore, reason: row.suggestedReason ?? '' }
}

/** How a duplicate became one (null on a lead). A merge by hand keeps merge_locked set; clustering never does. */
function matchOf(row: ListRow): FeedbackItem['duplicateMatch'] {
  if (!row.duplicateOfId) return null
  return { automatic: !row.mergeLocked, score: row.mergeScore, reason: row.mergeReason }
}

/** The spam classification as served (null: not spam). */
function spamOf(row: ListRow): FeedbackItem['spam'] {
  if (row.spamMarkedAt === null || row.spamMarkedAt === undefined) return null
  return { score: row.spamScore ?? 0, reasons: parseOr<string[]>(row.spamReasons, []), markedAt: isoUtc(row.spamMarkedAt) }
}

/** A row as served (sanitized, previewed or pending) in the list shape. */
function listItemOf(row: ListRow, suggestedLead: string | null): FeedbackItem {
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
    suggestedDuplicateOf: suggestionOf(row, suggestedLead),
    spam: spamOf(row),
    duplicateMatch: matchOf(row),
    // Filled by the feedback service (one read per page: modules/trackers/service.ts issuesFor).
    trackerIssue: null,
  }
}

/** `statusReason`: why the report waits where it is, when something holds it up (see the service). */
export function toFullItem(stored: FeedbackRow, duplicates: FeedbackRow[], statusReason: string | null = null, suggestedLead: string | null = null): FullFeedbackItem {
  const row = servable(stored, previewBudget())
  return {
    ...listItemOf(row, suggestedLead),
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
