/**
 * The App settings' plain values (bounds, modes, defaults), apart from the App's API schema (model.ts,
 * which re-exports them): the schema is built with Elysia's TypeBox, which the CLI commands and the
 * repositories need not load (~5 ms CPU of each command).
 */
/** The spam folder's retention in days: 0 keeps spam forever; at most ten years. */
export const SPAM_RETENTION_DAYS_DEFAULT = 30
export const SPAM_RETENTION_DAYS_MAX = 3650
/** A report's retention in days: 0 (the default) keeps reports forever; at most ten years. */
export const RETENTION_DAYS_DEFAULT = 0
export const RETENTION_DAYS_MAX = 3650

/**
 * Session replay the widget records (issue 39, docs/api.md "Session replay"): off by default, so nothing
 * changes for an App that does not turn it on. `masked` masks every text node and input value and blocks
 * media; `inputs` masks input values only. The widget keeps the last `seconds` of the page in memory.
 */
export const REPLAY_MODES = ['off', 'masked', 'inputs'] as const
export type ReplayMode = (typeof REPLAY_MODES)[number]
export const REPLAY_SECONDS_DEFAULT = 60
export const REPLAY_SECONDS_MIN = 10
export const REPLAY_SECONDS_MAX = 300

export function isReplayMode(v: unknown): v is ReplayMode {
  return typeof v === 'string' && (REPLAY_MODES as readonly string[]).includes(v)
}

export const PROCESSING_MODES = ['manual', 'auto_pr'] as const
export type ProcessingMode = (typeof PROCESSING_MODES)[number]
