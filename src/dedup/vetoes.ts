/**
 * The rules that tell two alike titles apart, as small pure functions of the two title lines (or of
 * what features.ts took from them). Two kinds:
 * - a **veto** says the two reports are different cases (different numbers or versions, a templated
 *   sibling with one name swapped, opposite symptoms): never merged, never suggested;
 * - a **merge block** says the pair cannot be told apart with confidence (a scope on one side only, a
 *   value the sanitizer redacted): never merged automatically, but a person may be offered the lead.
 * Only the titles are compared: bodies share boilerplate (templates, user agents, environment blocks)
 * that would make siblings look like duplicates, and versions in bodies differ between true duplicates.
 */
import { UNSPACED, words } from './tokenize'

/** A sanitizer placeholder (`[REDACTED:ipv4]`): the value it replaced is unknown. */
export const PLACEHOLDER = /\[REDACTED:[a-z0-9_]+\]/g

/** Two first lines naming different numbers (versions, codes, counts, in order) describe different cases. */
export function numbersVeto(a: readonly string[], b: readonly string[]): boolean {
  if (a.length === 0 || b.length === 0) return false
  return a.length !== b.length || a.some((n, i) => n !== b[i])
}

/**
 * How alike two titles must be apart from their numbers for different numbers to veto (as alike as
 * `templatedSiblings` asks). Below it the titles say different things, and their numbers name nothing
 * the other title speaks of.
 */
export const NUMBERS_VETO_ALIKE = 0.6

/**
 * Different numbers in two titles that otherwise say much the same ("Tests hang on Centos 7" / "on
 * Centos 8", "Error 502 at checkout" / "Error 404 at checkout"): different cases. Two titles that say
 * different things ("[1.8][inference] inferencing issue when building reactor-core" / "[1.8][inference]
 * regression since the fix for bug 502350", "SSH with RSA keys fails" / "refuses ssh login after update
 * to 2021-03") are one bug told two ways as often as not: their numbers veto nothing, and the score
 * decides. Measured on six corpora (bench/README.md, issue 41 session 22): true duplicates were vetoed
 * as often as different bugs on the real ones.
 */
export function differentNumbers(a: { title: string; firstNumbers: readonly string[] }, b: { title: string; firstNumbers: readonly string[] }): boolean {
  return numbersVeto(a.firstNumbers, b.firstNumbers) && alikeApartFromNumbers(a.title, b.title) >= NUMBERS_VETO_ALIKE
}

/**
 * How much two titles say alike apart from their numbers: the share of the longer title's tokens without
 * a digit that the other title has too (lowercased).
 */
export function alikeApartFromNumbers(a: string, b: string): number {
  const wa = [...titleParts(a).positions.keys()].filter((t) => !/\d/.test(t))
  const wb = new Set([...titleParts(b).positions.keys()].filter((t) => !/\d/.test(t)))
  if (wa.length === 0 || wb.size === 0) return 0
  let shared = 0
  for (const t of wa) if (wb.has(t)) shared++
  return shared / Math.max(wa.length, wb.size)
}

/** Two non-empty version sets with nothing in common. */
export function disjointVersions(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size === 0 || b.size === 0) return false
  for (const v of a) if (b.has(v)) return false
  return true
}

/**
 * Title tokens as typed (case kept: an inner capital marks a name), trailing punctuation dropped. Words of
 * any script; in Chinese, Japanese and Thai, which put no spaces between words, each character is a token,
 * so "结账页面上的支付按钮不起作用" / "…的登录按钮…" is one template with one slot filled two ways, as "Payment
 * button fails" / "Login button fails" is. (Before, a title beyond ASCII had no tokens and no rule here saw it.)
 */
