/**
 * Everything that comes from the agent (output tail, error, summary, failure reason, log lines, PR title
 * and body) passes through one scrubber before it is stored, logged or sent: the literal values of the
 * run's secrets (the host token and every variable passed through to the agent) become `[REDACTED:agent_env]`,
 * then the sanitizer's credential rules (cloud and vendor keys, private keys, JWTs, tokens in URLs, …)
 * replace whatever else looks like a credential.
 */
import { CREDENTIAL_RULES, sanitizeText } from '../sanitize/sanitize'

/** Values shorter than this are not treated as secrets (`1`, `true`, a region name): they would blank out ordinary text. */
export const MIN_SECRET_LENGTH = 8

export type Scrub = (text: string) => string

/**
 * The run's secret values as the scrubber and the guardrails match them: distinct, at least
 * MIN_SECRET_LENGTH long, longest first (so a secret containing another is replaced whole).
 */
export function secretLiterals(secrets: (string | null | undefined)[]): string[] {
  return [...new Set(secrets.filter((s): s is string => typeof s === 'string' && s.length >= MIN_SECRET_LENGTH))].sort((a, b) => b.length - a.length)
}

export function createScrubber(secrets: (string | null | undefined)[]): Scrub {
  const literals = secretLiterals(secrets)
  return (text: string) => {
    let out = text
    for (const s of literals) out = out.split(s).join('[REDACTED:agent_env]')
    return sanitizeText(out, {}, CREDENTIAL_RULES)
  }
}
