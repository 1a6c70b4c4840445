/**
 * The sanitizer's rules, one table each: true positives per rule (the planted value must be gone and the
 * rule counted), look-alikes that must survive unchanged, exact replacements, the URL and JSON
 * sanitizers, and a seeded property test: sanitizing is idempotent and no planted secret survives.
 */
import { describe, expect, test } from 'bun:test'
import { cardBrand, isCardNumber, luhnValid } from '../src/sanitize/cards'
import { isPlaceholder, shannonEntropy } from '../src/sanitize/entropy'
import { isIban } from '../src/sanitize/iban'
import { parseIPv4, parseIPv6 } from '../src/sanitize/ip'
import { isSensitiveKey, isSensitiveParam } from '../src/sanitize/keys'
import { isPhoneShape } from '../src/sanitize/phone'
import { previewStored, sanitizeReport, sanitizeStored } from '../src/sanitize/report'
import { CREDENTIAL_RULES, RULES, sanitizeJson, sanitizeText, type RedactionCounts } from '../src/sanitize/sanitize'
import { rulesFor } from '../src/sanitize/submitter'
import { matcher, rule } from '../src/sanitize/rule'
import { INVISIBLE, isInvisible } from '../src/sanitize/invisible'
import { sanitizeUrl } from '../src/sanitize/url'
import { B64URL, LOOK_ALIKES, SECRET_THEN_PROSE, T, TRUE_POSITIVES, prng, randomString } from './sanitize-fixtures'

function run(text: string, rules = RULES): { out: string; counts: RedactionCounts } {
  const counts: RedactionCounts = {}
  return { out: sanitizeText(text, counts, rules), counts }
}

const short = (s: string) => JSON.stringify(s.length > 70 ? s.slice(0, 67) + '…' : s)

describe('the rule table', () => {
  test('every rule has a unique name, a detector and a typed token', () => {
    const names = RULES.map((r) => r.name)
    expect(new Set(names).size).toBe(names.length)
    for (const r of RULES) {
      expect(r.token).toBe(`[REDACTED:${r.name}]`)
      expect(typeof r.detect).toBe('function')
      expect(['credential', 'pii']).toContain(r.kind)
    }
  })

  test('every rule has at least three true positives in this file', () => {
    for (const r of RULES) expect(TRUE_POSITIVES.filter(([name]) => name === r.name).length, r.name).toBeGreaterThanOrEqual(3)
  })

  test('credential rules are a subset that holds no PII rule', () => {
    expect(CREDENTIAL_RULES.length).toBeGreaterThan(10)
    expect(CREDENTIAL_RULES.every((r) => r.kind === 'credential')).toBe(true)
    expect(CREDENTIAL_RULES.map((r) => r.name)).not.toContain('email')
  })
})

describe('true positives', () => {
  for (const [rule, input, planted] of TRUE_POSITIVES) {
    test(`${rule}: ${short(input)}`, () => {
      const { out, counts } = run(input)
      expect(counts[rule], JSON.stringify(counts)).toBeGreaterThanOrEqual(1)
      expect(out).toContain(`[REDACTED:${rule}]`)
      for (const p of planted) expect(out).not.toContain(p)
      expect(sanitizeText(out, {})).toBe(out)
    })
  }
})

describe('a password, then prose: a complete secret ends where it ends, a pass phrase runs on', () => {
  for (const [input, secret, prose] of SECRET_THEN_PROSE) {
    test(short(input), () => {
      const { out, counts } = run(input)
      expect(counts.secret, out).toBe(1)
      for (const s of secret) expect(out).not.toContain(s)
      for (const p of prose) expect(out).toContain(p)
    })
  }
})

describe('look-alikes survive unchanged', () => {
  for (const text of LOOK_ALIKES) {
    test(short(text), () => {
      const { out, counts } = run(text)
      expect(out).toBe(text)
      expect(counts).toEqual({})
    })
  }
})

