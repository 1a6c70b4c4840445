/**
 * How much work a public submission costs: the App's level (off / normal / high) as ALTCHA's maxnumber
 * (the client hashes maxnumber / 2 times on average), raised while the App or the address floods.
 *
 * Starting values, measured in the widget's Web Worker (docs/widget.md "Abuse defence"): WebCrypto's
 * SHA-256 in a worker does roughly 150-400 thousand hashes a second on a laptop, so `normal` (100,000:
 * ~50k hashes) takes ~0.15-0.35 s and `high` (600,000: ~300k hashes) ~0.8-2 s.
 *
 * Under a flood (per node, src/abuse/flood-meter.ts): ×4 while the App's public requests (challenges asked
 * + submissions) exceed APP_FLOOD_PER_MINUTE, ×4 while the address's exceed ADDRESS_FLOOD_PER_MINUTE;
 * both: ×16. A person sends a few a minute; a bot that does the work pays 4-16 times more for each.
 */
export const PROOF_OF_WORK_LEVELS = ['off', 'normal', 'high'] as const
export type ProofOfWorkLevel = (typeof PROOF_OF_WORK_LEVELS)[number]

export const POW_MAXNUMBER: Record<Exclude<ProofOfWorkLevel, 'off'>, number> = { normal: 100_000, high: 600_000 }
export const FLOOD_FACTOR = 4
export const APP_FLOOD_PER_MINUTE = 600
export const ADDRESS_FLOOD_PER_MINUTE = 20
/** A challenge is good for this long after it is issued. */
export const POW_CHALLENGE_TTL_MS = 10 * 60_000

export interface FloodState {
  appPerMinute: number
  addressPerMinute: number
}

/** The maxnumber required now, or 0 when the App asks for no proof of work. */
export function requiredMaxnumber(level: ProofOfWorkLevel, flood: FloodState): number {
  if (level === 'off') return 0
  let n = POW_MAXNUMBER[level]
  if (flood.appPerMinute > APP_FLOOD_PER_MINUTE) n *= FLOOD_FACTOR
  if (flood.addressPerMinute > ADDRESS_FLOOD_PER_MINUTE) n *= FLOOD_FACTOR
  return n
}

export function isProofOfWorkLevel(v: unknown): v is ProofOfWorkLevel {
  return typeof v === 'string' && (PROOF_OF_WORK_LEVELS as readonly string[]).includes(v)
}
