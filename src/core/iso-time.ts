/**
 * ISO 8601 dates and instants as the API and the CLI take them (`since`, `until`, the inbox's `from`/`to`):
 * `YYYY-MM-DD`, optionally `THH:MM[:SS[.fraction]]` and `Z` or an offset. Read strictly: Date.parse alone
 * rolls an impossible date over (`2026-02-30` is 2 March, found by the API attack) and takes free-form
 * text ("March 3 2026"), so a typo filtered the wrong days without a word.
 */
const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-](\d{2}):?(\d{2}))?)?$/

const daysIn = (year: number, month: number) => new Date(Date.UTC(year, month, 0)).getUTCDate()

/** Epoch milliseconds of `value`, or undefined when it is no real ISO 8601 date or instant. */
export function parseIsoTime(value: string): number | undefined {
  const m = ISO_TIME.exec(value)
  if (!m) return undefined
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])]
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined
  if (m[4] !== undefined && (Number(m[4]) > 23 || Number(m[5]) > 59 || (m[6] !== undefined && Number(m[6]) > 59))) return undefined
  if (m[8] !== undefined && (Number(m[8]) > 23 || Number(m[9]) > 59)) return undefined
  const ms = Date.parse(value)
  return Number.isFinite(ms) ? ms : undefined
}
