/**
 * Which field names hold secrets. Used three ways: `key=value` / `key: value` / `"key": "value"` in free
 * text (only the value is replaced), URL query and fragment parameters, and JSON object keys in metadata
 * (the whole value is replaced, whatever its type).
 * Names are compared normalized: lowercase with `-`, `_`, `.`, spaces and brackets removed, so
 * `X-Api-Key`, `api_key` and `apiKey` are the same name.
 */

import { TOKEN_PATTERN } from './tokens'
import { INVISIBLE_CLASS } from './invisible'

// Invisible characters too (invisible.ts): `pass\u200Bword` shows as `password`.
const KEY_SEPARATORS = new RegExp(`[-_.\\s[\\]${INVISIBLE_CLASS}]`, 'g')
export const normalizeKey = (key: string): string => key.toLowerCase().replace(KEY_SEPARATORS, '')

/** Names that are sensitive only as themselves (`auth`, not `author`; `session`, not `sessions_count`). */
const EXACT = new Set(['pwd', 'pass', 'auth', 'authorization', 'session', 'sid', 'cookie', 'setcookie', 'credentials', 'credential', 'pin', 'otp', 'mfacode', 'totp', 'cvv2', 'cvc2', 'csc', 'cccsc'])

/**
 * "Password" in other languages (French, German, Spanish, Portuguese, Dutch, Polish, Swedish, Danish,
 * Norwegian, Finnish, Italian, Czech, Hungarian, Turkish, Russian, Japanese, Chinese, Korean), as
 * `normalizeKey` leaves them. Italian `parola` alone is "word", so only `parolachiave`/`parolad'ordine`.
 */
const FOREIGN_PASSWORDS = ['motdepasse', 'passwort', 'kennwort', 'contraseña', 'contrasena', 'senha', 'wachtwoord', 'hasło', 'haslo', 'lösenord', 'losenord', 'adgangskode', 'passord', 'salasana', 'parolachiave', 'heslo', 'jelszó', 'jelszo', 'şifre', 'sifre', 'пароль', 'パスワード', '密码', '密碼', '비밀번호']

/** Names that are sensitive anywhere inside a longer name (`db_password`, `client_secret`, `passwordConfirmation`). */
const CONTAINED = ['password', 'passwd', 'passphrase', 'secret', ...FOREIGN_PASSWORDS]

/** Names that are sensitive at the end of a longer name (`access_token`, `x-api-key`, `jsessionid`). */
// `accountkey`: Azure Storage's `AccountKey=` in a connection string (88 characters of standard base64).
// `passcode` (a one-time or door code), `cvc`/`cvv` (a card's security code: `{"cvc":"123"}` in a payment
// form's state; HTML's autocomplete name for it, `cc-csc`, is an exact name).
const SUFFIXES = ['token', 'apikey', 'accesskey', 'accountkey', 'privatekey', 'secretkey', 'signingkey', 'encryptionkey', 'sessionid', 'sessionkey', 'cookie', 'authorization', 'credentials', 'pwd', 'passcode', 'cvc', 'cvv']

/**
 * A service's password written `…_PASS` (`DB_PASS`, `SMTP_PASS`, `redisPass` in .env files and config
 * dumps). `pass` alone at the end of a name is too often something else (`bypass`, `compass`,
 * `render_pass`), so only after the name of something that takes a password.
 */
const PASS_OWNERS = ['db', 'database', 'smtp', 'mail', 'email', 'imap', 'pop3', 'redis', 'ftp', 'sftp', 'ldap', 'bind', 'admin', 'root', 'user', 'proxy', 'mysql', 'pg', 'postgres', 'sql', 'mongo', 'mongodb', 'rabbitmq', 'amqp', 'mqtt', 'kafka', 'sasl', 'keystore', 'truststore', 'ssh', 'vnc', 'vpn', 'wifi', 'http', 'basic', 'login', 'account', 'api', 'app', 'auth', 'master']
const OWNED_PASSES = PASS_OWNERS.map((owner) => owner + 'pass')

/**
 * Names sensitive only as URL query or fragment parameters, where they carry OAuth codes and signed-URL
 * signatures; in prose `code: 404` or `signature: invalid` are ordinary.
 */
const QUERY_ONLY = new Set(['code', 'sig', 'signature', 'xamzsignature', 'xamzcredential', 'xgoogsignature', 'xgoogcredential', 'nonce', 'hmac'])

/**
 * Remembers a name check: the `key=value` detector asks about every key-like word of a report, and a
 * report repeats the same few names (`key: … key: …`) thousands of times. Bounded: cleared when full.
 */
