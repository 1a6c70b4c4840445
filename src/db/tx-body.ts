/**
 * One transaction body for both dialects (issue 37, point 4): the generator technique of Babel's
 * `gensync`. A body is a generator that `yield`s the operations it needs (a statement, a dialect's own
 * step, work for after the commit) and receives each result back; the logic between the yields (the
 * rules, the branches, the loops) is written once. Each dialect has a driver that runs bodies:
 *
 * - SQLite (src/db/sqlite/tx-body.ts) answers every operation at once, synchronously, with bun:sqlite's
 *   prepared statements: a body runs inside a synchronous transaction and never awaits (a SQLite
 *   transaction must not yield the thread: another caller's statements would join it);
 * - PostgreSQL (src/db/pg/tx-body.ts) awaits each operation on the transaction's client (a `PgTx`).
 *
 * A body composes others with `yield*` (`const moved = yield* lifecycle.move(…)`), which is also how it
 * reads a typed result: `const row = yield* get<Row>(STATE, id)`. SQL is written ONCE with `?`
 * placeholders (`sql(…)`, at module level: the PostgreSQL text `$1…` is made once, at construction);
 * where PostgreSQL needs another text (a `FOR UPDATE`, a cast), the statement carries its variant
 * (`sql(text, pgText)`, or a named helper such as `lockingRead`). Where the dialects take truly different
 * steps (how an event gets its seq), the body yields `native(…)`: a step each dialect's side supplies.
 *
 * A statement that fails is thrown back into the body at its `yield` (so `try/finally` works); on
 * PostgreSQL the transaction is aborted by then, so a body does not catch a statement's error to go on.
 */

/** A statement written once: `?` placeholders (or `?NNN`), and the PostgreSQL text numbered `$1…`. */
export interface Sql {
  /** The text SQLite runs (and the key of its prepared statement). */
  readonly sqlite: string
  /** The text PostgreSQL runs: placeholders numbered, made once when the statement is declared. */
  readonly pg: string
}

/**
 * A statement for both dialects. `pgText` (also with `?` placeholders) when PostgreSQL needs a text of
 * its own. Declare statements once, at module level: the conversion runs here, not per call.
 */
export function sql(text: string, pgText: string = text): Sql {
  return { sqlite: text, pg: numberPlaceholders(pgText) }
}

/** A read whose rows the transaction then writes: PostgreSQL locks them (`FOR UPDATE`); SQLite has one writer. */
export function lockingRead(text: string): Sql {
  return sql(text, `${text} FOR UPDATE`)
}

/**
 * `?` → `$1`, `$2`, … (and `?NNN` → `$NNN`), outside quoted strings and identifiers. Mixing the two
 * forms is refused (SQLite numbers a bare `?` after the largest `?NNN`, PostgreSQL would not).
 */
export function numberPlaceholders(text: string): string {
  let out = ''
  let n = 0
  let numbered = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === "'" || c === '"') {
      const end = text.indexOf(c, i + 1)
      if (end < 0) throw new Error(`unterminated ${c} in SQL: ${text}`)
      out += text.slice(i, end + 1)
      i = end // a doubled quote ('') is two literals back to back: the same text
      continue
    }
    if (c !== '?') {
      out += c
      continue
    }
    let digits = ''
    while (i + 1 < text.length && text[i + 1] >= '0' && text[i + 1] <= '9') digits += text[++i]
    if (digits) numbered = true
    else n++
    if (numbered && n > 0) throw new Error(`SQL mixes ? and ?NNN placeholders: ${text}`)
    out += `$${digits || n}`
  }
  return out
}

/**
 * How a repository written once (src/db/bodies/) runs its bodies on its store; each dialect makes one
 * (src/db/sqlite/tx-body.ts `sqliteRunner`, src/db/pg/tx-body.ts `pgRunner`).
 */
export interface BodyRunner {
  /** Outside a transaction: each statement on its own (reads, a single write). No `native` steps. */
  read<T>(body: Body<T>): Promise<T>
  /** One transaction: on SQLite BEGIN IMMEDIATE (a savepoint inside the caller's), on PostgreSQL a pooled connection's. */
  transaction<T>(body: Body<T>): Promise<T>
}

/** What a body asks its driver for. */
export type Op =
  | { readonly kind: 'get' | 'all' | 'run'; readonly sql: Sql; readonly params: readonly unknown[] }
  | { readonly kind: 'native'; readonly step: (tx: never) => unknown }
  | { readonly kind: 'afterCommit'; readonly callback: () => void }

/** A transaction body that returns `T`: run it with the dialect's driver, or `yield*` it from another body. */
export type Body<T> = Generator<Op, T, unknown>

/** The first row of a statement, or undefined. */
export function* get<T>(statement: Sql, ...params: unknown[]): Body<T | undefined> {
  return (yield { kind: 'get', sql: statement, params }) as T | undefined
}

/** Every row of a statement. */
export function* all<T>(statement: Sql, ...params: unknown[]): Body<T[]> {
  return (yield { kind: 'all', sql: statement, params }) as T[]
}

/** Runs a statement: the number of rows it changed. */
export function* run(statement: Sql, ...params: unknown[]): Body<number> {
  return (yield { kind: 'run', sql: statement, params }) as number
}

/**
 * A step the dialect's side takes its own way, given the driver's transaction (bun:sqlite's `Database`,
 * or a `PgTx`). On SQLite it must answer synchronously (the driver refuses a promise). Only a dialect's
 * own code builds one (a shared body receives it from the side it is given): the type of `tx` says which.
 */
export function* native<T, Tx>(step: (tx: Tx) => T | Promise<T>): Body<T> {
  return (yield { kind: 'native', step: step as (tx: never) => unknown }) as T
}

/**
 * Work for after the commit (a wake signal). PostgreSQL runs it once the transaction has committed
 * (never after a rollback); SQLite at once, as its lifecycle always did: the transaction is synchronous,
 * so nothing on this thread runs before it ends.
 */
export function* afterCommit(callback: () => void): Body<void> {
  yield { kind: 'afterCommit', callback }
}