describe('exact replacements: structure stays, only the value goes', () => {
  const CASES: [string, string][] = [
    ['password=hunter2', 'password=[REDACTED:secret]'],
    ['db_password: "p@ss word"', 'db_password: "[REDACTED:secret]"'],
    ['{"password":"Tr0ub4dor&3","user":"jane"}', '{"password":"[REDACTED:secret]","user":"jane"}'],
    ["{'apiKey': 'k_123'}", "{'apiKey': '[REDACTED:secret]'}"],
    ['X-Api-Key: abc123def', 'X-Api-Key: [REDACTED:secret]'],
    ['--password=hunter2 --verbose', '--password=[REDACTED:secret] --verbose'],
    ['pin: 1234', 'pin: [REDACTED:secret]'],
    ['/cb?code=abc&state=xyz', '/cb?code=[REDACTED:secret]&state=xyz'],
    ['error code: 404', 'error code: 404'],
    ['Cookie: a=1; b=2\nnext line', 'Cookie: [REDACTED:secret]\nnext line'],
    ['Authorization: Bearer abc123def456ghi789', 'Authorization: Bearer [REDACTED:bearer_token]'],
    ['https://admin:s3cret@db.example.com/x', 'https://[REDACTED:url_credentials]@db.example.com/x'],
    ['/Users/jane/Library/Logs/app.log', '/Users/[REDACTED:username]/Library/Logs/app.log'],
    ['/home/bob/', '/home/[REDACTED:username]/'],
    ['C:\\Users\\John Smith\\Desktop', 'C:\\Users\\[REDACTED:username]\\Desktop'],
    ['/Users/Shared/app', '/Users/Shared/app'],
    ['mail me: jane@example.com.', 'mail me: [REDACTED:email].'],
    ['IBAN DE89 3704 0044 0532 0130 00 EUR', 'IBAN [REDACTED:iban] EUR'],
    ['call 555-123-4567 2024', 'call [REDACTED:phone] 2024'],
    ['from 203.0.113.9:8443', 'from [REDACTED:ipv4]:8443'],
    // A package's four-part version after an upgrade verb stays (the clustering compares versions);
    // after a plain word, or in a private range, a quad is still an address.
    ['Upgrade jackson-databind to 2.9.10.2', 'Upgrade jackson-databind to 2.9.10.2'],
    ['Bump com.fasterxml.jackson.core:jackson-databind from 2.9.10.1 to 2.9.10.2', 'Bump com.fasterxml.jackson.core:jackson-databind from 2.9.10.1 to 2.9.10.2'],
    ['com.fasterxml.jackson.core:jackson-databind:2.9.10.3', 'com.fasterxml.jackson.core:jackson-databind:2.9.10.3'],
    ['Updated proxy to 41.24.111.5', 'Updated proxy to [REDACTED:ipv4]'],
    ['Update jackson-databind to 10.20.30.40', 'Update jackson-databind to [REDACTED:ipv4]'],
    ['Updated api-gateway to 81.24.111.5', 'Updated api-gateway to [REDACTED:ipv4]'],
    ['Upgrade netty-codec-http to 4.1.100.1', 'Upgrade netty-codec-http to 4.1.100.1'],
    ['jackson-databind 81.24.111.5 fails', 'jackson-databind [REDACTED:ipv4] fails'],
    // An artifact's name with its version, Gecko's `rv:` and a product's `Name/` are versions; 0.x.x.x
    // is no host's address. A host before the slash (Java's `host/1.2.3.4`) or a port after makes an address.
    ['runs on hadoop-0.20.203.0 and hbase-0.90.1', 'runs on hadoop-0.20.203.0 and hbase-0.90.1'],
    ['jackson-databind-2.9.10.2.jar', 'jackson-databind-2.9.10.2.jar'],
    ['proxy-81.24.111.5 is down', 'proxy-[REDACTED:ipv4] is down'],
    ['ip-10.20.30.40 is down', 'ip-[REDACTED:ipv4] is down'],
    ['Windows NT 5.1; en-US; rv:1.8.1.12) Gecko/20080201 SeaMonkey/1.1.8', 'Windows NT 5.1; en-US; rv:1.8.1.12) Gecko/20080201 SeaMonkey/1.1.8'],
    ['(KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36', '(KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36'],
    ['listening on 0.0.0.0:8080', 'listening on 0.0.0.0:8080'],
    ['Call From nn1.example.com/203.0.113.7 to nn2:8020 failed', 'Call From nn1.example.com/[REDACTED:ipv4] to nn2:8020 failed'],
    ['Call From datanode7/41.24.111.5 to nn2:8020', 'Call From datanode7/[REDACTED:ipv4] to nn2:8020'],
    ['Call to namenode/192.168.1.10 failed', 'Call to namenode/[REDACTED:ipv4] failed'],
    ['Build/41.24.111.5:8020 refused', 'Build/[REDACTED:ipv4]:8020 refused'],
    ['resolver 8.8.4.4:53 timed out', 'resolver [REDACTED:ipv4]:53 timed out'],
    ['[2001:db8::1]:443', '[[REDACTED:ipv6]]:443'],
    ['card 4111-1111-1111-1111 exp 12/27', 'card [REDACTED:credit_card] exp 12/27'],
    ['SMTP_PASS=hunter2x npm start', 'SMTP_PASS=[REDACTED:secret] npm start'],
    ['{"cardNumber":"4111 1111 1111 1111","cvc":"123","exp":"12/27"}', '{"cardNumber":"[REDACTED:credit_card]","cvc":"[REDACTED:secret]","exp":"12/27"}'],
    ['passcode: 839201', 'passcode: [REDACTED:secret]'],
    // HTML's autocomplete name for the security code, as a form's state is logged
    ['{"cc-number":"4111111111111111","cc-csc":"123","cc-exp":"12/27"}', '{"cc-number":"[REDACTED:credit_card]","cc-csc":"[REDACTED:secret]","cc-exp":"12/27"}'],
    // curl's user and password
    ['curl -u admin:hunter2 https://api.example.com/v1', 'curl -u [REDACTED:secret] https://api.example.com/v1'],
    ["curl --user 'jane@example.com:S3cret!' -X POST", "curl --user '[REDACTED:secret]' -X POST"],
    ['curl -uadmin:hunter2 https://api.example.com/v1', 'curl -u[REDACTED:secret] https://api.example.com/v1'],
    ["curl -s -u'jane:S3cret!' https://api.example.com", "curl -s -u'[REDACTED:secret]' https://api.example.com"],
    ['curl --url https://a.example/x:1 -upload', 'curl --url https://a.example/x:1 -upload'],
    // the MySQL/MariaDB clients' attached password
    ['docker exec db mysql -uroot -pS3cretPw! shop < dump.sql', 'docker exec db mysql -uroot -p[REDACTED:secret] shop < dump.sql'],
    ["mysqldump -h db.internal -u app -p'pa ss word' shop", "mysqldump -h db.internal -u app -p'[REDACTED:secret]' shop"],
    ['sudo /usr/bin/mariadb -pHunter2x -e "select 1"', 'sudo /usr/bin/mariadb -p[REDACTED:secret] -e "select 1"'],
    ['mysql -u root -p shop, mysql -p$MYSQL_ROOT_PASSWORD, tar -pczf a.tgz dir, ssh -p2222 host', 'mysql -u root -p shop, mysql -p$MYSQL_ROOT_PASSWORD, tar -pczf a.tgz dir, ssh -p2222 host'],
    ['mysql -P3306 -h 127.0.0.1 shop; git commit -pm wip', 'mysql -P3306 -h 127.0.0.1 shop; git commit -pm wip'],
    ['curl -u jane https://api.example.com, docker run -u 1000:1000 app, curl -u ${USER}:${PASS} x', 'curl -u jane https://api.example.com, docker run -u 1000:1000 app, curl -u ${USER}:${PASS} x'],
    // A URL in a console line keeps its encoding: the email in its query is written with `%40`.
    ['GET https://api.example.com/v1/users?email=jane.doe%40example.com 404 (Not Found)', 'GET https://api.example.com/v1/users?email=[REDACTED:email] 404 (Not Found)'],
    ['Failed to load /login?user=Jane%2Bshop%40Example.COM&next=%2Fcart', 'Failed to load /login?user=[REDACTED:email]&next=%2Fcart'],
    ['redirect /cb?next=%2Fprofile%3Femail%3Djane%40example.com%26tab%3D2', 'redirect /cb?next=%2Fprofile%3Femail%3D[REDACTED:email]%26tab%3D2'],
    ['fetch https://registry.npmjs.org/%40types%2Fnode and %40babel%2Fcore%407.24.0', 'fetch https://registry.npmjs.org/%40types%2Fnode and %40babel%2Fcore%407.24.0'],
    ['GET /img/logo%402x.png and git%40github.com:acme/app.git', 'GET /img/logo%402x.png and git%40github.com:acme/app.git'],
  ]
  for (const [input, expected] of CASES) {
    test(short(input), () => expect(run(input).out).toBe(expected))
  }
})

