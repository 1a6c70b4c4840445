import type { Locale } from './locale'
import en from './locales/en'
import type { Strings } from './string-keys'

export type { Strings } from './string-keys'

/**
 * Fixloop.init({ strings }): any key of Strings for every locale, and per-locale overrides under the
 * locale's tag (`{ send: 'Go', de: { send: 'Los' } }`): the tag's own entries win over the plain ones.
 */
export type StringOverrides = Partial<Strings> & Partial<Record<Locale, Partial<Strings>>>

/** Only the known keys with string values: a table fetched from the server or given by a page never adds junk to the UI. */
function known(table: unknown): Partial<Strings> {
  const out: Partial<Strings> = {}
  if (!table || typeof table !== 'object') return out
  for (const key of Object.keys(en) as (keyof Strings)[]) {
    const value = (table as Record<string, unknown>)[key]
    if (typeof value === 'string' && Object.prototype.hasOwnProperty.call(table, key)) out[key] = value
  }
  return out
}

/** English, then the locale's table (fetched lazily, see loader.ts), then the page's overrides, then its overrides for this locale. */
export function resolveStrings(locale: Locale, table: unknown, overrides: StringOverrides | undefined): Strings {
  return { ...en, ...known(table), ...known(overrides), ...known(overrides?.[locale]) }
}
