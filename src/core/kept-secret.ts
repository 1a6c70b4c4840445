/**
 * When an update of settings may keep a stored secret it omits (a tracker token, an SMTP password, a git
 * host token). The secret was given for one destination; an update that points the settings elsewhere
 * (another kind of service, URL, host, port or TLS mode) and kept it would send it there, maybe in clear,
 * to whoever asked for the change. So keeping it is allowed only while the destination is unchanged;
 * otherwise the caller must give the secret again (docs/security.md "Stored secrets").
 */

/** Where a secret is sent: named settings, compared as given (normalise them first: lower-case hosts, no trailing slash). */
export type Destination = Record<string, string | number | null>

/** The names of the destination settings that differ between the stored settings and the update. */
export function changedDestination(stored: Destination, update: Destination): string[] {
  return Object.keys(update).filter((name) => stored[name] !== update[name])
}

/** The refusal's message: which secret must be given again, and why. */
export function secretRequiredAgain(secret: string, changed: readonly string[]): string {
  return `${secret} is required again: ${changed.join(', ')} changed, and the stored ${secret} is only sent where it was given for`
}
