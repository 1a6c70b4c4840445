/**
 * The double opt-in's numbers and its one decision (docs/email.md "Confirming a public-mode address"):
 * how long a confirmation link works, and how many confirmation mails an App and an address may get. Pure,
 * so the rule is the same whichever node or dialect runs the mailer.
 */

/** A confirmation link works this long; a report's mail waits this long for the click, then is `unconfirmed`. */
export const CONFIRM_TTL_MS = 7 * 24 * 3_600_000
/** At most this many confirmation mails per App per hour (an attacker's list of addresses goes nowhere fast). */
export const CONFIRM_PER_APP_PER_HOUR = 20
/** At most this many confirmation mails to one (normalized) address per day, all Apps of the instance together. */
export const CONFIRM_PER_ADDRESS_PER_DAY = 3
export const HOUR_MS = 3_600_000
export const DAY_MS = 24 * HOUR_MS

/**
 * Whether a confirmation mail may go now, given what was sent in the windows: `app` / `address` name the
 * limit that is reached (the confirmation then ends `limited`, without a mail; a later report may ask again).
 */
export function confirmationAllowed(sentByAppLastHour: number, sentToAddressLastDay: number): 'ok' | 'app' | 'address' {
  if (sentByAppLastHour >= CONFIRM_PER_APP_PER_HOUR) return 'app'
  if (sentToAddressLastDay >= CONFIRM_PER_ADDRESS_PER_DAY) return 'address'
  return 'ok'
}
