/**
 * How much work a public submission costs: the App's level (off / normal / high) as ALTCHA's maxnumber
 * (the client hashes maxnumber / 2 times on average), raised while the App or the address floods and
 * once an address has spent its report budget.
 *
 * Starting values, measured in the widget's Web Worker (docs/widget.md "Abuse defence"): WebCrypto's
 * SHA-256 in a worker does roughly 150-400 thousand hashes a second on a laptop, so `normal` (100,000:
 * ~50k hashes) takes ~0.15-0.35 s and `high` (600,000: ~300k hashes) ~0.8-2 s.
 *
 * What raises it (src/abuse/flood-meter.ts; in a cluster every node's counts, shared-flood-meter.ts), counting only work that was solved and spent, never
 * challenges asked (a challenge costs its asker nothing, so counting it let anyone raise everyone's
 * difficulty for free), and each count decaying by itself once the sender stops:
 * - ×4 while the App's spent solutions exceed APP_FLOOD_PER_MINUTE, ×4 while the address key's exceed
 *   ADDRESS_FLOOD_PER_MINUTE (both: ×16). A person sends a few a minute;
 * - the report budget: an address key (an IPv6 /64, src/http/client-address.ts) that sent more than
 *   ADDRESS_FREE_REPORTS reports to the App within the last REPORT_BUDGET_WINDOW_MS pays ×2 for each
 *   report over it, up to ×BUDGET_FACTOR_MAX. A person reports a bug or two; a bot that does the widget's
 *   work and sends its signals cannot claim to be a new sender, so its 11th junk report of the hour costs
 *   it twice as much, its 16th 64 times (bench/pow-budget.ts).
 */
export const PROOF_OF_WORK_LEVELS = ['off', 'normal', 'high'] as const
export type ProofOfWorkLevel = (typeof PROOF_OF_WORK_LEVELS)[number]

export const POW_MAXNUMBER: Record<Exclude<ProofOfWorkLevel, 'off'>, number> = { normal: 100_000, high: 600_000 }
export const FLOOD_FACTOR = 4
export const APP_FLOOD_PER_MINUTE = 600
export const ADDRESS_FLOOD_PER_MINUTE = 20
/** Reports an address key sends to one App within REPORT_BUDGET_WINDOW_MS at the App's own difficulty. */
export const ADDRESS_FREE_REPORTS = 10
export const REPORT_BUDGET_WINDOW_MS = 60 * 60_000
export const BUDGET_FACTOR_MAX = 64
/** A challenge is good for this long after it is issued. */
export const POW_CHALLENGE_TTL_MS = 10 * 60_000

export interface FloodState {
  /** Solutions spent on the App over the last minute (all addresses). */
  appPerMinute: number
  /** Solutions the address key spent on the App over the last minute. */
  addressPerMinute: number
  /** Reports the address key sent the App over the last REPORT_BUDGET_WINDOW_MS (0 when not known). */
  addressReports?: number
}

/**
 * The report budget's factor for the next report of an address key that sent `addressReports` within the
 * window: 1 for the first ADDRESS_FREE_REPORTS, then ×2 for each report over them, at most BUDGET_FACTOR_MAX.
 */
export function budgetFactor(addressReports: number): number {
  const over = Math.floor(addressReports) + 1 - ADDRESS_FREE_REPORTS
  return over <= 0 ? 1 : Math.min(BUDGET_FACTOR_MAX, 2 ** over)
}

/** The maxnumber required now, or 0 when the App asks for no proof of work. */
export function requiredMaxnumber(level: ProofOfWorkLevel, flood: FloodState): number {
  if (level === 'off') return 0
  let n = POW_MAXNUMBER[level]
  if (flood.appPerMinute > APP_FLOOD_PER_MINUTE) n *= FLOOD_FACTOR
  if (flood.addressPerMinute > ADDRESS_FLOOD_PER_MINUTE) n *= FLOOD_FACTOR
  return n * budgetFactor(flood.addressReports ?? 0)
}

export function isProofOfWorkLevel(v: unknown): v is ProofOfWorkLevel {
  return typeof v === 'string' && (PROOF_OF_WORK_LEVELS as readonly string[]).includes(v)
}
