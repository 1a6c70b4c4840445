/**
 * Rules built per report from the submitter's own identity (the row's email, name and external user id),
 * so that a user who types their own name or id into the report does not leave it in the text. The
 * identity itself stays in `submittedBy`; only its echoes in free text are replaced.
 */
import { matcher, rule, type Rule } from './rule'
import { CREDENTIAL_RULES, RULES } from './rules'

export interface Submitter {
  email?: string | null
  name?: string | null
  externalUserId?: string | null
}

/** Escapes regex syntax characters (valid in `u` mode too, so no `\\-`). */
const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')

/** Shorter ids would match ordinary numbers and words all over a report. */
const MIN_ID_LENGTH = 4
/** Name parts shorter than this ("Al", "Jo") are too common as plain words to replace on their own. */
const MIN_NAME_PART = 3

function emailRule(email: string): Rule | undefined {
  if (email.length < MIN_ID_LENGTH) return undefined
  const plain = escape(email)
  const encoded = escape(email.replace('@', '%40'))
  return rule({ name: 'submitter_email', kind: 'pii', detect: matcher(new RegExp(`(?<![\\w.%+-])(?:${plain}|${encoded})(?![\\w-])`, 'i')) })
}

function nameRule(name: string): Rule | undefined {
  const parts = name.trim().split(/\s+/u).filter((p) => p.length > 0)
  const long = parts.filter((p) => [...p].length >= MIN_NAME_PART)
  const patterns: RegExp[] = []
  const bounded = (body: string, flags: string) => new RegExp(`(?<![\\p{L}\\p{N}_])(?:${body})(?![\\p{L}\\p{N}_])`, flags)
  // The full name in any case and spacing; each longer part alone only as written (a capitalised
  // "Will" is a name, "will" a verb).
  if (parts.length > 1) patterns.push(bounded(parts.map(escape).join('\\s+'), 'iu'))
  if (long.length > 0) patterns.push(bounded(long.map(escape).join('|'), 'u'))
  return patterns.length === 0 ? undefined : rule({ name: 'submitter_name', kind: 'pii', detect: matcher(patterns) })
}

function idRule(id: string): Rule | undefined {
  if (id.length < MIN_ID_LENGTH || /^(.)\1*$/.test(id)) return undefined
  return rule({ name: 'submitter_id', kind: 'pii', detect: matcher(new RegExp(`(?<![\\w-])${escape(id)}(?![\\w-])`)) })
}

/** The submitter's echo rules (none for a missing or too-short value). */
export function submitterRules(s: Submitter): Rule[] {
  const out: (Rule | undefined)[] = [
    s.email ? emailRule(s.email) : undefined,
    s.externalUserId ? idRule(s.externalUserId) : undefined,
    s.name ? nameRule(s.name) : undefined,
  ]
  return out.filter((r): r is Rule => r !== undefined)
}

/**
 * The full table for one report: credentials first, then the submitter's echoes (more specific than
 * the generic email rule), then the other PII rules.
 */
export function rulesFor(s: Submitter | undefined): readonly Rule[] {
  const echoes = s ? submitterRules(s) : []
  if (echoes.length === 0) return RULES
  return [...CREDENTIAL_RULES, ...echoes, ...RULES.filter((r) => r.kind !== 'credential')]
}