/**
 * Numbers as web pages and word processors typeset them: no-break spaces (French phone numbers, `&nbsp;`
 * in a card number shown on a page), narrow no-break and figure spaces, non-breaking hyphens (kept so a
 * phone number does not wrap), en dashes, full-width digits typed with a Japanese input method. A reader
 * sees the same number as with an ASCII space or hyphen; these went through raw. The characters around
 * a value stay as they were.
 */
describe('typographic spaces, hyphens and full-width forms separate like their ASCII forms', () => {
  const CASES: [string, string][] = [
    ['appelez le 06\u00A012\u00A034\u00A056\u00A078', 'appelez le [REDACTED:phone]'],
    ['appelez le 01\u202F23\u202F45\u202F67\u202F89 svp', 'appelez le [REDACTED:phone] svp'],
    ['call +44\u00A020\u00A07946\u00A00958', 'call [REDACTED:phone]'],
    ['call 415\u2011555\u20110132 today', 'call [REDACTED:phone] today'],
    ['call (555)\u00A0555\u20130199', 'call [REDACTED:phone]'],
    ['card 4111\u00A01111\u00A01111\u00A01111 declined', 'card [REDACTED:credit_card] declined'],
    ['card 5555\u20075555\u20075555\u20074444', 'card [REDACTED:credit_card]'],
    ['IBAN DE89\u00A03704\u00A00044\u00A00532\u00A00130\u00A000', 'IBAN [REDACTED:iban]'],
    ['SSN 123\u00A045\u00A06789', 'SSN [REDACTED:ssn]'],
    ['電話 ０３－１２３４－５６７８ まで', '電話 [REDACTED:phone] まで'],
    ['password:\u00A0hunter2', 'password:\u00A0[REDACTED:secret]'],
    ['メール jane.doe＠example.com へ', 'メール [REDACTED:email] へ'],
    // still look-alikes: prices and counts typeset the same way
    ['total 1\u00A0234,56\u00A0€ and 12\u202F345\u202F678 views', 'total 1\u00A0234,56\u00A0€ and 12\u202F345\u202F678 views'],
    ['from 2020\u20132024, pages 10\u201312', 'from 2020\u20132024, pages 10\u201312'],
  ]
  for (const [input, expected] of CASES) {
    test(short(input), () => {
      const { out } = run(input)
      expect(out).toBe(expected)
      expect(sanitizeText(out, {})).toBe(out)
    })
  }
})

/**
 * Characters that show nothing (src/sanitize/invisible.ts): zero-width spaces a web page puts inside an
 * address so that scrapers miss it (a copy keeps them), soft hyphens, and the direction marks and
 * isolates right-to-left text puts inside numbers. A reader sees the value whole; they went through raw.
 * Whatever is kept keeps its invisible characters; a replaced value takes the ones inside it along.
 */
