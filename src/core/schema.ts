/**
 * Schema helpers. `oneOf` replaces Elysia's t.UnionEnum, which gives an optional field the first
 * value as a silent default (an absent `status` filter would become "received"): a union of literals
 * has no default, so an absent field stays absent.
 */
import { t } from 'elysia'
import { Type, type IntegerOptions, type TInteger, type TLiteral, type TNull, type TUnion } from '@sinclair/typebox'

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