function memo(check: (key: string) => boolean): (key: string) => boolean {
  const known = new Map<string, boolean>()
  return (key) => {
    let hit = known.get(key)
    if (hit === undefined) {
      if (known.size >= 4096) known.clear()
      hit = check(key)
      known.set(key, hit)
    }
    return hit
  }
}

/** True when a value under this name is a secret wherever it appears. */
export const isSensitiveKey = memo(sensitiveKey)

function sensitiveKey(key: string): boolean {
  // A token inside a name is an earlier redaction, not a word of the name: `[REDACTED:opaque_token]`
  // must not make its value look like a token's.
  const k = normalizeKey(key.replace(TOKEN_PATTERN, ' '))
  if (k.length === 0 || k.length > 64) return false
  return EXACT.has(k) || CONTAINED.some((w) => k.includes(w)) || SUFFIXES.some((s) => k.endsWith(s)) || OWNED_PASSES.some((s) => k.endsWith(s))
}

/** True when a value under this name is a password, which may be a pass phrase of several words. */
export const isPassphraseKey = memo((key: string): boolean => {
  const k = normalizeKey(key.replace(TOKEN_PATTERN, ' '))
  return k.length <= 64 && (['pwd', 'pass'].includes(k) || CONTAINED.some((w) => w !== 'secret' && k.includes(w)))
})

/** True when a URL parameter of this name is a secret. */
export const isSensitiveParam = memo((key: string): boolean => isSensitiveKey(key) || QUERY_ONLY.has(normalizeKey(key.replace(TOKEN_PATTERN, ' '))))

/**
 * Values that cannot be secrets: booleans, empties, templates, and words that say the value is missing
 * or wrong ("Token: expired", "password = incorrect"). Kept so the report stays readable.
 */
const NOT_A_SECRET =
  /^(?:true|false|null|nil|none|undefined|empty|missing|required|invalid|expired|incorrect|wrong|hidden|unset|n\/a|yes|no|on|off|\*+|x+|\.+|-+|<[^>]*>|\$\{[^}]*\}|\{\{[^}]*\}\}|%s)$/i

/**
 * The words people write after a field name and a colon in prose ("enter your password: then click").
 * After `=` they are values like any other: `secret=a` is configuration, not prose.
 */
const PROSE_WORD = /^(?:the|a|an|and|or|but|then|is|was|it|not|field|box|input|please|again|still|too|when|after|before)$/i

/** An absolute file path (`PWD=/home/app/repo`, `password_file: /run/secrets/db`): names a place, holds no secret. */
const FILE_PATH = /^(?:\/|~\/|[A-Za-z]:\\)[\w.\/\\-]*$/

/** `afterColon`: the value follows `name:` (prose words count as non-secrets), not `name=`. */
export function isNonSecretValue(value: string, afterColon = true): boolean {
  const v = value.trim()
  const notSecret = (w: string) => NOT_A_SECRET.test(w) || (afterColon && PROSE_WORD.test(w))
  // A prose word ends a sentence as often as not: `password: invalid.`
  return v === '' || notSecret(v) || notSecret(v.replace(/[.!?:]+$/, '')) || FILE_PATH.test(v)
}

/** Letters only, words joined by a hyphen or an apostrophe at most: a dictionary word, a pass phrase's first word. */
const WORD_LIKE = /^[\p{L}\p{M}]+(?:['’-][\p{L}\p{M}]+)*$/u
/** From this many characters on, a value that mixes letters with digits or symbols is a whole password. */
const COMPLETE_SECRET_LENGTH = 8

/**
 * Does this first token of a password's value start a pass phrase that runs on over the next words?
 * Only when it is short or word-like (`password=abc def ghi`, `password: correct horse battery staple`).
 * A value that is already a complete secret (`hunter2-Zq9xWv`, `Tr0ub4dor&3`) ends where it ends: the
 * sentence after it ("… to the marmalade endpoint") is the report's evidence, not more of the secret.
 */
export function startsPassPhrase(firstToken: string): boolean {
  return [...firstToken].length < COMPLETE_SECRET_LENGTH || WORD_LIKE.test(firstToken)
}

/** Words that make a bracketed name a template, not a value: `<your-token>`, `{password}`, `<API KEY HERE>`. */
const TEMPLATE_WORD = /your|my|the|pass|pwd|secret|token|key|value|here|placeholder|redacted|hidden|insert|enter|example|sample|dummy|changeme|xxx/i

/** The name inside `<…>` or `{…}` after a sensitive key: a template (kept) or a value (`<hunter2>`, `{hunter2}`)? */
export function isTemplateName(inner: string): boolean {
  return /^\d{1,2}$/.test(inner) || (/^[A-Za-z][A-Za-z _.-]*$/.test(inner) && (/^[A-Z][A-Z_.-]*$/.test(inner) || TEMPLATE_WORD.test(inner)))
}