describe('invisible characters inside a value', () => {
  const ZW = '\u200B'
  const CASES: [string, string][] = [
    [`write to jane${ZW}@${ZW}example.com please`, 'write to [REDACTED:email] please'],
    ['mail: jane.doe\u00AD@exam\u00ADple.com', 'mail: [REDACTED:email]'],
    ['call \u200E+972\u200E 52\u200E-123-4567\u200E today', 'call \u200E[REDACTED:phone]\u200E today'],
    ['התקשרו אלי \u2066054-123-4567\u2069 בערב', 'התקשרו אלי \u2066[REDACTED:phone]\u2069 בערב'],
    ['اتصل بي \u061C+966\u061C 50 123 4567', 'اتصل بي \u061C[REDACTED:phone]'],
    [`card 4111${ZW}1111\u2060 1111 1111 declined`, 'card [REDACTED:credit_card] declined'],
    ['IBAN DE89\uFEFF3704 0044 0532 0130 00', 'IBAN [REDACTED:iban]'],
    [`key sk_live_${ZW}4eC39HqLyjWDarjtT1zdp7dc`, 'key [REDACTED:stripe_key]'],
    ['password\u200C: hunter2', 'password\u200C: [REDACTED:secret]'],
    // still look-alikes: words joined by a zero-width joiner, emoji sequences, an RTL price
    ['👨\u200D👩\u200D👧 family plan, 12\u200F,99 ₪ a month', '👨\u200D👩\u200D👧 family plan, 12\u200F,99 ₪ a month'],
  ]
  for (const [input, expected] of CASES) {
    test(short(input), () => {
      const { out } = run(input)
      expect(out).toBe(expected)
      expect(sanitizeText(out, {})).toBe(out)
    })
  }

  test('the scan of a text and the offset map read the same set of invisible characters', () => {
    const differ: number[] = []
    for (let code = 0; code < 0x10000; code++) if (INVISIBLE.test(String.fromCharCode(code)) !== isInvisible(code)) differ.push(code)
    expect(differ).toEqual([])
  })

  test('a JSON key with an invisible character inside a sensitive name is still that name', () => {
    const counts: RedactionCounts = {}
    const out = sanitizeJson({ [`pass${ZW}word`]: 'hunter2-hunter2', [`api\u00ADKey`]: 'k-8f3a9c2e71d4b6a0' }, counts) as Record<string, unknown>
    expect(Object.values(out)).toEqual(['[REDACTED:secret]', '[REDACTED:secret]'])
    expect(isSensitiveKey(`to${ZW}ken`)).toBe(true)
  })
})

/**
 * A phone number in an encoded URL of a console line (a failed sign-up or verification request): its `+`
 * is `%2B` and its spaces `%20`. The rules read those two decoded where they are part of a number; every
 * other escape, and those two elsewhere, stay as they are.
 */
describe('percent-encoded phone numbers', () => {
  const CASES: [string, string][] = [
    ['GET /api/verify?phone=%2B14155550132&lang=en 422', 'GET /api/verify?phone=[REDACTED:phone]&lang=en 422'],
    ['POST https://shop.example/signup?tel=%2B44%2020%207946%200958 failed', 'POST https://shop.example/signup?tel=[REDACTED:phone] failed'],
    ['fetch /otp?to=%2b4915112345678', 'fetch /otp?to=[REDACTED:phone]'],
    ['redirect /cb?next=%2Fprofile%3Fphone%3D%2B33612345678', 'redirect /cb?next=%2Fprofile%3Fphone%3D[REDACTED:phone]'],
    // still look-alikes: encoded pluses and spaces that are no number
    ['search?q=c%2B%2B%20templates&page%202%20of%2010', 'search?q=c%2B%2B%20templates&page%202%20of%2010'],
    ['GET /img/a%2B1.png?v=2024%2012', 'GET /img/a%2B1.png?v=2024%2012'],
  ]
  for (const [input, expected] of CASES) {
    test(short(input), () => {
      const { out } = run(input)
      expect(out).toBe(expected)
      expect(sanitizeText(out, {})).toBe(out)
    })
  }
  test('a value the rules read ending on a decoded character is replaced with its whole escape, and one ending before an invisible character leaves it', () => {
    // A rule of its own: what ends at a `+` read from `%2B`, or just before a zero-width space.
    const plusEnd = rule({ name: 'probe', kind: 'pii', detect: matcher(/ab\+|cd(?=9)/) })
    expect(sanitizeText('xab%2B1 y', {}, [plusEnd])).toBe('x[REDACTED:probe]1 y')
    expect(sanitizeText('xc\u200Bd\u200B9', {}, [plusEnd])).toBe('x[REDACTED:probe]\u200B9')
  })
})

describe('entropy floors and placeholders', () => {
  test('Shannon entropy: zero for a repeated character, log2(n) for n distinct ones', () => {
    expect(shannonEntropy('aaaaaaaa')).toBe(0)
    expect(shannonEntropy('abcd')).toBe(2)
    expect(shannonEntropy(T.fixloop1.slice(3))).toBeGreaterThan(4)
  })

  test('placeholders, documentation examples and templates are kept; the same shapes with random parts are not', () => {
    const placeholders = [
      'sk_test_xxxxxxxxxxxxxxxxxxxxxxxx',
      'sk_live_0000000000000000000000000000',
      'AKIAIOSFODNN7EXAMPLE',
      'AKIAXXXXXXXXXXXXXXXX',
      'ghp_000000000000000000000000000000000000',
      'npm_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
      'AIzaxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
      'sk-proj-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
      'xoxb-your-token-here-xxxxxxxxxxxx',
      'glpat-xxxxxxxxxxxxxxxxxxxx',
      'https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX',
      'Bearer xxxxxxxxxxxxxxxx',
      'password: ******',
      'token=${API_TOKEN}',
      'secret: {{ secrets.DEPLOY_KEY }}',
    ]
    for (const p of placeholders) expect(run(p).out, p).toBe(p)
    for (const real of [T.stripeLive, T.awsId1, T.ghp, T.npm1, T.google1, T.openaiProj, T.xoxb, T.glpat2]) {
      expect(run(real).out, real).toMatch(/^\[REDACTED:[a-z_]+\]$/)
    }
    expect(isPlaceholder('IOSFODNN7EXAMPLE', 2.5)).toBe(true)
    expect(isPlaceholder(T.awsId1.slice(4), 2.5)).toBe(false)
  })
})

