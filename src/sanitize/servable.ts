/**
 * The one gate for free text that leaves a report's row: a served `duplicates[].text`, a `/similar`
 * text, a lead's `consolidatedText`, the agent's task. A row the worker has sanitized (it has its
 * `redactions`) serves its stored text; one it has not yet (or could not) serves a token instead, so no
 * path can hand on a raw value by forgetting to check. Full reads of a pending report go through
 * `previewStored`, once per row version and within a per-request budget of characters, and are served
 * with every free-text member pending beyond it (src/modules/feedback/present.ts).
 */
import { token } from './tokens'

/** What a not-yet-sanitized row's text is served as where no preview is made. */
export const PENDING_TEXT = token('pending')

/** True once the worker has overwritten the row's free text with its sanitized values. */
export const isSanitized = (row: { redactions: string | null }): boolean => row.redactions !== null

/** The row's text as it may leave the database. */
export function servableText<T extends string | null>(text: T, row: { redactions: string | null }): T | string {
  return isSanitized(row) ? text : PENDING_TEXT
}
