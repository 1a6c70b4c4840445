/** The inbox query's SQL pieces both dialects use (src/db/sqlite/inbox.ts, src/db/pg/inbox.ts). */
/** The folder's spam condition: the spam folder shows only spam (its small partial index), the others none. */
export const spamCondition = (folder: string | undefined): string => (folder === 'spam' ? 'f.spam_marked_at IS NOT NULL' : 'f.spam_marked_at IS NULL')

export const HAS_SCREENSHOT = `(f.component_target LIKE '%"screenshotKey"%' OR f.attachments LIKE '%"kind":"screenshot"%')`

