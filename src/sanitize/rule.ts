/**
 * What a sanitizer rule is: a name (also its redaction-count key), a detector that proposes candidates,
 * a false-positive guard that keeps look-alikes, and the typed token that replaces what is left.
 * `matcher` builds the usual detector from regular expressions.
 */
import { token } from './tokens'

/**
 * Credential rules run on every field, the user agent included; PII rules on free text only
 * (a user agent is full of version numbers that PII detectors would have to second-guess).
 */
export type RuleKind = 'credential' | 'pii'

/** A possible secret: `start`..`end` of `text` is the part that would be replaced. */
export interface Candidate {
  /** The whole string being sanitized, for guards that look at the context. */
  text: string
  start: number
  end: number
  /** `text.slice(start, end)`. */
  value: string
  /** The detector's match, with group indices (`d` flag). */
  match: RegExpExecArray
}

export interface Rule {
  /** Names the rule in the redaction counts and in its token. */
  name: string
  kind: RuleKind
  /** Proposes candidates in ascending order of `start`. */
  detect(text: string): Iterable<Candidate>
  /**
   * A cheap necessary condition (a literal the pattern cannot match without): when it is false the
   * detector is not run at all. Only a speed-up: it must never be false for a text the detector matches.
   */
  mayMatch?(text: string): boolean
  /** The false-positive guard: true keeps a candidate that only looks like a secret. */
  keep?(c: Candidate): boolean
  /** What replaces a candidate, e.g. `[REDACTED:email]`. */
  token: string
}

export interface MatcherOptions {
  /**
   * Narrows an over-long candidate to the real value, or drops it (null). Detection, not judgement:
   * a dropped candidate was never one (a `key=value` whose key is not sensitive), and scanning resumes
   * one character after where it started.
   */
  narrow?(c: Candidate): Candidate | null
}

/** The candidate's span: the first participating group named `secret…`, else the whole match. */
function spanOf(m: RegExpExecArray): [number, number] {
  const groups = m.indices?.groups
  if (groups) {
    for (const [name, span] of Object.entries(groups)) if (span && name.startsWith('secret')) return span
  }
  return [m.index, m.index + m[0].length]
}

/** Re-slices a candidate to a new span inside the same match. */
export function reslice(c: Candidate, start: number, end: number): Candidate {
  return { ...c, start, end, value: c.text.slice(start, end) }
}

/**
 * A detector from one or more regular expressions. Each match is a candidate; a named group starting
 * with `secret` limits the replacement to that group (so `password=hunter2` keeps `password=`).
 */
export function matcher(patterns: RegExp | RegExp[], options: MatcherOptions = {}): Rule['detect'] {
  const list = (Array.isArray(patterns) ? patterns : [patterns]).map((p) => new RegExp(p.source, [...new Set(p.flags + 'gd')].join('')))
  return (text: string) => {
    const found: Candidate[] = []
    for (const re of list) {
      re.lastIndex = 0
      for (let m = re.exec(text); m !== null; m = re.exec(text)) {
        if (m[0].length === 0) {
          re.lastIndex++
          continue
        }
        const [start, end] = spanOf(m)
        const c: Candidate | null = { text, start, end, value: text.slice(start, end), match: m }
        const narrowed = options.narrow ? options.narrow(c) : c
        if (narrowed) found.push(narrowed)
        // A dropped candidate consumes nothing: a real value may start inside it ("https://x/?token=…");
        // a narrowed one only what it kept (one IBAN running into the next).
        if (!narrowed) re.lastIndex = m.index + 1
        else if (narrowed.end < m.index + m[0].length) re.lastIndex = Math.max(m.index + 1, narrowed.end)
      }
    }
    if (list.length > 1) found.sort((a, b) => a.start - b.start || b.end - a.end)
    return found
  }
}

/** A `mayMatch` precheck: true when the text contains any of the literals. */
export function contains(...literals: string[]): (text: string) => boolean {
  return literals.length === 1 ? (text) => text.includes(literals[0]) : (text) => literals.some((l) => text.includes(l))
}

/** A rule with its token derived from its name. */
export function rule(r: Omit<Rule, 'token'>): Rule {
  return { ...r, token: token(r.name) }
}
