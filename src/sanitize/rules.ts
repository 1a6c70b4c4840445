/**
 * The sanitizer's rule table, in the order the rules run. Each rule has a name (its redaction-count key
 * and token type), a detector, a false-positive guard and its replacement token `[REDACTED:<name>]`.
 * Credentials come first, so a password inside a URL is caught as a credential before the email rule
 * sees the `user@host` around it. docs/sanitizing.md is the readable version of this table.
 */
import { cardLength } from './cards'
import { isPlaceholder, shannonEntropy } from './entropy'
import { after, before, group, hasAwsContext, isBasicCredential, isIdContext, isJwtHeader, isPackageVersionContext, isVersionContext, mixesCharacterClasses, NAMED_PRODUCT_BEFORE } from './guards'
import { isIban } from './iban'
import { isNetmask, parseIPv4 } from './ip'
import { isNonSecretValue, isPassphraseKey, isSensitiveKey, isSensitiveParam, isTemplateName, startsPassPhrase } from './keys'
import { narrowCard, narrowIban, narrowIpv6, narrowPhone } from './narrow'
import { contains, matcher, reslice, rule, type Candidate, type Rule } from './rule'

/** The random part of a vendor token: its first participating group named `rand…`. */
function randomPart(c: Candidate): string {
  for (const [name, value] of Object.entries(c.match.groups ?? {})) if (value !== undefined && name.startsWith('rand')) return value
  return c.value
}

/**
 * A vendor token: the whole token is replaced. Its random part must clear an entropy floor (bits per
 * character) and hold no placeholder word, the way gitleaks keeps `sk_test_xxxx…` out of its findings.
 */
function vendor(name: string, pattern: RegExp, floor = 3, mayMatch?: (text: string) => boolean): Rule {
  return rule({ name, kind: 'credential', detect: matcher(pattern), mayMatch, keep: (c) => isPlaceholder(randomPart(c), floor) })
}

/** Prechecks (`Rule.mayMatch`): most texts hold none of a rule's literals, and a failed check skips it. */
const hasDigit = (text: string): boolean => /[0-9]/.test(text)
const hasSeparator = (text: string): boolean => /[:=：＝]/.test(text)

/**
 * `key=value`, `key: value`, `"key": "value"` (also backslash-escaped JSON); only the value is replaced.
 * An auth scheme word (`Authorization: Bearer …`) belongs to the key side, never the value. The
 * lookahead skips keys without a sensitive stem cheaply; `isSensitiveKey` makes the real decision.
 */
// Letters of any script as key characters, as explicit BMP ranges (Latin-1 and up, skipping general and
// CJK punctuation and the full-width forms, so `：` and `＝` stay separators) rather than \p{L} with the
// `u` flag, which made this rule — run at every word start of every field — seven times slower.
const KEY_VALUE =
  /(?<![\w\u00C0-\u1FFF\u2C00-\u2FFF\u3040-\uFEFF])(?<q>\\?["']|)(?=[\w.\-[\]\u00C0-\u1FFF\u2C00-\u2FFF\u3040-\uFEFF]{0,63}?(?:pass|pwd|auth|session|sid|cookie|credential|pin|otp|code|secret|token|key|sig|nonce|hmac|cvc|cvv|csc|contrase|clave|senha|wachtwoord|has[lł]o|l[öo]senord|salasana|parola|kennwort|heslo|jelsz|[şs]ifre|пароль|パスワード|密码|密碼|비밀번호))(?<key>[A-Za-z\u00C0-\u1FFF\u2C00-\u2FFF\u3040-\uFEFF][\w.\-[\]\u00C0-\u1FFF\u2C00-\u2FFF\u3040-\uFEFF]{0,63})\k<q>[ \t]{0,4}(?:[:=：＝][ \t]{0,4}|(?<nl>[:：])[ \t]{0,4}(?:\r?\n|\\(?:r\\)?n)[ \t]{1,16})(?:(?:Bearer|Basic|Token|Digest)[ \t]+|(?!(?:Bearer|Basic|Token|Digest)\b))(?:\\"(?<secret1>(?:[^"\\\r\n]|\\[^"\r\n]){1,4096})\\"|"(?<secret2>(?:[^"\\\r\n]|\\.){1,4096})"|'(?<secret3>[^'\r\n]{1,4096})'|(?<secret5>\$\{[^}\s]{1,64}\}|\{\{[^}]{1,64}\}\})|[“”„«»「『]\s*(?<secret6>[^“”„«»」』\r\n]{1,4096}?)\s*[“”»«」』]|\[(?!REDACTED:)(?<secret7>[^\]\s]{1,256})\]|\((?<secret8>[^)\s]{1,256})\)|<(?<secret9>[^<>\s]{1,256})>|\{(?<secret10>[^{}\s]{1,256})\}|(?<secret4>[^\s"'&;,<>(){}[\]\\“”„«»「」『』]{1,256}))/i

