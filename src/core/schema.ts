/**
 * Schema helpers. `oneOf` replaces Elysia's t.UnionEnum, which gives an optional field the first
 * value as a silent default (an absent `status` filter would become "received"): a union of literals
 * has no default, so an absent field stays absent.
 */
import { t } from 'elysia'
import { isHighSurrogate, isLowSurrogate } from './clip'
import { Kind, Type, TypeRegistry, type IntegerOptions, type StringOptions, type TInteger, type TLiteral, type TNull, type TString, type TUnion } from '@sinclair/typebox'

type Literals<T extends readonly string[]> = { -readonly [K in keyof T]: TLiteral<T[K]> }

export function oneOf<const T extends readonly string[]>(values: T, options: { description?: string } = {}): TUnion<Literals<T>> {
  return t.Union(
    values.map((v) => t.Literal(v)),
    options,
  ) as unknown as TUnion<Literals<T>>
}

/**
 * One of `values`, or null, as one flat union. Not `t.Union([oneOf(values), t.Null()])`: @elysiajs/openapi
 * folds that nested union into `{ type: ['string', 'null'], enum: values }`, an enum without null, so
 * /openapi.json refused the null the route takes and sends (severity of spec 2.2 and 2.3).
 */
export function oneOfOrNull<const T extends readonly string[]>(values: T, options: { description?: string } = {}): TUnion<[...Literals<T>, TNull]> {
  return t.Union([...values.map((v) => t.Literal(v)), t.Null()], options) as unknown as TUnion<[...Literals<T>, TNull]>
}

/**
 * A strict integer. Elysia's t.Integer also accepts numeric strings ("600") anywhere in a JSON body;
 * the spec rejects a wrong type with invalid_body, so bodies use TypeBox's own integer.
 */
export function int(options: IntegerOptions = {}): TInteger {
  return Type.Integer(options)
}

/** The TypeBox kind of `chars`, registered below (the validators Elysia compiles look it up). */
export const CHARS_KIND = 'Chars'

/** Unicode code points in `s`: a surrogate pair is one character, a lone surrogate one too (as Ajv counts). */
export function charCount(s: string): number {
  let n = s.length
  for (let i = 0; i < s.length - 1; i++) {
    if (isHighSurrogate(s.charCodeAt(i)) && isLowSurrogate(s.charCodeAt(i + 1))) {
      n--
      i++
    }
  }
  return n
}

/** Why `value` is not a string `chars(schema)` takes, in TypeBox's words for a String; undefined when it is. */
export function charsIssue(schema: StringOptions, value: unknown): string | undefined {
  if (typeof value !== 'string') return 'Expected string'
  const min = schema.minLength ?? 0
  const max = schema.maxLength ?? Number.POSITIVE_INFINITY
  // Code points are at most the code units and at least half of them: most strings need no count.
  if (value.length <= max && Math.ceil(value.length / 2) >= min) return undefined
  const n = charCount(value)
  if (n < min) return `Expected string length greater or equal to ${min}`
  if (n > max) return `Expected string length less or equal to ${max}`
  return undefined
}

TypeRegistry.Set<StringOptions>(CHARS_KIND, (schema, value) => charsIssue(schema, value) === undefined)

/**
 * A string whose minLength and maxLength count characters (Unicode code points), as JSON Schema
 * defines them and as the spec's "1 to 8192 characters" reads. TypeBox's String counts UTF-16 code
 * units, two for an emoji: a report of 5,000 emoji was refused as longer than 8192, though a client
 * that checked it against /openapi.json (Ajv counts code points) had every reason to send it.
 * Published as a plain string schema; its refusals read like TypeBox's (foundation.ts issuesOf).
 */
export function chars(options: StringOptions = {}): TString {
  return { ...options, [Kind]: CHARS_KIND, type: 'string' } as unknown as TString
}
