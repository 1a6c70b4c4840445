/**
 * Which built-in locale the widget speaks (CONTRACT.md "Widget languages", docs/widget.md "Languages"):
 * the page's `locale` option (or data-locale) first, then the browser's navigator.languages in order,
 * finally English. Each BCP 47 tag falls back to the closest table: pt/pt-PT use pt-BR (the only
 * Portuguese), zh-HK/zh-MO/zh-Hant use zh-TW, zh/zh-SG/zh-Hans use zh-CN, no/nn use nb, and the old
 * codes iw and in are he and id. Tags are matched case-insensitively ("_" is read as "-").
 */

/** Every built-in table; widget/src/locales/<tag>.ts holds each one. */
export const LOCALES = ['en', 'de', 'fr', 'es', 'it', 'pt-BR', 'nl', 'pl', 'sv', 'da', 'nb', 'fi', 'cs', 'tr', 'ru', 'uk', 'ja', 'ko', 'zh-CN', 'zh-TW', 'ar', 'he', 'hi', 'id'] as const
export type Locale = (typeof LOCALES)[number]

/** Languages whose primary subtag alone picks a table (everything but pt and zh, which need more). */
const BY_LANGUAGE: Record<string, Locale> = { no: 'nb', nn: 'nb', iw: 'he', in: 'id' }
for (const l of LOCALES) if (!l.includes('-')) BY_LANGUAGE[l] = l

/** A well-formed tag: a 2-3 letter language, then subtags of 1-8 letters/digits (private-use and junk never match). */
const TAG = /^[a-z]{2,3}(-[a-z0-9]{1,8})*$/

/** The table one BCP 47 tag maps to, or undefined when fixloop has none for that language. */
export function matchLocale(tag: unknown): Locale | undefined {
  if (typeof tag !== 'string' || tag.length > 100) return undefined
  const t = tag.trim().toLowerCase().replace(/_/g, '-')
  if (!TAG.test(t)) return undefined
  const [lang, ...rest] = t.split('-')
  if (lang === 'pt') return 'pt-BR'
  if (lang === 'zh') {
    // The script subtag decides when there is one (zh-Hant-CN is traditional); else the region does.
    if (rest.includes('hant')) return 'zh-TW'
    if (rest.includes('hans')) return 'zh-CN'
    return rest.some((s) => s === 'tw' || s === 'hk' || s === 'mo') ? 'zh-TW' : 'zh-CN'
  }
  return Object.prototype.hasOwnProperty.call(BY_LANGUAGE, lang) ? BY_LANGUAGE[lang] : undefined
}

/** The explicit choice if fixloop has it, else the first of the browser's languages it has, else English. */
export function chooseLocale(explicit: unknown, languages: readonly unknown[] | undefined): Locale {
  for (const tag of [explicit, ...(languages ?? [])]) {
    const hit = matchLocale(tag)
    if (hit) return hit
  }
  return 'en'
}

/** Arabic and Hebrew are written right to left. */
export const directionOf = (locale: Locale): 'rtl' | 'ltr' => (locale === 'ar' || locale === 'he' ? 'rtl' : 'ltr')

/** The browser's preferred languages (navigator.language alone where languages is missing). */
export function browserLanguages(): readonly string[] {
  const nav = typeof navigator === 'undefined' ? undefined : navigator
  if (!nav) return []
  return nav.languages && nav.languages.length ? nav.languages : nav.language ? [nav.language] : []
}
