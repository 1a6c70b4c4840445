/**
 * What a sanitizer rule is: a name (also its redaction-count key), a detector that proposes candidates,
 * a false-positive guard that keeps look-alikes, and the typed token that replaces what is left.
 * `matcher` builds the usual detector from regular expressions.
 */
import { token } from './tokens'

/**
 * The sanitizer's work, in characters its detectors read (a search that starts again inside a dropped
 * candidate reads those characters again, and they count again). A deterministic measure, unlike time:
 * test/sanitize-cost.test.ts holds it linear in the input on worst-case inputs.
 */
export const work = { characters: 0 }

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
  /** The detector's match; with group indices (`d` flag) when its pattern has named groups. */
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
   * A cheap first look at a match, before its group offsets are computed (`m.index`, `m[0]` and
   * `m.groups` are there, `m.indices` is not): false drops it as `narrow` returning null would.
   * Computing offsets costs more than the search itself, and most matches of a broad pattern are dropped.
   */
  accept?(m: RegExpExecArray, text: string): boolean
  /**
   * Narrows an over-long candidate to the real value, or drops it (null). Detection, not judgement:
   * a dropped candidate was never one (a `key=value` whose key is not sensitive), and scanning resumes
   * one character after where it started.
   */
  narrow?(c: Candidate): Candidate | null
}

/** The names of a pattern's groups named `secret…`, in the order they appear. */
const secretGroups = (re: RegExp): string[] => [...re.source.matchAll(/\(\?<(secret\w*)>/g)].map((m) => m[1])

/**
 * The candidate's span: the first participating group named `secret…` (`names`, precomputed: this runs
 * for every match, and listing the match's groups each time was most of a rejected candidate's cost),
 * else the whole match.
 */
function spanOf(m: RegExpExecArray, names: string[]): [number, number] {
  const groups = m.indices?.groups
  if (groups) {
    for (const name of names) {
      const span = groups[name]
      if (span) return span
    }
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
  // Group offsets (`d`) only where a pattern has named groups to locate: computing them makes every match
  // several times slower, and the digit rules match at almost every position of a run of digits. With an
  // `accept` look (most matches dropped), the search runs without them and a sticky copy with offsets
  // reads an accepted match again.
  const source = Array.isArray(patterns) ? patterns : [patterns]
  const named = (re: RegExp) => /\(\?<[A-Za-z]/.test(re.source)
  const flagsOf = (re: RegExp, d: boolean) => [...new Set(re.flags.replace('d', '') + (d ? 'gd' : 'g'))].join('')
  const list = source.map((p) => new RegExp(p.source, flagsOf(p, named(p) && !options.accept)))
  const exact = source.map((p) => (named(p) && options.accept ? new RegExp(p.source, p.flags.replace(/[dg]/g, '') + 'dy') : undefined))
  const names = list.map(secretGroups)
  return (text: string) => {
    const found: Candidate[] = []
    let from = 0
    for (let r = 0; r < list.length; r++) {
      const re = list[r]
      re.lastIndex = 0
      for (let m = re.exec(text); m !== null; m = re.exec(text)) {
        // The characters this search went through, from where it started to the end of its match:
        // a candidate dropped below is read again from one past its start, and that counts again.
        work.characters += m.index + m[0].length - from
        if (m[0].length === 0) {
          re.lastIndex++
          from = re.lastIndex
          continue
        }
        if (options.accept && !options.accept(m, text)) {
          re.lastIndex = from = m.index + 1
          continue
        }
        const withOffsets = exact[r]
        if (withOffsets) {
          // The same match (the same pattern from the same place), now with its groups' offsets.
          withOffsets.lastIndex = m.index
          m = withOffsets.exec(text) ?? m
          work.characters += m[0].length
        }
        const [start, end] = spanOf(m, names[r])
        const c: Candidate | null = { text, start, end, value: text.slice(start, end), match: m }
        const narrowed = options.narrow ? options.narrow(c) : c
        if (narrowed) found.push(narrowed)
        // A value read on past the match (`password=…&…`) is read by the narrowing: it counts too.
        if (narrowed && narrowed.end > m.index + m[0].length) work.characters += narrowed.end - (m.index + m[0].length)
        // A dropped candidate consumes nothing: a real value may start inside it ("https://x/?token=…");
        // a narrowed one only what it kept (one IBAN running into the next). One read past its match (`password=a&b`) consumes all it read: searching on inside it would find
        // the same value's later parts again, each read again to the same end (quadratic).
        if (!narrowed) re.lastIndex = m.index + 1
        else if (narrowed.end !== m.index + m[0].length) re.lastIndex = Math.max(m.index + 1, narrowed.end)
        from = re.lastIndex
      }
      work.characters += text.length - from
      from = 0
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