/** A `Cookie:` / `Set-Cookie:` header line: every cookie on it goes. */
const COOKIE_HEADER = /(?<![\w-])(?:set-)?cookie[ \t]*:[ \t]*(?<secret>[^\r\n]{1,4096})/i

/**
 * curl's `-u user:password` / `--user user:password` (a command pasted from a terminal or a README; also
 * `-uuser:password`, the short option with its value attached): the pair goes. Only on a line with `curl` before it (the rule's guard): `docker run -u 1000:1000` is a user
 * and a group.
 */
const CURL_USER = /(?<![\w-])(?:-u(?:[ \t]+|=)?|--user(?:[ \t]+|=))(?:'(?<secret11>[^'\s:]{0,256}:[^'\r\n]{1,256})'|"(?<secret12>[^"\s:]{0,256}:[^"\r\n]{1,256})"|(?<secret13>[^\s'":]{0,256}:[^\s'"]{1,256}))/

/**
 * The MySQL/MariaDB clients' password with the short option, always attached (`mysql -uroot -pS3cret db`;
 * `-p` alone, with a space after it, asks for the password and the next word is the database). Only on a
 * line with one of those commands before it (the rule's guard): `-p` means other things elsewhere.
 */
const MYSQL_PASSWORD = /(?<![\w-])-p(?:'(?<secret14>[^'\r\n]{1,256})'|"(?<secret15>[^"\r\n]{1,256})"|(?<secret16>[^\s'"]{1,256}))/
const MYSQL_COMMANDS = /(?<![\w-])(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlshow|mariadb|mariadb-dump|mariadb-admin)(?=\s)/g

/** Is this option an argument of a command `command` matches: before it on its line, with no `;`, `|`, `&&` or `, ` between? */
function isArgumentOf(c: Candidate, command: RegExp): boolean {
  const line = before(c, 256)
  let at = -1
  command.lastIndex = 0
  for (let m = command.exec(line); m !== null; m = command.exec(line)) at = m.index
  return at !== -1 && !/[;|\n]|&&|, /.test(line.slice(at))
}
const CURL_COMMAND = /(?<![\w-])curl(?=\s)/g

/** Characters of an unquoted value (what KEY_VALUE's last alternative takes). */
const UNQUOTED_VALUE = /[^\s"'&;,<>(){}[\]\\“”„«»「」『』]/
/** The regex reads at most this much of an unquoted value, so that rejected keys stay cheap. */
const UNQUOTED_READ = 256
/**
 * `&` or `,` inside a value (`Tr0ub4dor&3`, `a,b,c`), not the start of the next pair (`&name=`, `,name=`,
 * `,name:`). A comma followed by a space is prose and ends the value.
 */
const SEPARATOR_IN_VALUE = /^(?:&(?![\w.[\]-]{1,64}=)|,(?![\w.[\]-]{1,64}[=:]))[^\s"'&;,<>(){}[\]\\]/
/**
 * One more word of a pass phrase on the same line (`correct horse battery staple`): letters, digits,
 * symbols; not a comment, a bracket, a dash, nor the next `name=value` / `name: value` pair.
 */
const PHRASE_WORD = /^ (?![#(\-])(?![\w.[\]-]{1,64}[=:：＝])[^\s"'&;,<>(){}[\]\\]{1,64}/
/** A pass phrase is at most this many words long; what follows is prose again. */
const PHRASE_WORDS = 8

/** Is the value of this `key: value` / `key=value` candidate written after a colon (prose-like)? */
const afterColon = (c: Candidate): boolean => group(c, 'key') === undefined || /[:：]/.test(c.text.slice(c.match.index, c.start))

/** A parameter's name comes just after `?`, `&`, `#` or `;` (the match starts with the name, or its quote). */
const inQueryAt = (text: string, index: number): boolean => /[?&#;]/.test(text[index - 1] ?? '')

/** The first look at a `key=value` match: is its key sensitive? (Most key-like words are not.) */
function hasSensitiveKey(m: RegExpExecArray, text: string): boolean {
  const key = m.groups?.key
  if (key === undefined) return true // the cookie header
  return inQueryAt(text, m.index) ? isSensitiveParam(key) : isSensitiveKey(key)
}

/**
 * Keeps `key=value` candidates whose key is sensitive (or a URL parameter such as `?code=`), and
 * stretches an unquoted value to its real end: past what the regex read, over an `&` or `,` that does
 * not start the next pair, and, for a password, over the rest of a pass phrase.
 * A value on the next line (YAML `password:\n  value`) counts only when the key starts its line.
 */
function sensitiveKeyValue(c: Candidate): Candidate | null {
  const key = group(c, 'key')
  if (key === undefined) return c // the cookie header
  const keyStart = c.match.index
  const inQuery = inQueryAt(c.text, keyStart)
  // (A console line may carry its newlines escaped: `password:\\n  value`.)
  if (group(c, 'nl') !== undefined && !/(?:^|\n|\\n)[ \t]*(?:- )?$/.test(c.text.slice(Math.max(0, keyStart - 80), keyStart))) return null
  if (group(c, 'secret4') === undefined) return c
  let end = c.end
  const extend = () => {
    while (end < c.text.length && UNQUOTED_VALUE.test(c.text[end])) end++
  }
  extend()
  if (!inQuery) {
    while (SEPARATOR_IN_VALUE.test(c.text.slice(end, end + 68))) {
      end++
      extend()
    }
  }
  // A password runs on over the rest of its pass phrase, after `:` or `=` alike (`password=abc def ghi`),
  // when its first word starts one; a complete secret ends where it ends (`password=hunter2-Zq9xWv to …`).
  const first = c.text.slice(c.start, end)
  if (!inQuery && isPassphraseKey(key) && group(c, 'nl') === undefined && !isNonSecretValue(first, afterColon(c)) && startsPassPhrase(first)) {
    for (let words = 1; words < PHRASE_WORDS && !/[.!?]$/.test(c.text.slice(c.start, end)); words++) {
      const word = PHRASE_WORD.exec(c.text.slice(end, end + 66))
      if (!word) break
      end += word[0].length
    }
  }
  return end === c.end ? c : reslice(c, c.start, end)
}

/**
 * A percent-encoded address (`jane%40example.com`) sits in an encoded URL, where the local part starts
 * after the last encoded delimiter: in `next=%2Fprofile%3Femail%3Djane%40example.com` the address is
 * `jane%40example.com` and `%2Fprofile%3Femail%3D` is the path and the parameter's name. Escapes of
 * characters a local part has (`%2B` for `+`, `%2E`, `%2D`, `%5F`) stay in it.
 */
function narrowEncodedEmail(c: Candidate): Candidate | null {
  if (c.value.includes('@')) return c
  const at = c.value.lastIndexOf('%40') // a domain holds no `%`
  let from = 0
  for (const m of c.value.slice(0, at).matchAll(/%([0-9A-Fa-f]{2})/g)) {
    if (!/[\w.+-]/.test(String.fromCharCode(parseInt(m[1], 16)))) from = m.index + 3
  }
  if (from >= at) return null
  return from === 0 ? c : reslice(c, c.start + from, c.end)
}

/** Non-personal home folders (and templates) that name nobody. */
const GENERIC_HOMES = /^(?:Shared|Public|Default|Default User|All Users|Guest|\$\{?USER\}?|%USERNAME%|<[^>]*>|~)$/i

export const RULES: readonly Rule[] = [
  // ── credentials ──────────────────────────────────────────────────────────────────────────────────
  rule({
    name: 'private_key',
    kind: 'credential',
    // Armoured private keys. A block cut short (a truncated console message) goes up to where its
    // base64 lines (newline- or `\n`-separated, or long space-separated chunks) and header lines end.
    mayMatch: contains('-----BEGIN '),
    detect: matcher(
      /-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----|(?:(?:\r?\n|\\n)(?:[\w-]+: [^\r\n\\]{0,100}|[A-Za-z0-9+/=]{1,100})|[ \t]+[A-Za-z0-9+/=]{40,100})*)/,
    ),
  }),
  rule({
    name: 'jwt',
    kind: 'credential',
    // base64url, and standard base64 (`+`, `/`, `=` padding) as some libraries and logs write it.
    mayMatch: contains('eyJ'),
    detect: matcher(/(?<![\w+/-])(?<header>eyJ[\w+/-]{2,}={0,2})\.[\w+/-]{2,}={0,2}\.[\w+/-]*={0,2}/),
    keep: (c) => !isJwtHeader(group(c, 'header')!),
  }),
  vendor('aws_access_key_id', /(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)(?<rand>[A-Z0-9]{16})(?![A-Za-z0-9])/i, 2.5),
  rule({
    name: 'aws_secret_access_key',
    kind: 'credential',
    detect: matcher(/(?<![\w/+=-])[A-Za-z0-9/+]{40}(?![\w/+=-])/),
    keep: (c) => !hasAwsContext(c) || !mixesCharacterClasses(c.value) || isPlaceholder(c.value, 3.5),
  }),
  vendor('github_token', /(?<!\w)(?:gh[pousr]_(?<rand>[A-Za-z0-9]{36,251})|github_pat_(?<rand2>\w{22,251}))(?!\w)/, 3, contains('gh', 'github_pat_')),
  vendor('gitlab_token', /(?<![\w-])gl(?:pat|ptt|dt|rt|cbt|soat|ffct)-(?<rand>[\w-]{20,})(?:\.[\w.-]+)?/, 3, contains('gl')),
  vendor('slack_token', /(?<![A-Za-z0-9])(?:xox[abeoprs]|xapp)-(?<rand>[A-Za-z0-9-]{10,})/, 3, contains('xox', 'xapp-')),
  vendor('slack_webhook', /https:\/\/hooks\.slack\.com\/(?:services|workflows|triggers)\/(?<rand>[\w/+-]{16,})/, 2.5, contains('hooks.slack.com/')),
  vendor('stripe_key', /(?<!\w)(?:(?:sk|rk)_(?:live|test)_(?<rand>[A-Za-z0-9]{10,247})|whsec_(?<rand2>[A-Za-z0-9]{24,}))(?!\w)/, 3, contains('_live_', '_test_', 'whsec_')),
  vendor('google_api_key', /(?<![\w-])AIza(?<rand>[\w-]{35})(?![\w-])/, 3, contains('AIza')),
  vendor('anthropic_key', /(?<![\w-])sk-ant-(?:[a-z]+\d{2}-)?(?<rand>[\w-]{20,})/, 3, contains('sk-ant-')),
  vendor('openai_key', /(?<![\w-])sk-(?!ant-)(?:(?:proj|svcacct|admin)-)?(?<rand>[\w-]{20,})/, 3, contains('sk-')),
  vendor('huggingface_token', /(?<!\w)hf_(?<rand>[A-Za-z0-9]{30,40})(?!\w)/, 3, contains('hf_')),
  vendor('npm_token', /(?<!\w)npm_(?<rand>[A-Za-z0-9]{36})(?!\w)/, 3, contains('npm_')),
  // Hex bodies (too few character classes for opaque_token): the prefix is what tells them.
  vendor('shopify_token', /(?<!\w)shp(?:at|ca|pa|ss)_(?<rand>[a-fA-F0-9]{32})(?!\w)/, 3, contains('shp')),
  vendor('digitalocean_token', /(?<!\w)do[opr]_v1_(?<rand>[a-f0-9]{64})(?!\w)/, 3, contains('_v1_')),
  // fixloop's own Org keys: `sk_` + 43 base64url characters (src/core/secrets.ts); 20+ also catches a
  // key cut short when pasted.
  vendor('fixloop_key', /(?<!\w)sk_(?!live_|test_)(?<rand>[\w-]{20,})/, 3.5, contains('sk_')),
  rule({
    name: 'url_credentials',
    kind: 'credential',
    // `scheme://user:password@host`: user and password both go (the user is often an email).
    mayMatch: (t) => t.includes('://') && t.includes('@'),
    detect: matcher(/(?<![\w+.-])[A-Za-z][\w+.-]{1,20}:\/\/(?<secret>[^\s/?#@:"'<>]{0,256}:(?<password>[^\s/?#@"'<>]{1,256}))@/),
    keep: (c) => isNonSecretValue(group(c, 'password')!),
  }),
  rule({
    name: 'bearer_token',
    kind: 'credential',
    mayMatch: contains('earer'),
    detect: matcher(/(?<![A-Za-z0-9])[Bb]earer[ \t]+(?<secret>[\w.~+/-]{8,}=*)/),
    // "Bearer authentication" is a phrase, "Bearer xxxxxxxx" a placeholder.
    keep: (c) => (/^[A-Za-z]+$/.test(c.value) && c.value.length < 20) || isPlaceholder(c.value, 2.5),
  }),
  rule({
    name: 'basic_auth',
    kind: 'credential',
    mayMatch: contains('asic'),
    detect: matcher(/(?<![A-Za-z0-9])[Bb]asic[ \t]+(?<secret>[A-Za-z0-9+/]{4,}={0,2})(?![\w+/=])/),
    keep: (c) => !isBasicCredential(c.value),
  }),
  rule({
    name: 'secret',
    kind: 'credential',
    mayMatch: (t) => hasSeparator(t) || t.includes('-p'),
    detect: matcher([KEY_VALUE, COOKIE_HEADER, CURL_USER, MYSQL_PASSWORD], { accept: hasSensitiveKey, narrow: sensitiveKeyValue }),
    // A `<name>` or `{name}` value is a template when its name says so (`<your-token>`, `{password}`,
    // `{0}`); prose words are values only after a colon (`password: then click`), not after `=`.
    keep: (c) => {
      if (/^-p/.test(c.match[0])) return !isArgumentOf(c, MYSQL_COMMANDS) || c.value.startsWith('$') || isNonSecretValue(c.value, false)
      if (/^-/.test(c.match[0])) return !isArgumentOf(c, CURL_COMMAND) || c.value.split(':').every((part) => isNonSecretValue(part, false))
      return group(c, 'secret9') !== undefined || group(c, 'secret10') !== undefined ? isTemplateName(c.value) : isNonSecretValue(c.value, afterColon(c))
    },
  }),
  rule({
    name: 'opaque_token',
    kind: 'credential',
    // Long random base64url runs (session ids, signed-URL tokens in paths). Hex digests, UUIDs and
    // identifiers fail the mix-of-classes or entropy test: hex cannot exceed 4 bits per character.
    // Standard base64 too (`openssl rand -base64 32`, Laravel's `APP_KEY=base64:…`, Azure keys): split at
    // its `+` and `/`, each piece was short of 32 and stayed. Such a run holds a `+` or `/` (else it is the
    // first pattern's), and one with `/` alone, unpadded, that holds a word between its slashes or starts
    // with one is a path (`/api/v2/Organizations/8f3a2b1c/Settings`). A hash after `sha256-` (a CSP
    // error's) is not read: a dash before the run is not a start.
    detect: matcher([/(?<![\w-])[\w-]{32,}(?![\w-])/, /(?<![\w+/-])[A-Za-z0-9+/]{32,}={0,2}(?![\w+/=-])/]),
    keep: (c) => {
      const v = c.value.replace(/=+$/, '')
      if (!mixesCharacterClasses(v) || shannonEntropy(v) < 4) return true
      if (!/[+/]/.test(v)) return false
      // AWS's documentation key (`wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`) and its like.
      if (isPlaceholder(v, 4)) return true
      return !v.includes('+') && v === c.value && (v.startsWith('/') || v.split('/').some((part) => part.length >= 4 && /^(?:[A-Z]?[a-z]{2,})+$/.test(part)))
    },
  }),

  // ── personal data ────────────────────────────────────────────────────────────────────────────────
  rule({
    name: 'username',
    kind: 'pii',
    // The account name in a home folder; the rest of the path stays for triage.
    mayMatch: contains('Users', '/home/'),
    detect: matcher(
      /(?:(?<![\w.~-])\/(?:Users|home)\/(?<secret>[^/\\\s:*?"'<>|]{1,64})|(?<![A-Za-z])[A-Za-z]:(?:\\{1,2}|\/)Users(?:\\{1,2}|\/)(?:(?<secret2>[^\\/:*?"'<>|\r\n]{1,64})(?=\\|\/)|(?<secret3>[^\\/:*?"'<>|\s]{1,64})))/,
    ),
    keep: (c) => GENERIC_HOMES.test(c.value),
  }),
  rule({
    name: 'email',
    kind: 'pii',
    // Unicode local parts (`bøb@`) and internationalised domains (`münchen.de`, `例子.广告`, `xn--…`); the
    // `@` also percent-encoded, as a URL printed in a console line writes it (`?email=jane%40example.com`).
    mayMatch: contains('@', '%40'),
    detect: matcher(/(?<![\p{L}\p{N}\p{M}_.%+-])[\p{L}\p{N}\p{M}_.%+-]{1,64}(?:@|%40)(?:[\p{L}\p{N}](?:[\p{L}\p{N}\p{M}-]{0,61}[\p{L}\p{N}\p{M}])?\.)+(?:\p{L}[\p{L}\p{M}]{1,23}|xn--[a-z0-9-]{1,59})(?![\p{L}\p{N}\p{M}_-])/u, { narrow: narrowEncodedEmail }),
    keep: (c) =>
      // Retina asset names (logo@2x.png), files that look like addresses, and `git@host:` SSH remotes.
      /(?:@|%40)\d+(?:\.\d+)?x\./i.test(c.value) ||
      /\.(?:png|jpe?g|gif|webp|svg|avif|ico|bmp|m?js|cjs|tsx?|jsx|css|scss|map|json|html?|xml|woff2?|ttf|otf|eot|pdf|txt|zip|gz|mp[34]|webm|wasm|lock|ya?ml|vue|svelte)$/i.test(c.value) ||
      (/^git(?:@|%40)/.test(c.value) && after(c).startsWith(':')),
  }),
  rule({
    name: 'credit_card',
    kind: 'pii',
    // Also dotted in groups of four (Amex 4-6-5), never a free run of dots (versions and builds).
    mayMatch: hasDigit,
    detect: matcher([/(?<![\w.,+])\d(?:[ -]?\d){11,18}(?!\d|[.,]\d)/, /(?<![\w.,+])\d{4}\.\d{4,6}\.\d{4,5}(?:\.\d{1,7})?(?!\d|[.,]\d)/], { narrow: narrowCard }),
    keep: (c) => cardLength(c.value) !== c.value.length,
  }),
  rule({
    name: 'iban',
    kind: 'pii',
    mayMatch: hasDigit,
    detect: matcher(/(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?: ?[A-Za-z0-9]){11,32}(?![A-Za-z0-9])/, { narrow: narrowIban }),
    keep: (c) => !isIban(c.value.replace(/ /g, '')),
  }),
  rule({
    name: 'ssn',
    kind: 'pii',
    // US SSN, dashed, spaced or dotted; area 000, 666 and 900-999, group 00 and serial 0000 are never
    // issued; a dotted one after a version word is a version.
    mayMatch: hasDigit,
    detect: matcher(/(?<![\w.-])(?<area>\d{3})(?<sep>[- .])(?<grp>\d{2})\k<sep>(?<serial>\d{4})(?![\w-]|\.\d)/),
    keep: (c) =>
      /^(?:000|666|9\d\d)$/.test(group(c, 'area')!) || group(c, 'grp') === '00' || group(c, 'serial') === '0000' || isIdContext(c) || (group(c, 'sep') === '.' && isVersionContext(c)),
  }),
  rule({
    name: 'ipv6',
    kind: 'pii',
    mayMatch: contains(':'),
    detect: matcher(/(?<![\w:.])(?=[0-9A-Fa-f.]{0,39}:[0-9A-Fa-f.]{0,39}:)[0-9A-Fa-f:.]{2,45}(?![\w:])/, { narrow: narrowIpv6 }),
    keep: (c) => {
      const groups = c.value.split(':').filter((g) => g !== '')
      // Loopback and unspecified name no one; MAC-like or time-like runs of short groups and
      // digit-free ones such as `Abc::Def` (a code path) are not addresses people write.
      return /^::1?$/.test(c.value) || groups.every((g) => g.length <= 2) || !/\d/.test(c.value)
    },
  }),
  rule({
    name: 'ipv4',
    kind: 'pii',
    // A dash does not end a match (`10.0.0.1-10.0.0.255` is two); the guard keeps `1.2.3.4-beta`.
    mayMatch: contains('.'),
    detect: matcher(/(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?!\w|\.\d)/),
    keep: (c) => {
      const octets = parseIPv4(c.value)
      if (!octets) return true
      // Loopback, 0.x.x.x ("this network": no host has it, Hadoop's 0.20.203.0 is a version) and
      // netmasks name no one; single-digit quads (1.2.3.4, 8.8.8.8) without a port are far more often
      // versions or public resolvers than a person's address. A package's version after an upgrade verb
      // ("Upgrade jackson-databind to 2.9.10.2") or in an artifact's name (`hadoop-0.20.203.0`) stays, so
      // versions can be told apart.
      if (octets[0] === 127 || octets[0] === 0 || isNetmask(octets)) return true
      // A port makes it an address whatever precedes it (`…/203.0.113.7:8020`): versions take no port.
      if (/^:\d/.test(after(c))) return false
      return octets.every((o) => o < 10) || isVersionContext(c, NAMED_PRODUCT_BEFORE) || isPackageVersionContext(c, octets)
    },
  }),
  rule({
    name: 'phone',
    kind: 'pii',
    mayMatch: hasDigit,
    // The lookahead is where a phone shape can start (phone.ts): `+`, `(`, a trunk `0`, or a North
    // American area code (after an optional `1`). Elsewhere, e.g. inside `1 1 1 1 …`, the detector
    // fails at once instead of reading seven groups for phone.ts to reject.
    detect: matcher(
      [/(?<![\w.,+$€£¥#/@-])\+\d{7,15}(?![\w-])/, /(?<![\w.,+$€£¥#/@-])(?=[+(0]|1[ .-]?(?:\(|[2-9]\d{2}[ .-])|[2-9]\d{2}[ .-])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,5}\)[ .-]?)?\d{1,5}(?:[ ./-]\d{1,8}){1,6}(?!\w|[.,/-]\d)/],
      { narrow: narrowPhone },
    ),
    keep: (c) => isIdContext(c) || /^[:.]\d/.test(after(c)) || /\d[:.]$/.test(before(c)),
  }),
]

export const CREDENTIAL_RULES: readonly Rule[] = RULES.filter((r) => r.kind === 'credential')