export function titleTokens(title: string): string[] {
  const t = title.replace(PLACEHOLDER, ' ')
  if (!/[^\x00-\x7f]/.test(t)) return t.match(/[A-Za-z0-9][\w.\-/+#]*[A-Za-z0-9+#]|[A-Za-z0-9]/g) ?? []
  return t.replace(UNSPACED_CHAR, ' $& ').match(/[\p{L}\p{N}](?:[\p{L}\p{M}\p{N}_.\-/+#]*[\p{L}\p{M}\p{N}+#])?/gu) ?? []
}
const UNSPACED_CHAR = new RegExp(`[${UNSPACED}]`, 'gu')

/** A title's tokens and where each lowercased one last occurs. */
interface TitleParts {
  tokens: string[]
  positions: Map<string, number>
}

/** Titles seen lately: a report is compared with up to 15 candidates, and a lead's title with many reports. */
const titles = new Map<string, TitleParts>()

function titleParts(title: string): TitleParts {
  let parts = titles.get(title)
  if (!parts) {
    const tokens = titleTokens(title)
    parts = { tokens, positions: new Map(tokens.map((t, i) => [t.toLowerCase(), i])) }
    if (titles.size >= 4096) titles.clear()
    titles.set(title, parts)
  }
  return parts
}

/** A token that names a thing rather than says something: a version, a module, a product, an OS. */
function nameLike(token: string, position: number): boolean {
  return /\d|[-_./+#]/.test(token) || /[A-Z]/.test(token.slice(1)) || (position > 0 && /^[A-Z]/.test(token))
}

/**
 * Words whose swap changes nothing ("fails on Chrome" / "fails in Chrome", "is" / "was"). Any other
 * word swapped for another, however short, names another case: "get" / "put", "[en-US]" / "[De]".
 */
const GLUE = new Set('a an the of in on at to for with from by into onto is are was were be been this that it its via when while after before'.split(' '))

/** One name written two ways, one the other plus a suffix: `s3` / `s3a`, `log4j` / `log4j2`, `npe` / `npes`. */
const isVariant = (a: string, b: string): boolean => a !== b && (a.startsWith(b) || b.startsWith(a))

/** Two sets of tokens that say the same words once stemmed and mapped through the synonym table ("crashes" / "crashed"). */
function sameWords(a: string[], b: string[]): boolean {
  const wa = new Set(words(a.join(' ')))
  const wb = new Set(words(b.join(' ')))
  return wa.size > 0 && wb.size > 0 && [...wa].every((w) => wb.has(w)) && [...wb].every((w) => wa.has(w))
}

/**
 * Templated siblings: two titles ≥ 60 % identical that swap one or two tokens ("Backport X to
 * branch-3.2" / "branch-3.3", "Build fails on Centos 7" / "on Centos 8", "S3 get fails" / "S3 put
 * fails", "[en-US] label missing" / "[De] label missing"). Projects file one issue per branch, platform,
 * verb or locale on purpose; their texts are near-identical, so no score can tell them apart — only the
 * substituted token can. A one-for-one swap counts whatever its length unless both are glue words, an
 * inflection or a synonym ("crashes" / "crashed"), or one name written two ways (`nameVariant`); a
 * swap of two tokens needs a name on each side.
 */
export function templatedSiblings(a: string, b: string): boolean {
  // One title twice: no token differs (what the rules below conclude, without the work).
  if (a === b) return false
  const { tokens: ta, positions: la } = titleParts(a)
  const { tokens: tb, positions: lb } = titleParts(b)
  if (la.size < 3 || lb.size < 3) return false
  const onlyA = [...la.keys()].filter((t) => !lb.has(t))
  const onlyB = [...lb.keys()].filter((t) => !la.has(t))
  const shared = la.size - onlyA.length
  if (shared < 2 || shared / Math.max(la.size, lb.size) < 0.6) return false
  if (onlyA.length < 1 || onlyA.length > 2 || onlyB.length < 1 || onlyB.length > 2) return false
  // Inflections and the synonym table make no substitution ("crashes" / "crashed", "nothing" / "empty").
  if (sameWords(onlyA, onlyB)) return false
  if (onlyA.length === 1 && onlyB.length === 1) return !(GLUE.has(onlyA[0]) && GLUE.has(onlyB[0])) && !isVariant(onlyA[0], onlyB[0])
  const named = (only: string[], tokens: string[], pos: Map<string, number>) =>
    only.some((t) => {
      const i = pos.get(t)!
      return nameLike(tokens[i], i)
    })
  return named(onlyA, ta, la) && named(onlyB, tb, lb)
}

/**
 * Two long titles that are one template with one slot filled differently, a word or two each ("Should
 * add the single search tour in the onBoarding overlay" / "… the Add-on tour …"): a family of tasks.
 * `templatedSiblings` vetoes a two-token swap only with names on both sides, because a paraphrase swaps
 * plain words too ("stutters" / "is choppy"); here the rest must be the same words in the same order
 * around one slot (a reordered paraphrase, "NPE after reading X" / "Reading X fails with NPE", is not),
 * and it only blocks the merge: a person decides.
 */
export function oneSlotSwapped(a: string, b: string): boolean {
  if (a === b) return false
  const ta = titleParts(a).tokens.map((t) => t.toLowerCase())
  const tb = titleParts(b).tokens.map((t) => t.toLowerCase())
  let head = 0
  while (head < ta.length && head < tb.length && ta[head] === tb[head]) head++
  let tail = 0
  while (tail < ta.length - head && tail < tb.length - head && ta[ta.length - 1 - tail] === tb[tb.length - 1 - tail]) tail++
  const slotA = ta.slice(head, ta.length - tail)
  const slotB = tb.slice(head, tb.length - tail)
  if (head + tail < SLOT_CONTEXT || slotA.length < 1 || slotA.length > 2 || slotB.length < 1 || slotB.length > 2) return false
  // Glue words ("while" / "after") and inflections or synonyms ("crashes" / "crashed") fill no other slot.
  if ([...slotA, ...slotB].every((t) => GLUE.has(t))) return false
  return !sameWords(slotA, slotB)
}
/** Tokens two titles must share around the slot, in order, to read as one template. */
const SLOT_CONTEXT = 6

/**
 * Two titles that differ only by one name written two ways ("S3 listing is slow" / "S3A listing is
 * slow"): often one thing named loosely (the number veto used to refuse these true pairs), sometimes
 * two (`log4j` / `log4j2`). Not a veto: a merge block, so a person decides.
 */
export function nameVariant(a: string, b: string): boolean {
  if (a === b) return false
  const la = titleParts(a).positions
  const lb = titleParts(b).positions
  const onlyA = [...la.keys()].filter((t) => !lb.has(t))
  const onlyB = [...lb.keys()].filter((t) => !la.has(t))
  return onlyA.length === 1 && onlyB.length === 1 && isVariant(onlyA[0], onlyB[0])
}

/**
 * Tags that label a report rather than scope it ("[Bug] Crash on save" is "Crash on save"): a
 * different or missing one of these is no scope.
 */
const LABELS = new Set('bug bugs bugfix fix issue question help feature request enhancement regression wip draft urgent critical minor major error problem todo note proposal rfc discussion'.split(' '))

/** A title's scopes (leading `[..]` groups or a `scope:` prefix, a trailing `(..)`/`[..]`) and the rest. */
export function splitScope(title: string): { scopes: string[]; core: string } {
  let core = title.replace(PLACEHOLDER, '\u0000').trim()
  const found: string[] = []
  for (let i = 0; i < 4; i++) {
    const m = core.match(/^\[([^\]]{1,40})\]\s*|^([A-Za-z][\w.\-/]{0,30})\s*:\s+|^\(([^)]{1,40})\)\s*/)
    if (!m) break
    found.push(m[1] ?? m[2] ?? m[3])
    core = core.slice(m[0].length)
  }
  const tail = core.match(/\s*[([]([^)\]]{1,40})[)\]]$/)
  if (tail) {
    found.push(tail[1])
    core = core.slice(0, tail.index)
  }
  const scopes = found
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s && !s.split(/[\s/,-]+/).every((w) => LABELS.has(w)))
    .sort()
  return { scopes, core: core.toLowerCase().replace(/[^\p{L}\p{N}\u0000]+/gu, ' ').trim() }
}

/**
 * The same sentence under different scopes: "[en-US] Date picker shows week numbers" / "[De] …" (a
 * sibling: `'sibling'`), or a scope added on one side only, "[Backport 2.x] Fix NPE in reader" / "Fix
 * NPE in reader" (`'one-sided'`: maybe the backport of that fix, maybe the reporter's own tag), else null.
 */
export function scopeDifference(a: string, b: string): 'sibling' | 'one-sided' | null {
  const sa = splitScope(a)
  const sb = splitScope(b)
  if (sa.core !== sb.core || sa.core.split(' ').length < 2) return null
  const onlyA = sa.scopes.filter((s) => !sb.scopes.includes(s))
  const onlyB = sb.scopes.filter((s) => !sa.scopes.includes(s))
  if (onlyA.length === 0 && onlyB.length === 0) return null
  return onlyA.length > 0 && onlyB.length > 0 ? 'sibling' : 'one-sided'
}

/**
 * One title is the other plus one to three tokens, at least one a name: "Tooltip flickers" / "Tooltip
 * flickers in Firefox", "Build fails" / "Build fails on Centos 7". Maybe the same bug told more
 * precisely, maybe the platform-specific one of a family: a person decides.
 */
export function nameAddedOnOneSide(a: string, b: string): boolean {
  if (a === b) return false
  const pa = titleParts(a)
  const pb = titleParts(b)
  const [small, big] = pa.positions.size <= pb.positions.size ? [pa, pb] : [pb, pa]
  if (small.positions.size < 2) return false
  for (const t of small.positions.keys()) if (!big.positions.has(t)) return false
  const added = [...big.positions.keys()].filter((t) => !small.positions.has(t))
  if (added.length < 1 || added.length > 3) return false
  return added.some((t) => {
    const i = big.positions.get(t)!
    return nameLike(big.tokens[i], i)
  })
}

/**
 * The tests a title names, as CI reports name them: a test class (`TextInputDelegateTest`, `TestDFSIO`),
 * with its method and parameters when given (`#sendKeyEvent[#input]`, `.testRead`, `::test_x[py3]`),
 * lowercased and without the package (`org.mozilla.…`): one failing test, one id.
 */
export function testIds(title: string): Set<string> {
  const out = new Set<string>()
  for (const m of title.matchAll(TEST_ID)) out.add(`${m[1]}${m[2] ?? ''}${m[3] ?? ''}`.toLowerCase())
  return out
}
/**
 * A package path (dropped), then a class or file named like a test (`FooTest`, `TestFoo`, `FooTests`,
 * `test_foo.py`, `browser_foo.js`), then optionally `#method`, `::method` or `.method` and one `[param]`
 * group. "Test timed out" names none: the word alone is no class.
 */
const TEST_ID = /(?:[\w$]+[./])*([\w$]+Tests?\b|Test[A-Z0-9][\w$]*|(?:test|browser)_[\w$]+(?:\.(?:py|js|html|xhtml))?|[\w$]+_test(?:\.(?:py|js|go))?)((?:#|::|\.)[\w$]+)?(\[[^\]\s]{1,60}\])?/g

/**
 * Two titles that name tests, none the same ("TextInputDelegateTest#sendKeyEvent[#input]" /
 * "…[#textarea]", "TestFoo#testRead" / "TestFoo#testWrite"; a class and one of its methods are the same
 * test here): CI files one intermittent failure per test
 * and parameter, and their reports share the whole failure template, so no score tells them apart. Not a
 * veto (one cause can fail several tests): a merge block, so a person decides.
 */
export function differentTests(a: string, b: string): boolean {
  const ta = testIds(a)
  if (ta.size === 0) return false
  const tb = testIds(b)
  if (tb.size === 0) return false
  for (const x of ta) for (const y of tb) if (sameTest(x, y)) return false
  return true
}

/** One id, or a class and one of its methods or parameters ("TestDFSIO" / "TestDFSIO#testWrite"). */
function sameTest(a: string, b: string): boolean {
  const [short, long] = a.length <= b.length ? [a, b] : [b, a]
  return long.startsWith(short) && (long.length === short.length || '#:.['.includes(long[short.length]))
}

/**
 * Either title holds a value the sanitizer redacted that could tell two bugs apart (an address, a token,
 * an account number): equal or different, nothing can tell. A person's contact details do not count: an
 * email, a phone number or a name in a title ("Can't log in as [REDACTED:email]") is whoever wrote it,
 * never what the bug is, and every reporter's is another one.
 */
export function redactedInTitles(a: string, b: string): boolean {
  return holdsThingPlaceholder(a) || holdsThingPlaceholder(b)
}
/** Placeholders of a person's contact details (sanitize/rules.ts names). */
const PERSONAL_PLACEHOLDERS = new Set(['email', 'phone', 'username', 'submitter_email', 'submitter_id', 'submitter_name'])
function holdsThingPlaceholder(title: string): boolean {
  for (const m of title.matchAll(PLACEHOLDER)) if (!PERSONAL_PLACEHOLDERS.has(m[0].slice(10, -1))) return true
  return false
}

/** What two reports' symptoms say: "I get every notification twice" vs "I get no notifications". */
export function oppositePolarity(a: 'many' | 'none' | null, b: 'many' | 'none' | null): boolean {
  return a !== null && b !== null && a !== b
}

/**
 * Up to `limit` name-like tokens both titles hold (`BlockReader`, `HDFS-1234`, `s3a`), for a verdict's
 * reason: what the two reports visibly share.
 */
export function sharedNames(a: string, b: string, limit = 3): string[] {
  const { tokens: ta } = titleParts(a)
  const { positions: lb } = titleParts(b)
  const out: string[] = []
  for (let i = 0; i < ta.length && out.length < limit; i++) {
    const t = ta[i]
    // A capital first only marks a name inside a sentence, and the two titles' sentences may start apart.
    if (lb.has(t.toLowerCase()) && nameLike(t, 0) && !out.includes(t)) out.push(t)
  }
  return out
}
