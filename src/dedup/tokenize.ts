/**
 * Text features for near-duplicate detection: words (version strings, issue keys and codes kept whole,
 * identifiers split into their parts and kept whole too, stop words dropped, Porter stemming), character
 * trigrams (robust to typos), the numbers of the title line (versions and error codes that veto merges),
 * the page path, and a console-error fingerprint.
 */
import { stemmer } from 'stemmer'

const STOP_WORDS = new Set(
  (
    // English
    'a an the and or but if then else of to in on at by for with from into onto up down out over under is are was were be been being am ' +
    'i me my we our you your he she it its they them their this that these those there here what which who whom when where why how ' +
    'do does did doing done have has had having can could will would should shall may might must not no nor so too very just also ' +
    'again still even only any all some each every both few more most other such own same than as about after before while until ' +
    'hi hello hey dear team thanks thank thx please pls regards cheers best sent iphone android ok okay guys folks lol ' +
    'get got getting go going went gets im ive dont doesnt didnt cant cannot wont isnt arent wasnt thats theres whats ' +
    // German, French, Spanish, Portuguese function words
    'der die das den dem des ein eine einen einem und oder aber nicht ist sind war ich mir mich wir sie es bei mit von zu im am auf fur für ' +
    'le la les un une des et ou mais ne pas est sont je me moi nous vous il elle ce cette dans sur pour avec de du au aux ' +
    'el los las uno una y o pero no es son yo mi nosotros en con por para del al lo que ' +
    'o os as um uma e ou mas nao não eu meu nos em com por para do da dos das no na'
  ).split(/\s+/),
)

/**
 * Words end users use for the same thing, folded to one token so paraphrases meet ("the pay button is
 * greyed out" ~ "pay button disabled"). Kept to bug-report vocabulary whose senses do not collide.
 */
const SYNONYMS: Record<string, string> = Object.fromEntries(
  (
    [
      ['broken', 'broke broken break breaks fail fails failed failing failure work works working worked stopped stop stops bug bugged buggy glitch'],
      ['crash', 'crash crashes crashed crashing close closes closed closing quit quits quitting freeze freezes froze frozen hang hangs'],
      ['disabled', 'disabled disable grey gray greyed grayed inactive unclickable clickable dead'],
      ['click', 'click clicks clicked clicking tap taps tapped tapping press presses pressed pressing hit'],
      ['image', 'image images photo photos picture pictures pic pics img thumbnail thumbnails'],
      ['login', 'login logins log logged logging signin sign signed signing'],
      ['empty', 'empty blank nothing none zero'],
      ['slow', 'slow slowly sluggish lag lags laggy lagging forever'],
      ['error', 'error errors err exception exceptions'],
      ['wrong', 'wrong incorrect incorrectly bad off'],
      ['missing', 'missing disappear disappears disappeared gone vanish vanished vanishes lost'],
      ['page', 'page pages screen screens view'],
      ['button', 'button buttons btn'],
      ['email', 'email emails mail mails e-mail'],
      ['show', 'show shows showed shown showing display displays displayed displaying appear appears appeared'],
      ['load', 'load loads loaded loading'],
      ['cart', 'cart basket bag'],
      ['pay', 'pay pays paid paying payment payments'],
      ['price', 'price prices pricing cost costs'],
      ['upload', 'upload uploads uploaded uploading'],
      ['download', 'download downloads downloaded downloading export exports exported exporting'],
      ['notification', 'notification notifications notif notifs push'],
      ['date', 'date dates day days'],
      ['phone', 'phone phones mobile iphone android'],
    ] as [string, string][]
  ).flatMap(([canon, list]) => list.split(' ').map((w) => [w, canon])),
)

/** A version or dotted number kept whole: 2.3.1, v10.4, 1.0.0-beta.2 */
const VERSION_RE = /^v?\d+(?:\.\d+)+(?:-[a-z0-9.]+)?$/

/** Porter stemming (npm `stemmer`): "address" and "addresses" meet, as do "connection"/"connections". */
function stem(word: string): string {
  if (word.length <= 3 || /\d/.test(word)) return word
  let hit = STEMS.get(word)
  if (hit === undefined) {
    // Bounded memo: a report's vocabulary repeats across reports, and Porter is a chain of regexes.
    if (STEMS.size >= 50_000) STEMS.clear()
    STEMS.set(word, (hit = stemmer(word)))
  }
  return hit
}
const STEMS = new Map<string, string>()

/**
 * Accents folded ("é" → "e"), then lowercase (a compatibility form may fold to a capital: "ℌ" → "H");
 * the Unicode work is skipped for plain ASCII text.
 */