describe('checks behind the guards', () => {
  test('Luhn and issuer table: cards pass, epochs and ids do not', () => {
    expect(luhnValid('4111111111111111')).toBe(true)
    expect(luhnValid('4111111111111112')).toBe(false)
    expect(cardBrand('378282246310005')).toBe('amex')
    expect(cardBrand('5555555555554444')).toBe('mastercard')
    expect(cardBrand('2223003122003222')).toBe('mastercard')
    expect(cardBrand('6011111111111117')).toBe('discover')
    expect(isCardNumber('1732198765432')).toBe(false) // epoch ms: no issuer starts with 1
    expect(isCardNumber('4111 1111 1111 1111')).toBe(true)
  })

  test('IBAN: country length and mod 97', () => {
    expect(isIban('DE89370400440532013000')).toBe(true)
    expect(isIban('de89370400440532013000')).toBe(true)
    expect(isIban('DE89370400440532013001')).toBe(false)
    expect(isIban('DE8937040044053201300')).toBe(false) // one short
    expect(isIban('XX89370400440532013000')).toBe(false)
  })

  test('IPv4 and IPv6 are parsed, not shaped', () => {
    expect(parseIPv4('192.168.1.1')).toEqual([192, 168, 1, 1])
    for (const bad of ['256.1.1.1', '1.2.3', '01.2.3.4', '1.2.3.4.5']) expect(parseIPv4(bad), bad).toBeUndefined()
    for (const ok of ['::1', '2001:db8::1', 'fe80::1ff:fe23:4567:890a', '::ffff:192.0.2.128', '1:2:3:4:5:6:7:8']) expect(parseIPv6(ok), ok).toBeDefined()
    for (const bad of ['12:30:45', '1::2::3', '00:1A:2B:3C:4D:5E', '12345::1', '1:2:3:4:5:6:7:8:9', 'g::1']) expect(parseIPv6(bad), bad).toBeUndefined()
  })

  test('phone shapes: international, North American, trunk-prefixed; not dates or bare digits', () => {
    for (const ok of ['+1 415 555 0132', '(415) 555-0132', '415.555.0132', '1-800-555-0199', '020 7946 0958', '0171 1234567', '+4915112345678', '0044 20 7946 0958']) {
      expect(isPhoneShape(ok), ok).toBe(true)
    }
    for (const bad of ['2024-01-15', '01.02.2024', '12 345 678', '1732198765', '415-55-0132', '0 1 2 3 4 5 6 7 8', '1.2.3.4']) expect(isPhoneShape(bad), bad).toBe(false)
  })

  test('sensitive names: exact, contained and suffix matches; URL-only names only in URLs', () => {
    for (const k of ['password', 'Password', 'db_password', 'passwordConfirmation', 'client_secret', 'apiKey', 'X-Api-Key', 'access_token', 'refreshToken', 'set-cookie', 'Authorization', 'session', 'jsessionid', 'private_key', 'pwd', 'auth']) {
      expect(isSensitiveKey(k), k).toBe(true)
    }
    // A service's password written `_PASS` (.env files, config dumps), one-time and card security codes.
    for (const k of ['DB_PASS', 'smtpPass', 'MAIL_PASS', 'REDIS_PASS', 'passcode', 'cvc', 'card_cvv', 'cvv2', 'cc-csc']) {
      expect(isSensitiveKey(k), k).toBe(true)
    }
    for (const k of ['bypass', 'compass', 'trespass', 'render_pass', 'first_pass', 'cvc_enabled', 'lessons', 'pincode']) expect(isSensitiveKey(k), k).toBe(false)
    for (const k of ['author', 'oauth_provider', 'sessions_count', 'token_count', 'max_tokens', 'keyboard', 'code', 'signature', 'public_key', '[REDACTED:opaque_token]']) {
      expect(isSensitiveKey(k), k).toBe(false)
    }
    for (const k of ['code', 'sig', 'X-Amz-Signature', 'X-Goog-Signature', 'id_token']) expect(isSensitiveParam(k), k).toBe(true)
  })
})

describe('submitter echoes', () => {
  const rules = rulesFor({ email: 'Jane.Doe@Example.com', name: 'Jane van Doe', externalUserId: 'usr_8f3k2' })

  test('their email, name and id in the text are replaced with their own tokens', () => {
    const { out, counts } = run('I am jane.doe@example.com (Jane  van Doe), user usr_8f3k2; Jane says hi', rules)
    expect(out).toBe('I am [REDACTED:submitter_email] ([REDACTED:submitter_name]), user [REDACTED:submitter_id]; [REDACTED:submitter_name] says hi')
    expect(counts).toEqual({ submitter_email: 1, submitter_name: 2, submitter_id: 1 })
    expect(sanitizeText(out, {}, rules)).toBe(out)
  })

  test('short name parts and ids are not hunted on their own; other emails are still emails', () => {
    const r = rulesFor({ name: 'Al Li', externalUserId: '42', email: 'al@example.com' })
    expect(run('Al said 42 is the answer', r).out).toBe('Al said 42 is the answer')
    expect(run('al li wrote to bob@example.com', r).out).toBe('[REDACTED:submitter_name] wrote to [REDACTED:email]')
  })

  test('a lowercase word equal to a name part is left alone', () => {
    const r = rulesFor({ name: 'Will Hunt' })
    expect(run('Will said the export will hang; Hunt agreed; will hunt is the full name in any case', r).out).toBe(
      '[REDACTED:submitter_name] said the export will hang; [REDACTED:submitter_name] agreed; [REDACTED:submitter_name] is the full name in any case',
    )
  })

  test('without a submitter the table is the plain one', () => {
    expect(rulesFor(undefined)).toBe(RULES)
    expect(rulesFor({ email: null, name: null, externalUserId: null })).toBe(RULES)
  })
})

