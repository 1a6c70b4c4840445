/**
 * Schema helpers. `oneOf` replaces Elysia's t.UnionEnum, which gives an optional field the first
 * value as a silent default (an absent `status` filter would become "received"): a union of literals
 * has no default, so an absent field stays absent.
 */
import { t } from 'elysia'
import { Type, type IntegerOptions, type TInteger, type TLiteral, type TUnion } from '@sinclair/typebox'

type Literals<T extends readonly string[]> = { -readonly [K in keyof T]: TLiteral<T[K]> }

export function oneOf<const T extends readonly string[]>(values: T, options: { description?: string } = {}): TUnion<Literals<T>> {
  return t.Union(
    values.map((v) => t.Literal(v)),
    options,
  ) as unknown as TUnion<Literals<T>>
}

/**
 * A strict integer. Elysia's t.Integer also accepts numeric strings ("600") anywhere in a JSON body;
 * the spec rejects a wrong type with invalid_body, so bodies use TypeBox's own integer.
 */
export function int(options: IntegerOptions = {}): TInteger {
  return Type.Integer(options)
}
