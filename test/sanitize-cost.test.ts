/**
 * The sanitizer's cost is linear in its input, on the inputs that cost it most (issue 28.3): a report
 * within every limit made of digits and spaces cost ~0.7 s, because the phone and card detectors read
 * each run of digit groups again from every group and did string work for every candidate they then
 * dropped. The measure is deterministic: characters the detectors read (src/sanitize/rule.ts `work`),
 * a search started again inside a dropped candidate counting them again. Each worst-case shape is
 * sanitized at n and 2n characters: the work must grow like the input (not faster), and stay within a
 * fixed number of characters read per character of input, over every rule and every pass.
 */
import { describe, expect, test } from 'bun:test'
import { work } from '../src/sanitize/rule'
import { MAX_PASSES, RULES, sanitizeText } from '../src/sanitize/sanitize'
import { sanitizeReport } from '../src/sanitize/report'

/** Characters read per character of input, over every rule and pass: ~45 at worst today (a run of `+` phone numbers). */
const MAX_READ_PER_CHAR = 64

/** Repeated units that drive one detector or another to its worst case. */
const SHAPES: Record<string, string> = {
  'digits and spaces': '1 ',
  zeros: '0 ',
  'double zeros': '00 ',
  'digit pairs': '12 ',
  'digit groups of four': '1234 ',
  'dashed digits': '1-',
  'dotted digits': '1.',
  'area codes': '555-',
  'country codes': '+1 ',
  'bracketed digits': '(1) ',
  'international numbers': '+4420 7946 0958',
  'a card then numbers glued on': '4111 1111 1111 1111+4420 7946 0958',
  'IBAN starts': 'DE12 ',
  'key-like words': 'key: ',
  'equals signs': 'a=',
  'passwords with a colon': 'password: a ',
  'passwords in single quotes': "password: '",
  'passwords in curly quotes': 'password: “',
  'YAML passwords': 'password:\n  ',
  'ampersand values': 'password=a&',
  'query codes': '?code=',
  'URL credentials': 'http://a:b@',
  'bearer words': 'Bearer ',
  'PEM headers': '-----BEGIN PRIVATE KEY-----\n',
  'JWT starts': 'eyJa.',
  'colons': '1:',
  'hex and colons': 'a:',
  'at signs': 'a@b.',
  'home folders': '/Users/',
  'mixed-class words': 'Aa1Aa1Aa1Aa1Aa1Aa1Aa1Aa1Aa1Aa1Aa1Aa1 ',
  'standard base64 then a dash': 'Ab3+Cd9/Ef7+Gh1/Ij2+Kl4/Mn5+Op6/Qr8+-',
  'slashes and words': '/Aa1/bb2',
  'encoded at signs': 'a%3Da%40b.',
  'no-break spaces and digits': '1\u00A0',
  'full-width digits and hyphens': '１－',
  'zero-width spaces between digits': '1\u200B',
  'encoded pluses and spaces': '%2B1%20',
  'soft hyphens in an address': 'a\u00AD@b.',
  'curl users': "curl -u 'a",
  'curl user pairs': 'curl -u a:',
  'curl attached user pairs': 'curl -ua:',
  'mysql passwords': 'mysql -pa ',
  'short p options': '-p',
  'user flags': '-u "x',
}

const repeat = (unit: string, n: number): string => unit.repeat(Math.ceil(n / unit.length)).slice(0, n)

function readPerChar(text: string): number {
  work.characters = 0
  sanitizeText(text, {})
  return work.characters / text.length
}

describe('the sanitizer reads each character a bounded number of times', () => {
  for (const [name, unit] of Object.entries(SHAPES)) {
    test(name, () => {
      const n = readPerChar(repeat(unit, 8_000))
      const twice = readPerChar(repeat(unit, 16_000))
      expect(n).toBeLessThanOrEqual(MAX_READ_PER_CHAR)
      // Linear: twice the input, (about) twice the work; a quadratic detector would double this ratio.
      expect(twice / n).toBeLessThan(1.15)
    })
  }

  test('random digits, spaces and separators (seeded)', () => {
    let seed = 7
    const next = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff)
    const text = (n: number) => Array.from({ length: n }, () => ' 0123456789-.+()/'[next() % 17]).join('')
    const n = readPerChar(text(8_000))
    expect(n).toBeLessThanOrEqual(MAX_READ_PER_CHAR)
    expect(readPerChar(text(16_000)) / n).toBeLessThan(1.15)
  })

  test('a spec-valid heavy report: 8 KB text, 500 console messages of 1,000 digits and spaces', () => {
    const report = { text: repeat('0 ', 8192), url: null, userAgent: null, consoleLogs: Array.from({ length: 500 }, (_, i) => ({ level: 'log', message: repeat('0 ', 1000), ts: i })), metadata: null, componentTarget: null }
    const chars = 8192 + 500 * 1000
    work.characters = 0
    sanitizeReport(report)
    expect(work.characters / chars).toBeLessThanOrEqual(MAX_READ_PER_CHAR)
  })
})

describe('passes are bounded too', () => {
  test('a chain of values each hidden behind the one before is withheld after MAX_PASSES, never kept raw', () => {
    // Each `+44…` starts a phone number only once the number before it is a token: one more pass per link.
    const chain = '4111 1111 1111 1111' + '+4420 7946 0958'.repeat(MAX_PASSES + 2)
    const counts = {}
    work.characters = 0
    expect(sanitizeText(chain, counts)).toBe('[REDACTED:unsanitizable]')
    expect(counts).toEqual({ unsanitizable: 1 })
    // At most MAX_PASSES passes of every rule over the text.
    expect(work.characters / chain.length).toBeLessThanOrEqual(MAX_READ_PER_CHAR)
    // A short chain still resolves, value by value.
    const short = {}
    expect(sanitizeText('4111 1111 1111 1111+4420 7946 0958', short)).toBe('[REDACTED:credit_card][REDACTED:phone]')
    expect(short).toEqual({ credit_card: 1, phone: 1 })
    expect(RULES.length).toBeGreaterThan(20)
  })
})
