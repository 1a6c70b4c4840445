/**
 * The widget's languages (CONTRACT.md "Widget languages", docs/widget.md "Languages"): every built-in
 * table is complete and keeps its placeholders, the locale is chosen from the page's option and the
 * browser's languages with the documented fallbacks, overrides apply per locale, and the build serves
 * each table as its own hashed JSON file.
 */
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { LOCALES, chooseLocale, directionOf, matchLocale } from '../widget/src/locale'
import { TABLES } from '../widget/src/locales/index'
import { resolveStrings } from '../widget/src/strings'
import en from '../widget/src/locales/en'
import { ROOT } from './harness'

const KEYS = Object.keys(en).sort()

describe('the tables', () => {
  test('the contract\'s 24 locales, each with a table', () => {
    expect([...LOCALES].sort()).toEqual(['ar', 'cs', 'da', 'de', 'en', 'es', 'fi', 'fr', 'he', 'hi', 'id', 'it', 'ja', 'ko', 'nb', 'nl', 'pl', 'pt-BR', 'ru', 'sv', 'tr', 'uk', 'zh-CN', 'zh-TW'])
    expect(Object.keys(TABLES).sort()).toEqual([...LOCALES].sort())
    // The interface has as many keys as English has (a key added to Strings but not to en fails typecheck).
    expect(KEYS.length).toBe(52)
  })

  for (const locale of LOCALES) {
    test(`${locale}: every key, no extra key, no empty value, placeholders kept`, () => {
      const table = TABLES[locale] as unknown as Record<string, unknown>
      expect(Object.keys(table).sort()).toEqual(KEYS)
      for (const key of KEYS) {
        const value = table[key]
        expect(typeof value).toBe('string')
        expect((value as string).trim()).not.toBe('')
        expect(value).toBe((value as string).trim())
      }
      // {email} is replaced by the address; "Ctrl" (German keyboards: "Strg") becomes ⌘ on a Mac.
      expect((table.notifyAt as string).split('{email}')).toHaveLength(2)
      expect(table.sendShortcut).toMatch(/Ctrl|Strg/)
      for (const key of KEYS) if (key !== 'notifyAt') expect(table[key]).not.toContain('{')
    })
  }

  test('the other languages are translated (not English left in place)', () => {
    for (const locale of LOCALES) {
      if (locale === 'en') continue
      const same = KEYS.filter((k) => (TABLES[locale] as any)[k] === (en as any)[k])
      // Loanwords may match English ("Screenshot" in Italian, "Send" in Danish), never whole sentences.
      expect(same.filter((k) => (en as any)[k].includes(' '))).toEqual([])
    }
  })

  test('zh-TW is written in traditional characters, zh-CN in simplified', () => {
    const simplifiedOnly = /[报问题发关图选载试设这过们个时请输击编辑复网络错误务处签览录帐户账]/
    const traditionalOnly = /[報問題發關圖選載試設這過們個時請輸擊編輯復網絡錯誤務處簽覽錄帳戶]/
    for (const value of Object.values(TABLES['zh-TW'])) expect(value).not.toMatch(simplifiedOnly)
    for (const value of Object.values(TABLES['zh-CN'])) expect(value).not.toMatch(traditionalOnly)
  })
})

