/** SQLite's constraint errors, told apart the way bun:sqlite reports them. */

/**
 * True for a UNIQUE constraint failure; with `columns` ("table.col, table.col", as SQLite names them in
 * the message), only for that index.
 */
export function isSqliteUniqueViolation(err: unknown, columns?: string): boolean {
  let e = err as { code?: string; message?: string; cause?: unknown } | null
  // drizzle may wrap the driver's error (DrizzleQueryError), keeping it in `cause`.
  if (e && e.code === undefined && e.cause) e = e.cause as typeof e
  if (e?.code !== 'SQLITE_CONSTRAINT_UNIQUE') return false
  return columns === undefined || (e.message ?? '').includes(columns)
}