describe('user agents get the credential rules only', () => {
  test('version numbers stay, a credential in the agent goes', () => {
    const ua = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.109 Safari/537.36 Build/10.0.0.1'
    expect(run(ua, CREDENTIAL_RULES).out).toBe(ua)
    const leaky = `MyApp/2.1 (+https://example.com) token=${T.ghp}`
    const { out, counts } = run(leaky, CREDENTIAL_RULES)
    expect(out).toBe('MyApp/2.1 (+https://example.com) token=[REDACTED:github_token]')
    expect(counts).toEqual({ github_token: 1 })
  })
})

describe('sanitizeJson', () => {
  test('sensitive keys lose their whole value, other strings go through the rules, keys too', () => {
    const counts: RedactionCounts = {}
    const out = sanitizeJson(
      {
        password: 'hunter2',
        apiKey: { id: 1, value: 'abc' },
        pin: 1234,
        token: null,
        rememberPassword: true,
        plan: 'pro',
        contact: ['jane@example.com', 'call +1 415 555 0132'],
        nested: { deeper: { 'set-cookie': 'sid=1' } },
        'jane@example.com': 'seen',
        'bob@example.com': 'seen too',
      },
      counts,
    )
    expect(out).toEqual({
      password: '[REDACTED:secret]',
      apiKey: '[REDACTED:secret]',
      pin: '[REDACTED:secret]',
      token: null,
      rememberPassword: true,
      plan: 'pro',
      contact: ['[REDACTED:email]', 'call [REDACTED:phone]'],
      nested: { deeper: { 'set-cookie': '[REDACTED:secret]' } },
      '[REDACTED:email]': 'seen',
      '[REDACTED:email] (2)': 'seen too',
    })
    expect(counts).toEqual({ secret: 4, email: 3, phone: 1 })
    const again: RedactionCounts = {}
    expect(sanitizeJson(out, again)).toEqual(out)
    expect(again).toEqual({})
  })
})

describe('sanitizeUrl', () => {
  const CASES: { url: string; gone: string[]; counts: RedactionCounts }[] = [
    {
      url: `https://app.example.com/reset/${T.opaque1}?email=jane%40example.com&next=%2Fhome&utm_source=mail`,
      gone: [T.opaque1, 'jane%40example.com', 'jane@example.com'],
      counts: { opaque_token: 1, email: 1 },
    },
    {
      url: 'https://app.example.com/callback?code=4%2F0AfJohXk-q9Zz&state=af0ifjsldkj#access_token=ya29.a0AfH6SM&token_type=Bearer',
      gone: ['4%2F0AfJohXk-q9Zz', 'ya29.a0AfH6SM'],
      counts: { secret: 2 },
    },
    {
      url: 'https://bob:hunter2@intranet.example.com/users/bob.smith@example.com/profile',
      gone: ['hunter2', 'bob.smith@example.com', 'bob.smith%40example.com'],
      counts: { url_credentials: 1, email: 1 },
    },
    {
      url: `https://bucket.s3.amazonaws.com/a.png?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=${T.awsId1}%2F20240101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature=${'ab12'.repeat(16)}`,
      gone: [T.awsId1, 'ab12'.repeat(16)],
      counts: { secret: 2 },
    },
    {
      url: 'https://app.example.com/#/users/203.0.113.7/settings?phone=%2B1%20415%20555%200132',
      gone: ['203.0.113.7', '415%20555%200132'],
      counts: { ipv4: 1, phone: 1 },
    },
    {
      url: 'file:///Users/jane/projects/site/index.html',
      gone: ['jane'],
      counts: { username: 1 },
    },
    {
      url: 'mailto:jane@example.com?subject=hello',
      gone: ['jane@example.com'],
      counts: { email: 1 },
    },
  ]
  for (const c of CASES) {
    test(short(c.url), () => {
      const counts: RedactionCounts = {}
      const out = sanitizeUrl(c.url, counts)
      expect(URL.canParse(out)).toBe(true)
      for (const g of c.gone) expect(out).not.toContain(g)
      expect(counts).toEqual(c.counts)
      expect(sanitizeUrl(out, {})).toBe(out)
      expect(new URL(out).host).toBe(new URL(c.url).host)
    })
  }

  test('tokens are percent-encoded in the URL and decode back to the bracket form', () => {
    const out = sanitizeUrl('https://example.com/p?token=abc123&q=jane%40example.com', {})
    expect(out).toBe('https://example.com/p?token=%5BREDACTED%3Asecret%5D&q=%5BREDACTED%3Aemail%5D')
    const params = new URL(out).searchParams
    expect(params.get('token')).toBe('[REDACTED:secret]')
    expect(params.get('q')).toBe('[REDACTED:email]')
  })

  test('a URL with nothing to replace comes back byte for byte, even when unnormalized', () => {
    for (const url of ['https://Example.com:443/a/../b?x=1&y=%7e#top', 'https://example.com/home/dashboard', 'https://example.com/p/550e8400-e29b-41d4-a716-446655440000?v=1.2.3.4']) {
      const counts: RedactionCounts = {}
      expect(sanitizeUrl(url, counts)).toBe(url)
      expect(counts).toEqual({})
    }
  })

  test('text that is not a URL is sanitized as text', () => {
    expect(sanitizeUrl('not a url jane@example.com', {})).toBe('not a url [REDACTED:email]')
  })
})

