/**
 * Query parameters, checked to the letter. Elysia's t.Numeric documents `minimum`/`maximum` in
 * /openapi.json but lets any numeric string through its string branch ("-5", "1.5", "1e9", "100000"),
 * so every integer parameter is range-checked here once more, with the same 400 invalid_body and
 * `details.issues` a schema failure gives.
 */
import { invalidQuery } from '../core/errors'

export interface IntRange {
  min: number
  max: number
}

/**
 * The integer a query parameter holds, or `fallback` when absent; anything else is invalid_body. Reads
 * the raw query string: Elysia has already coerced "0x10" to 16 and kept one of two repeated values.
 */
export function readIntQuery(request: Request, name: string, { min, max }: IntRange, fallback: number): number {
  const values = new URL(request.url).searchParams.getAll(name)
  if (values.length === 0) return fallback
  const fail = (message: string) => invalidQuery([{ path: `/${name}`, message }])
  if (values.length > 1) throw fail('must be given once')
  const n = /^[0-9]{1,15}$/.test(values[0]) ? Number(values[0]) : NaN
  if (!Number.isSafeInteger(n) || n < min || n > max) throw fail(`must be an integer from ${min} to ${max}`)
  return n
}

/** A number as JavaScript writes one (`String(0.85)`, `String(1e-7)`): digits, an optional fraction and exponent. */
const DECIMAL = /^(?:[0-9]{1,20}(?:\.[0-9]{1,20})?|\.[0-9]{1,20})(?:[eE][-+]?[0-9]{1,3})?$/

/**
 * The number a query parameter holds, or undefined when absent; anything else is invalid_body naming it.
 * Read on the raw text for the reason readIntQuery is: t.Numeric took " " as 0 and "0x1" as 1.
 */
export function readNumberQuery(request: Request, name: string, { min, max }: IntRange): number | undefined {
  const values = new URL(request.url).searchParams.getAll(name)
  if (values.length === 0) return undefined
  const fail = (message: string) => invalidQuery([{ path: `/${name}`, message }])
  if (values.length > 1) throw fail('must be given once')
  const n = DECIMAL.test(values[0]) ? Number(values[0]) : NaN
  if (!Number.isFinite(n) || n < min || n > max) throw fail(`must be a number from ${min} to ${max}`)
  return n
}
