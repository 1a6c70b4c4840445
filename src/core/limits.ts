/** The numeric limits of spec part 8, in one place so schemas, checks and tests agree. */
export const LIMITS = {
  textMin: 1,
  textMax: 8192,
  urlMax: 2048,
  userAgentMax: 512,
  consoleLogsMax: 500,
  consoleMessageMax: 1000,
  attachmentsMax: 10,
  metadataMaxBytes: 4096,
  /** componentTarget.meta (selector, role, text, …): bounded like metadata. */
  componentMetaMaxBytes: 4096,
  /** componentTarget.name, and each bbox coordinate's magnitude (CSS pixels). */
  componentNameMax: 512,
  bboxCoordinateMax: 1_000_000,
  requestBodyMaxBytes: 8 * 1024 * 1024,
  attachmentMaxBytes: 15 * 1024 * 1024,
  tokenCtxMaxBytes: 2048,
  /** A user token's sub and a public report's identity.externalUserId: what a reporter lookup must take too. */
  reporterIdMax: 256,
  /** A reporter's email as a lookup takes it: a ctx.email fits in ctx's 2 KB (identity.email: 320). */
  reporterEmailMax: 2048,
  tokenLifetimeMin: 60,
  tokenLifetimeDefault: 3600,
  tokenLifetimeMax: 86400,
  listLimitMin: 1,
  listLimitMax: 100,
  listLimitDefault: 50,
  duplicatesInItemMax: 200,
  /** How long an Idempotency-Key is remembered (spec part 9, additive). */
  idempotencyTtlMs: 24 * 3600 * 1000,
  idempotencyKeyMaxChars: 255,
} as const

/** Byte length of a value's JSON text: the measure of the "KB of JSON" limits. */
export function jsonByteLength(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8')
}