describe('sanitizeReport', () => {
  test('structure is kept: console level and ts, bbox, screenshotKey; all free text is sanitized', () => {
    const { report, redactions } = sanitizeReport(
      {
        text: 'Hi, I am Jane Doe (jane@example.com)',
        url: 'https://app.example.com/?token=abc123',
        userAgent: `Mozilla/5.0 Chrome/120.0.0.0 key=${T.ghp} 10.0.0.1`,
        consoleLogs: [{ level: 'error', message: 'POST failed for jane@example.com from 203.0.113.5', ts: 1732198765432 }],
        metadata: { secret: 'hunter2', n: 5 },
        componentTarget: { name: 'Row jane@example.com', meta: { testId: 'row-1', path: '/home/jane/app' }, bbox: { x: 1, y: 2, w: 3, h: 4 }, screenshotKey: 'apps/app1/aB3dEf9hIjK2mN4pQ7sT1vW5xY8zA0cD6fG/shot.png' },
      },
      { email: 'jane@example.com', name: 'Jane Doe', externalUserId: null },
    )
    expect(report.text).toBe('Hi, I am [REDACTED:submitter_name] ([REDACTED:submitter_email])')
    expect(report.url).toBe('https://app.example.com/?token=%5BREDACTED%3Asecret%5D')
    expect(report.userAgent).toBe('Mozilla/5.0 Chrome/120.0.0.0 key=[REDACTED:github_token] 10.0.0.1')
    expect(report.consoleLogs).toEqual([{ level: 'error', message: 'POST failed for [REDACTED:submitter_email] from [REDACTED:ipv4]', ts: 1732198765432 }])
    expect(report.metadata).toEqual({ secret: '[REDACTED:secret]', n: 5 })
    expect(report.componentTarget).toEqual({
      name: 'Row [REDACTED:submitter_email]',
      meta: { testId: 'row-1', path: '/home/[REDACTED:username]/app' },
      bbox: { x: 1, y: 2, w: 3, h: 4 },
      screenshotKey: 'apps/app1/aB3dEf9hIjK2mN4pQ7sT1vW5xY8zA0cD6fG/shot.png',
    })
    expect(redactions).toEqual({ submitter_name: 1, submitter_email: 3, secret: 2, github_token: 1, ipv4: 1, username: 1 })
  })
})

describe('sanitizeStored: what the worker writes back', () => {
  test('JSON columns round-trip through the rules', () => {
    const { columns, redactions } = sanitizeStored({
      text: 'hi jane@example.com',
      url: null,
      userAgent: null,
      consoleLogs: '[{"level":"log","message":"token=abc123","ts":1}]',
      metadata: null,
      componentTarget: '{"name":"Row","screenshotKey":"k/1.png"}',
    })
    expect(columns).toEqual({
      text: 'hi [REDACTED:email]',
      url: null,
      userAgent: null,
      consoleLogs: '[{"level":"log","message":"token=[REDACTED:secret]","ts":1}]',
      metadata: null,
      componentTarget: '{"name":"Row","screenshotKey":"k/1.png"}',
    })
    expect(redactions).toEqual({ email: 1, secret: 1 })
  })

  test('a report the rules cannot process is withheld, never kept raw', () => {
    const raw = { text: 'password=hunter2', url: 'https://x.example.com/?token=abc', userAgent: 'UA', metadata: '{"a":"b"}', componentTarget: '{"name":"n","bbox":{"x":0,"y":0,"w":1,"h":1}}' }
    // A message that is not a string (no valid submission has one) makes the rules throw.
    const odd = sanitizeStored({ ...raw, consoleLogs: '[{"level":"log","message":5,"ts":1}]' })
    expect(odd.redactions).toEqual({ unsanitizable: 1 })
    expect(odd.columns).toEqual({
      text: '[REDACTED:unsanitizable]',
      url: null,
      userAgent: null,
      consoleLogs: '[{"level":"log","message":"[REDACTED:unsanitizable]","ts":1}]',
      metadata: '{}',
      componentTarget: '{"name":"[REDACTED:unsanitizable]","bbox":{"x":0,"y":0,"w":1,"h":1}}',
    })
  })

  test('a damaged JSON column makes the worker step throw (it retries); a preview withholds everything', () => {
    const damaged = { text: 'password=hunter2', url: null, userAgent: null, consoleLogs: '[{"level"', metadata: null, componentTarget: null }
    expect(() => sanitizeStored(damaged)).toThrow()
    expect(previewStored(damaged)).toEqual({ text: '[REDACTED:unsanitizable]', url: null, userAgent: null, consoleLogs: null, metadata: null, componentTarget: null })
    expect(previewStored({ ...damaged, consoleLogs: null }).text).toBe('password=[REDACTED:secret]')
  })
})

