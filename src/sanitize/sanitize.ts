/**
 * Applies the rule table to a string or a JSON value, counting replacements per rule.
 */
import { RULES, token, type Rule } from './rules'

export type RedactionCounts = Record<string, number>

export function sanitizeText(text: string, counts: RedactionCounts, rules: readonly Rule[] = RULES): string {
  let out = text
  for (const rule of rules) {
    out = out.replace(rule.pattern, (m) => {
      if (rule.keep?.(m)) return m
      counts[rule.name] = (counts[rule.name] ?? 0) + 1
      return token(rule.name)
    })
  }
  return out
}

export const CREDENTIAL_RULES = RULES.filter((r) => r.kind === 'credential')

/** Sanitizes every string inside a JSON value (object keys are kept; they are schema, not data). */
export function sanitizeJson(value: unknown, counts: RedactionCounts): unknown {
  if (typeof value === 'string') return sanitizeText(value, counts)
  if (Array.isArray(value)) return value.map((v) => sanitizeJson(v, counts))
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = sanitizeJson(v, counts)
    return out
  }
  return value
}
