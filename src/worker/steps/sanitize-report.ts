/**
 * A report's way from `received` through `sanitizing` to `sanitized`: every free-text field overwritten
 * with its sanitized value and both moves recorded (lifecycle.moveToSanitized), in the caller's
 * transaction. `scrub` is the pure half, shared with the sanitize-ahead thread (../sanitize-ahead.ts),
 * which writes through the same lifecycle call: a report ends the same whichever of them sanitized it.
 */
import type { Clock } from '../../core/clock'
import type { FeedbackStatus } from '../../core/fsm'
import { sanitizeStored, type StoredReport } from '../../sanitize/report'
import type { ProcessRow } from '../../modules/feedback/processing-repo'
import type { ScrubbedColumns } from '../../lifecycle/rules'

/** A report's sanitized columns and redaction counts (JSON), computed from one version of its row. */
export interface Scrubbed {
  columns: StoredReport
  counts: string
}

/** Sanitizes a row's free-text columns; pure (no database), so it runs outside the write lock. */
export function scrub(row: ProcessRow): Scrubbed {
  const { columns, redactions } = sanitizeStored(
    { text: row.text, url: row.url, userAgent: row.user_agent, consoleLogs: row.console_logs, metadata: row.metadata, componentTarget: row.component_target },
    { email: row.email, name: row.submitter_name, externalUserId: row.external_user_id },
  )
  return { columns, counts: JSON.stringify(redactions) }
}

/** What sanitizing reads from a row: its result depends on these columns and nothing else. */
const SCRUB_INPUTS = ['text', 'url', 'user_agent', 'console_logs', 'metadata', 'component_target', 'email', 'submitter_name', 'external_user_id'] as const

/**
 * A row's sanitized columns computed before its transaction. Sanitizing never runs under the write lock
 * (a heavy report costs milliseconds there, and intake waits for them): the write uses this, as long as
 * the columns it was computed from are still the row's (a status move meanwhile changes none of them);
 * otherwise nothing is written (`StaleScrub`) and the caller sanitizes again, outside the lock.
 */
export interface Prescrubbed {
  id: string
  from: Pick<ProcessRow, (typeof SCRUB_INPUTS)[number]>
  scrubbed: Scrubbed
}

/**
 * Sanitizes a row now, outside any transaction, if it still holds raw values or is on its way to
 * `sanitized`. A report scrubbed ahead (still `received`, its redaction counts stored: the sanitize-ahead
 * thread, sanitizing on another node) is not sanitized again: its stored columns are the result.
 */
export function prescrub(row: ProcessRow | null): Prescrubbed | undefined {
  if (!row || (row.redactions !== null && row.status !== 'received' && row.status !== 'sanitizing')) return undefined
  const from = {} as Prescrubbed['from']
  for (const k of SCRUB_INPUTS) (from as Record<string, unknown>)[k] = row[k]
  return { id: row.id, from, scrubbed: row.redactions !== null ? storedScrub(row) : scrub(row) }
}

/** The columns of a row scrubbed ahead, as `scrub` gave them. */
function storedScrub(row: ProcessRow): Scrubbed {
  const columns: StoredReport = { text: row.text, url: row.url, userAgent: row.user_agent, consoleLogs: row.console_logs, metadata: row.metadata, componentTarget: row.component_target }
  return { columns, counts: row.redactions! }
}

/**
 * What clustering compares of a report on its way to `sanitized`: its freshly sanitized text (undefined when
 * the row is sanitized already: clustering reads the stored columns then).
 */
export function clusteringInput(row: Pick<ProcessRow, 'status'>, pre: Prescrubbed | undefined) {
  const scrubbed = row.status === 'sanitized' ? undefined : pre?.scrubbed
  const sanitized = scrubbed && {
    text: scrubbed.columns.text,
    url: scrubbed.columns.url,
    component_target: scrubbed.columns.componentTarget,
    console_logs: scrubbed.columns.consoleLogs,
    redactions: scrubbed.counts,
  }
  return { scrubbed, sanitized }
}

/** Thrown under the lock when a row needs sanitizing and was not sanitized beforehand from its columns. */
export class StaleScrub extends Error {
  constructor() {
    super('the report changed after it was sanitized outside the write lock; will retry')
  }
}

/** The sanitized columns of `row` computed beforehand, or StaleScrub: never sanitizes here. */
export function scrubbedFor(row: ProcessRow, pre: Prescrubbed | undefined): Scrubbed {
  if (!pre || pre.id !== row.id || SCRUB_INPUTS.some((k) => pre.from[k] !== row[k])) throw new StaleScrub()
  return pre.scrubbed
}

/** The row as it is once `scrubbed` is stored, at `status` and `version`. */
export function withScrubbed(row: ProcessRow, { columns, counts }: Scrubbed, status: FeedbackStatus, version: number): ProcessRow {
  return {
    ...row,
    status,
    version,
    text: columns.text,
    url: columns.url,
    user_agent: columns.userAgent,
    console_logs: columns.consoleLogs,
    metadata: columns.metadata,
    component_target: columns.componentTarget,
    redactions: counts,
  }
}

/** The SQLite processing step's writes of a report, synchronous in its transaction (the repo's SQLite side). */
/**
 * The synchronous writes sanitizing makes, inside the embedded engine's transaction (the store's
 * `sides.processing`, src/db/sqlite/processing.ts).
 */
export interface SanitizeWrites {
  move(id: string, to: FeedbackStatus, from: FeedbackStatus): boolean
  saveScrubbed(id: string, version: number, columns: StoredReport, redactions: string, now: number, processed: boolean): boolean
  moveToSanitized(id: string, version: number, columns: ScrubbedColumns, redactions: string): boolean
}

export function createSanitizeMoves(repo: SanitizeWrites, clock: Clock) {
  function moveTo(row: ProcessRow, to: FeedbackStatus): void {
    if (!repo.move(row.id, to, row.status)) throw new Error('concurrent update; will retry')
  }

  /**
   * Overwrites every free-text field with its sanitized value (`scrubbed`: computed before the
   * transaction from this same version of the row). `processed`: on the report's way to `sanitized`.
   */
  function sanitizeRow(row: ProcessRow, processed: boolean, scrubbed: Scrubbed): ProcessRow {
    const { columns, counts } = scrubbed
    if (!repo.saveScrubbed(row.id, row.version, columns, counts, clock.now(), processed)) throw new Error('concurrent update; will retry')
    // Sanitizing on the way leaves the version to the move that follows (one change, one bump).
    return withScrubbed(row, scrubbed, row.status, processed ? row.version : row.version + 1)
  }

  return {
    moveTo,
    sanitizeRow,
    /**
     * `received` (or `sanitizing`, after a crash in between) → `sanitized`, in one write of the row
     * (lifecycle.moveToSanitized); returns the row as it now is.
     */
    toSanitized(row: ProcessRow, scrubbed: Scrubbed): ProcessRow {
      if (!repo.moveToSanitized(row.id, row.version, scrubbed.columns, scrubbed.counts)) throw new Error('concurrent update; will retry')
      return withScrubbed(row, scrubbed, 'sanitized', row.version + (row.status === 'received' ? 2 : 1))
    },
  }
}