describe('property: idempotent, and no planted secret survives', () => {
  const NOISE = ['the', 'button', 'is', 'broken', 'after', 'login', '404', 'v2', 'ok', '—', 'see:', '(', ')', '"', "'", '=', ':', '/', '#', '@', '1.0', '2024', '%', '&', '?', 'ünïcödé', '🙂']
  const SEPARATORS = [' ', '\n', ' ; ', ', ', ' | ', '\t', '. ', ' — ']

  test('3000 seeded mixes of secrets, PII, look-alikes and noise', () => {
    const rng = prng(20240601)
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]
    let planted = 0
    for (let i = 0; i < 3000; i++) {
      const parts: string[] = []
      const secrets: string[] = []
      for (let n = 1 + Math.floor(rng() * 6); n > 0; n--) {
        const k = rng()
        if (k < 0.4) {
          const [, input, values] = pick(TRUE_POSITIVES)
          parts.push(input)
          secrets.push(...values)
        } else if (k < 0.7) parts.push(pick(LOOK_ALIKES))
        else if (k < 0.9) parts.push(Array.from({ length: 1 + Math.floor(rng() * 5) }, () => pick(NOISE)).join(' '))
        else parts.push(randomString(rng, B64URL + ' .:/@=', 1 + Math.floor(rng() * 50)))
      }
      const text = parts.reduce((acc, p) => acc + pick(SEPARATORS) + p)
      const once = sanitizeText(text, {})
      const twice = sanitizeText(once, {})
      if (twice !== once) throw new Error(`not idempotent:\n${JSON.stringify(text)}\n${JSON.stringify(once)}\n${JSON.stringify(twice)}`)
      // (A look-alike may hold the same characters as a planted value: `version 219.09.9998` is the dotted SSN's.)
      const kept = parts.filter((p) => LOOK_ALIKES.includes(p))
      for (const s of secrets) if (once.includes(s) && !kept.some((p) => p.includes(s))) throw new Error(`planted ${JSON.stringify(s)} survived in:\n${JSON.stringify(once)}`)
      planted += secrets.length
    }
    expect(planted).toBeGreaterThan(1000)
  })

  test('1000 seeded true positives with an invisible character put inside each planted value: none survives, in either form', () => {
    const rng = prng(31337)
    const INVISIBLES = ['\u200B', '\u200C', '\u200D', '\u00AD', '\u2060', '\uFEFF', '\u200E', '\u200F', '\u2066', '\u2069', '\u061C']
    let planted = 0
    for (let i = 0; i < 1000; i++) {
      const [rule, input, values] = TRUE_POSITIVES[i % TRUE_POSITIVES.length]
      let text = input
      const hidden: string[] = []
      for (const v of values) {
        if (v.length < 4 || !text.includes(v)) continue
        const at = 1 + Math.floor(rng() * (v.length - 2))
        const w = v.slice(0, at) + INVISIBLES[Math.floor(rng() * INVISIBLES.length)] + v.slice(at)
        text = text.replace(v, w)
        hidden.push(w)
      }
      const once = sanitizeText(text, {})
      if (sanitizeText(once, {}) !== once) throw new Error(`not idempotent:\n${JSON.stringify(text)}\n${JSON.stringify(once)}`)
      for (const w of hidden) {
        const plain = w.replace(/[\u200B-\u200F\u00AD\u2060\uFEFF\u2066-\u2069\u061C]/g, '')
        if (once.includes(w) || once.includes(plain)) throw new Error(`${rule}: planted ${JSON.stringify(w)} survived in:\n${JSON.stringify(once)}`)
      }
      planted += hidden.length
    }
    expect(planted).toBeGreaterThan(800)
  })

  test('3000 seeded glued fragments (no separators): still idempotent, URLs still valid', () => {
    const rng = prng(77)
    const ALPHABETS = ['0123456789', '0123456789 -.', 'abcdefABCDEF0123456789:', 'AKIAxyz@.com-_=:"\' /', 'password=token: Bearer Basic ', '0123456789+() -', 'ghp_sk-ant-AIza xoxb-', 'DE89GB82 0123456789', '/Users/home/C:\\', '[]REDACTED:email_%5B']
    for (let i = 0; i < 3000; i++) {
      let text = ''
      for (let n = 1 + Math.floor(rng() * 6); n > 0; n--) text += randomString(rng, ALPHABETS[Math.floor(rng() * ALPHABETS.length)], 1 + Math.floor(rng() * 30))
      const once = sanitizeText(text, {})
      if (sanitizeText(once, {}) !== once) throw new Error(`not idempotent: ${JSON.stringify(text)}`)
      const url = `https://example.com/${encodeURIComponent(text).slice(0, 80)}?q=${encodeURIComponent(text)}#${text.replace(/\s/g, '')}`
      if (!URL.canParse(url)) continue
      const u1 = sanitizeUrl(url, {})
      if (!URL.canParse(u1) || sanitizeUrl(u1, {}) !== u1) throw new Error(`URL not stable: ${url}\n${u1}`)
    }
  })
})

describe('adversarial input', () => {
  // No timing assertions (CI machines vary); these finish in milliseconds, a backtracking regex would not.
  const N = 8192
  const fill = (s: string) => s.repeat(Math.ceil(N / s.length)).slice(0, N)
  const INPUTS = ['a', '1', '1 ', '12-', 'a=', '"a":', 'a:', '1.', 'eyJ.', 'a@a.', '+1 ', '(1) ', 'Ab3+', 'password: ', 'https://', 'a://b:c', 'DE89 ', '0 1 2 ', '/Users/', 'C:\\Users\\a ', 'Bearer ', '"password":"\\', '-----BEGIN PRIVATE KEY-----', 'ff:']
  for (const unit of INPUTS) {
    test(`8 KB of ${JSON.stringify(unit)}`, () => {
      const text = fill(unit)
      const out = sanitizeText(text, {})
      expect(sanitizeText(out, {})).toBe(out)
      expect(URL.canParse(sanitizeUrl('https://example.com/' + encodeURIComponent(text.slice(0, 2000)) + '?q=' + encodeURIComponent(text), {}))).toBe(true)
    })
  }
})
