/**
 * Column builders shared by the PostgreSQL schema tree. Timestamps stay epoch milliseconds and JSON stays
 * text, as on SQLite, so the mapping code above the repositories is the same for both dialects; only the
 * widths differ: SQLite's INTEGER is 64-bit, PostgreSQL's `integer` is 32-bit, so epoch ms, seqs and
 * anything that can pass 2^31 are `bigint` (read back as JS numbers: all stay below 2^53).
 */
import { bigint } from 'drizzle-orm/pg-core'

/** An epoch-milliseconds (or other 64-bit counter) column, read as a JS number. */
export const epochMs = (name: string) => bigint(name, { mode: 'number' })

/** A 64-bit counter (event seqs, cursors, token counts), read as a JS number. */
export const counter = (name: string) => bigint(name, { mode: 'number' })