export function fold(text: string): string {
  return foldAccents(text).toLowerCase()
}
/**
 * Latin accents dropped ("é" → "e", "ё" → "е"), compatibility forms unified ("ｶ" → "カ", "ℌ" → "H"), then
 * recomposed: a Hangul syllable or a voiced kana ("が") decomposed by NFKD is one character again.
 */
export function foldAccents(text: string): string {
  return NON_ASCII.test(text) ? text.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').normalize('NFC') : text
}
const NON_ASCII = /[^\x00-\x7f]/
/**
 * Raw tokens, case kept (camelCase needs it): issue keys (HADOOP-1234), versions (2.3.1, v1.0.0-rc.1),
 * dotted names (org.apache.Foo.bar, Foo.java), plain words and identifiers (snake_case, camelCase).
 */
const TOKEN_RE = /[A-Z][A-Z0-9]+-\d+|v?\d+(?:\.\d+)+(?:-[A-Za-z0-9.]+)?|[A-Za-z0-9_$]+(?:\.[A-Za-z_$][A-Za-z0-9_$]*)+|[A-Za-z0-9_]+(?:['’][a-z]+)?/g
/**
 * The same for a text with characters beyond ASCII, and a word with letters of any script (a run with at
 * least one beyond ASCII, so "błąd" is one word, not "b" and "ąd"). Apart: the Unicode mode costs plain
 * ASCII text a fifth more time.
 */
const WIDE_TOKEN_RE = /[A-Z][A-Z0-9]+-\d+|v?\d+(?:\.\d+)+(?:-[A-Za-z0-9.]+)?|[A-Za-z0-9_$]+(?:\.[A-Za-z_$][A-Za-z0-9_$]*)+|[A-Za-z0-9_]*(?=[^\x00-\x7f])[\p{L}\p{M}\p{N}][\p{L}\p{M}\p{N}_]*|[A-Za-z0-9_]+(?:['’][a-z]+)?/gu
/**
 * The scripts written without spaces between words (Chinese, Japanese, Thai, Lao, Khmer, Myanmar), with
 * the kana length mark and the ideographic iteration mark: a character class's body (vetoes.ts reads
 * their titles a character at a time).
 */
export const UNSPACED = '\\p{sc=Han}\\p{sc=Hiragana}\\p{sc=Katakana}\\p{sc=Thai}\\p{sc=Lao}\\p{sc=Khmer}\\p{sc=Myanmar}\\u30fc\\u3005'
/**
 * Scripts written without spaces between words (Chinese, Japanese, Thai, …) and Korean, whose words carry
 * their particles: a run of them is read as overlapping pairs of characters, as search engines index
 * them (Lucene's CJK bigrams), so "支払いページ" and "ページの支払い" share "支払" and "ページ" pairs.
 */
const PAIRED_SCRIPT = new RegExp(`[${UNSPACED}\\p{sc=Hangul}]+`, 'gu')
const ISSUE_KEY_RE = /^[A-Z][A-Z0-9]+-\d+$/
/** Where an identifier splits: dots, underscores, $ and camelCase humps (HTTPServer → HTTP, Server). */
const IDENT_SPLIT = /[._$]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])/
/** Cheap pre-test: most tokens are plain words and need no split. */
const MAY_SPLIT = /[._$]|[a-z0-9][A-Z]|[A-Z][A-Z][a-z]/
const NO_PARTS: string[] = []

function plainWord(raw: string, out: string[]): void {
  let w = raw.length > 2 && (raw.includes("'") || raw.includes('’')) ? raw.replace(/['’]/g, '') : raw
  if (STOP_WORDS.has(w) || w.length < 2) return
  w = SYNONYMS[w] ?? stem(w)
  out.push(w)
}

/**
 * Lowercased terms. Versions (2.3.1) and issue keys (HADOOP-1234) stay single tokens; an identifier
 * (getUserName, user_name, org.foo.Bar) counts whole *and* by its parts, so "NullPointerException in
 * FileSystem.open" meets a report that says "filesystem open throws".
 */
export function words(text: string): string[] {
  const out: string[] = []
  const raw = bugReferencesAsKeys(foldAccents(text))
  const wide = NON_ASCII.test(raw)
  const re = wide ? WIDE_TOKEN_RE : TOKEN_RE
  re.lastIndex = 0
  for (let m = re.exec(raw); m !== null; m = re.exec(raw)) {
    const tok = m[0]
    if (wide && NON_ASCII.test(tok)) {
      unicodeWord(tok.toLowerCase(), out)
      continue
    }
    const lower = tok.toLowerCase()
    if (ISSUE_KEY_RE.test(tok) || VERSION_RE.test(lower)) {
      out.push(lower)
      continue
    }
    const parts = MAY_SPLIT.test(tok) ? tok.split(IDENT_SPLIT).filter((p) => p.length > 0) : NO_PARTS
    if (parts.length > 1) {
      out.push(lower.replace(/\.+$/, ''))
      for (const p of parts) plainWord(p.toLowerCase(), out)
    } else plainWord(lower, out)
  }
  return out
}

/**
 * A word with letters beyond ASCII (Cyrillic, Greek, Arabic, Devanagari, "błąd", "Firefoxです"): runs of a
 * PAIRED_SCRIPT become pairs of characters (one character alone stays one), the rest are words as they
 * stand; an ASCII part is a plain word (stop words, stemming). No stop words or stemming of other
 * languages: their common words are common in the App too, and weigh little by their document frequency.
 */
function unicodeWord(tok: string, out: string[]): void {
  let at = 0
  PAIRED_SCRIPT.lastIndex = 0
  for (let m = PAIRED_SCRIPT.exec(tok); m !== null; m = PAIRED_SCRIPT.exec(tok)) {
    if (m.index > at) otherWord(tok.slice(at, m.index), out)
    const chars = Array.from(m[0])
    if (chars.length === 1) out.push(chars[0])
    for (let i = 0; i + 1 < chars.length; i++) out.push(chars[i] + chars[i + 1])
    at = m.index + m[0].length
  }
  if (at < tok.length) otherWord(tok.slice(at), out)
}

function otherWord(w: string, out: string[]): void {
  if (!NON_ASCII.test(w)) plainWord(w, out)
  else if (w.length >= 2) out.push(w)
}

/**
 * A Bugzilla reference ("bug 1234567", "Bug #604822", "bug1234567") as an issue key, BUG-1234567, so it
 * stays one word: its number alone would be a bare number, which a body's words drop (features.ts). Two
 * reports naming the bug they regressed from, or the one they follow up on, share a rare word. Four digits
 * or more: "bug 2" is a count, not a reference. The word "bug" stays.
 */
function bugReferencesAsKeys(text: string): string {
  return BUG_REFERENCE.test(text) ? text.replace(BUG_REFERENCE_ALL, 'bug BUG-$1') : text
}
const BUG_REFERENCE = /\bbug\s?#?\s?\d{4,9}\b/i
const BUG_REFERENCE_ALL = /\bbug\s?#?\s?(\d{4,9})\b/gi

/**
 * The summary line: up to the first line break or sentence end. A submitted "Title\nBody" yields
 * the title, never the title run into the body.
 */
export function firstLine(text: string): string {
  return splitFirstLine(text).line
}
// A sentence ends at . ! ? (also the Arabic question mark and the Devanagari danda) before a space, or at
// the full-width 。！？ of Chinese and Japanese, which no space follows.
const LINE_END = /\n|[.!?\u061f\u0964](\s|$)|[\u3002\uff01\uff1f]/

/** A text's first line (as `firstLine`) and the text after it ('' when there is none), from one cut. */
function splitFirstLine(text: string): { line: string; rest: string } {
  const trimmed = text.trim()
  const cut = trimmed.search(LINE_END)
  if (cut === -1) return { line: trimmed.slice(0, 300), rest: '' }
  return { line: trimmed.slice(0, cut).trim().slice(0, 300), rest: trimmed.slice(cut + 1) }
}

/** How many leading lines a summary may skip: an integration's line, then perhaps its page's. */
const MAX_SKIPPED_LINES = 2

/**
 * The summary line: the first line, unless `boilerplate` says it is not the user's (a line an
 * integration puts before every report, "New message from the contact form"); then the next line, up to
 * `MAX_SKIPPED_LINES` lines down. A text with nothing after its line keeps that line.
 */
export function summaryLine(text: string, boilerplate?: (line: string) => boolean): string {
  let { line, rest } = splitFirstLine(text)
  if (!boilerplate) return line
  for (let skipped = 0; skipped < MAX_SKIPPED_LINES && boilerplate(line); skipped++) {
    const next = splitFirstLine(rest)
    if (next.line === '') break
    ;({ line, rest } = next)
  }
  return line
}

/**
 * The numbers of a line in order: versions (2.3.1, v2), codes (502, e1234, #4411) and quantities (2gb,
 * 500ms). Order matters: "report 0 from client 1" and "report 1 from client 0" are different cases.
 * Identifiers that merely contain a digit are names, not numbers: `s3` and `s3a`, `log4j`, `http2`,
 * `utf8`, `x86_64`, `ipv4` (and a sanitizer placeholder `[REDACTED:ipv4]`, whose value is unknown).
 */
export function identifyingNumbers(line: string): string[] {
  const out: string[] = []
  for (const m of line.toLowerCase().replace(/\[redacted:[a-z0-9_]+\]/g, ' ').matchAll(/\bv?\d+(?:\.\d+)+\b|#?\b[a-z_]*\d[a-z0-9_]*\b/g)) {
    const t = m[0]
    // A letter first: a number only as a version (v2) or a code (e1234, err502: two letters or fewer… or a digit run of 3+).
    if (/^[a-z_]/.test(t) && !/^v\d/.test(t) && !/^[a-z]{1,3}\d{3,}$/.test(t)) continue
    out.push(t.replace(/^v(?=\d)/, ''))
  }
  return out
}

/** Every version string in the text (2.3.1, v10.4): two reports naming disjoint versions differ. */
export function versions(text: string): Set<string> {
  const out = new Set<string>()
  for (const m of text.toLowerCase().matchAll(/\bv?(\d+\.\d+(?:\.\d+)+|\d+\.\d+)\b/g)) {
    // "1.5 seconds" or "2.50 EUR" are amounts, not versions: only count x.y.z, or x.y after "v"/"version".
    const before = text.toLowerCase().slice(Math.max(0, (m.index ?? 0) - 9), m.index)
    if (m[1].split('.').length >= 3 || m[0].startsWith('v') || /version\s*$/.test(before)) out.add(m[1])
  }
  return out
}

const NONE_CUES = /\b(no|not|never|none|nothing|zero|stopped|any)\b|n't\b/
const MANY_CUES = /\b(twice|double|doubled|duplicate|duplicated|duplicates|multiple|repeated|again and again|two times|2x)\b/

/** "I get every notification twice" vs "I get no notifications": same words, opposite bugs. */
export function polarity(text: string): 'many' | 'none' | null {
  const t = text.toLowerCase()
  const many = MANY_CUES.test(t)
  const none = NONE_CUES.test(t)
  // "does nothing, tried twice" says both: no polarity to compare.
  if (many === none) return null
  return many ? 'many' : 'none'
}

/** What the n-grams read of a folded text: letters, marks and digits of every script (of ASCII: a-z, 0-9). */
export const GRAM_CHAR = /^[\p{L}\p{M}\p{N}]$/u
const NON_GRAM_CHARS = /[^\p{L}\p{M}\p{N}]+/gu

/**
 * A trigram as one integer, its three UTF-16 codes: packed 7 bits each when all are ASCII (no substring
 * per position), else hashed (FNV-1a) to a negative number, which no packed trigram is.
 */
export function trigramKey(a: number, b: number, c: number): number {
  if ((a | b | c) < 128) return (a << 14) | (b << 7) | c
  return Math.imul(Math.imul(Math.imul(0x811c9dc5 ^ a, 0x01000193) ^ b, 0x01000193) ^ c, 0x01000193) | 0x80000000
}

/** Character trigrams of the letters-and-digits text (spaces collapsed), as counts. */
export function trigrams(text: string, limit = 2000): Map<number, number> {
  const norm = ' ' + fold(text).replace(NON_GRAM_CHARS, ' ').trim().slice(0, limit) + ' '
  const grams = new Map<number, number>()
  for (let i = 0; i + 3 <= norm.length; i++) {
    const g = trigramKey(norm.charCodeAt(i), norm.charCodeAt(i + 1), norm.charCodeAt(i + 2))
    grams.set(g, (grams.get(g) ?? 0) + 1)
  }
  return grams
}

/** The page a report came from, without query or fragment: "/checkout/payment". Null when absent. */
export function pagePath(url: string | null): string | null {
  if (!url) return null
  try {
    const u = new URL(url)
    const path = u.pathname.replace(/\/+$/, '') || '/'
    return u.host + path
  } catch {
    return null
  }
}

/** How many of a report's console errors are compared: the newest, the closest to what the user reported. */
export const ERROR_SIGNALS = 3
/** How many of its newest error entries are looked at for them: a console of 500 equal errors costs 20. */
const ERROR_SCAN = 20

/**
 * The fingerprints of a console's errors (`messages` oldest first), distinct, the newest first, at most
 * ERROR_SIGNALS. Not only the first: a console buffer starts at page load, and its oldest error is often
 * one every page has (an ad blocker's, a third-party script's), not the one the user hit.
 */
export function errorFingerprints(messages: readonly string[]): string[] {
  const out: string[] = []
  for (let i = messages.length - 1, stop = Math.max(0, messages.length - ERROR_SCAN); i >= stop && out.length < ERROR_SIGNALS; i--) {
    const fp = errorFingerprint(messages[i])
    if (fp && !out.includes(fp)) out.push(fp)
  }
  return out
}

/** A console error with its variable parts (numbers, ids, quoted values, urls) removed. */
export function errorFingerprint(message: string | null): string | null {
  if (!message) return null
  const fp = message
    .toLowerCase()
    .replace(/https?:\/\/\S+/g, 'URL')
    .replace(/(["'`]).*?\1/g, 'Q')
    .replace(/0x[0-9a-f]+|\b[0-9a-f]{8,}\b|\d+/g, 'N')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 200)
  return fp || null
}