describe('choosing the locale', () => {
  const cases: [unknown, string[] | undefined, string][] = [
    // The page's choice wins over the browser.
    ['de', ['fr-FR', 'en'], 'de'],
    ['DE-at', ['fr'], 'de'],
    ['pt-BR', [], 'pt-BR'],
    // No choice: the browser's languages in order.
    [undefined, ['fr-CA', 'de'], 'fr'],
    [undefined, ['xx', 'sw-KE', 'ja-JP'], 'ja'],
    ['', ['ko-KR'], 'ko'],
    // An unknown choice falls through to the browser's, then English.
    ['sr-Latn', ['uk-UA'], 'uk'],
    ['tlh', ['x-klingon', 'qaa'], 'en'],
    [undefined, undefined, 'en'],
    [undefined, [], 'en'],
    // Portuguese: Brazil's table for every Portuguese.
    ['pt', [], 'pt-BR'],
    ['pt-PT', [], 'pt-BR'],
    ['pt_br', [], 'pt-BR'],
    ['PT-AO', [], 'pt-BR'],
    // Chinese: script first, then region.
    ['zh', [], 'zh-CN'],
    ['zh-CN', [], 'zh-CN'],
    ['zh-SG', [], 'zh-CN'],
    ['zh-Hans', [], 'zh-CN'],
    ['zh-Hans-HK', [], 'zh-CN'],
    ['zh-TW', [], 'zh-TW'],
    ['zh-tw', [], 'zh-TW'],
    ['zh-HK', [], 'zh-TW'],
    ['zh-MO', [], 'zh-TW'],
    ['zh-Hant', [], 'zh-TW'],
    ['zh-Hant-CN', [], 'zh-TW'],
    ['ZH_HANT_TW', [], 'zh-TW'],
    // Norwegian, old codes.
    ['no', [], 'nb'],
    ['nn-NO', [], 'nb'],
    ['nb-NO', [], 'nb'],
    ['iw', [], 'he'],
    ['iw-IL', [], 'he'],
    ['in', [], 'id'],
    ['in-ID', [], 'id'],
    // Case, region and variants do not matter for the others.
    ['EN-gb', ['de'], 'en'],
    ['es-419', [], 'es'],
    ['ar-EG', [], 'ar'],
    ['he-IL', [], 'he'],
    ['hi-IN', [], 'hi'],
    ['sv-FI', [], 'sv'],
    ['  fi  ', [], 'fi'],
    // Junk never throws and never matches.
    [42, ['nl'], 'nl'],
    [{ toString: () => 'de' }, ['pl'], 'pl'],
    ['__proto__', ['cs'], 'cs'],
    ['constructor', ['tr'], 'tr'],
    ['de\u0000', ['ru'], 'ru'],
    ['d'.repeat(100_000), ['it'], 'it'],
    ['*', ['da'], 'da'],
    [null, [null as unknown as string, 'ja'], 'ja'],
  ]
  for (const [explicit, languages, want] of cases) {
    test(`${JSON.stringify(explicit)?.slice(0, 30)} + ${JSON.stringify(languages)} -> ${want}`, () => {
      expect(chooseLocale(explicit, languages)).toBe(want as any)
    })
  }

  test('every built-in tag matches itself, in any case', () => {
    for (const l of LOCALES) {
      expect(matchLocale(l)).toBe(l)
      expect(matchLocale(l.toUpperCase())).toBe(l)
    }
  })

  test('ar and he are right to left, the rest left to right', () => {
    expect(LOCALES.filter((l) => directionOf(l) === 'rtl')).toEqual(['ar', 'he'])
  })
})

describe('overrides', () => {
  test('the page\'s strings over the table, its per-locale strings over those', () => {
    const s = resolveStrings('de', TABLES.de, { send: 'Los', cancel: 'Nein', de: { send: 'Abschicken' }, fr: { send: 'Go' } })
    expect(s.send).toBe('Abschicken')
    expect(s.cancel).toBe('Nein')
    expect(s.close).toBe('Schließen')
  })

  test('a missing or junk table falls back to English key by key; unknown keys and non-strings are dropped', () => {
    expect(resolveStrings('ja', undefined, undefined)).toEqual(en)
    expect(resolveStrings('ja', 'junk', undefined)).toEqual(en)
    const s = resolveStrings('ja', { send: '送信', close: 42, bogus: 'x', ['__proto__']: { polluted: true } }, { cancel: null as any })
    expect(s.send).toBe('送信')
    expect(s.close).toBe('Close')
    expect(s.cancel).toBe('Cancel')
    expect(Object.keys(s).sort()).toEqual(KEYS)
    expect(({} as any).polluted).toBeUndefined()
  })
})

test('the build writes each table (but English) as a hashed JSON file the binary serves', () => {
  const dist = join(ROOT, 'widget', 'dist')
  const manifest = JSON.parse(readFileSync(join(dist, 'manifest.json'), 'utf8'))
  const files = JSON.parse(readFileSync(join(dist, 'locales.json'), 'utf8')) as Record<string, string>
  expect(Object.keys(files)).toEqual(manifest.localeFiles)
  expect(manifest.localeFiles).toHaveLength(23)
  for (const locale of LOCALES) {
    const name = manifest.localeFiles.find((f: string) => f.startsWith(`locale-${locale}-`))
    if (locale === 'en') expect(name).toBeUndefined()
    else expect(JSON.parse(files[name])).toEqual(TABLES[locale])
  }
  // The loader carries every launcher label (shown before any table is fetched) and no other table.
  // (esbuild writes non-ASCII as \uXXXX / \xXX escapes: read them back.)
  const loader = readFileSync(join(dist, 'widget.js'), 'utf8').replace(/\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})/g, (_, u, x) => String.fromCharCode(parseInt(u ?? x, 16)))
  for (const locale of LOCALES) expect(loader).toContain(TABLES[locale].launcher)
  expect(loader).not.toContain(TABLES.de.queueFull)
})
