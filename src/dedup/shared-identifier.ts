/**
 * A specific identifier both titles name, as a corroboration for an automatic merge (decide.ts
 * `corroboration`): a setting's key (`browser.fixup.dns_first_for_single_words`), a test or source file
 * (`browser/components/urlbar/tests/legacy/browser_urlbarDecode.js`, `module-info.java`). People who hit one bug
 * paraphrase the sentence around it but copy the name, and a name that specific and that rare in the App
 * points at one place in the product, independently of how alike the rest of the wording is.
 *
 * What does not count, each measured on the corpora (bench/README.md, issue 41 session 24):
 * - a class, a method or an exception type (`specificName`): different bugs happen in one method and
 *   throw one exception (two wrong Eclipse merges on `ClosedFileSystemException`, two on the evaluation
 *   corpus's `OffsetCommitter.decode() fails: …` titles);
 * - titles that name different exception or error types (`… | TimeoutException` / `… | AssertionError`:
 *   one test failing two ways, two bugs in Mozilla's tracker);
 * - a web address: the page a report is about, which many bugs share (the page alone corroborates
 *   nothing, docs/triage.md);
 * - a name many of the App's reports hold (a crash signature's template type, a package every report
 *   of a component names): `RARE_NAME_REPORTS`.
 */
import { words } from './tokenize'
import { sharedNames, titleTokens } from './vetoes'

/** Characters a name needs before it is specific (`module-info.java` is 16, `getName` is not). */
export const SPECIFIC_NAME_LENGTH = 12
/** The most of the App's other reports that may hold the name for it to point at one place. */
export const RARE_NAME_REPORTS = 3

/** An exception or error type, bare or qualified: `IOException`, `java.lang.AssertionError`, `Foo$BarException`. */
const EXCEPTION_TYPE = /[A-Za-z0-9]*(?:Exception|Error)s?\b/g

/** The exception and error types a title names. */
function exceptionTypes(title: string): Set<string> {
  return new Set((title.match(EXCEPTION_TYPE) ?? []).filter((t) => /^[A-Z]/.test(t) && t.length > 'Error'.length))
}

/** Source and configuration files a title may name (`module-info.java`, `browser_urlbarDecode.js`). */
const FILE_EXTENSION = /\.(?:js|jsm|mjs|cjs|ts|tsx|jsx|java|kt|scala|py|rb|go|rs|c|cc|cpp|h|hpp|cs|swift|m|php|html|xhtml|xul|css|scss|xml|json|ya?ml|toml|ini|properties|gradle|sh|sql|md|txt|conf|cfg|plist|proto)$/i

/**
 * A web address (`https://…`, `shop.example.com/cart`): the page a report is about. "Same page, another
 * bug" is the most common look-alike (docs/triage.md), so a page never corroborates by itself.
 */
const WEB_ADDRESS = /:\/\/|^(?:www\.)?[\w-]+(?:\.[\w-]+)*\.(?:com|org|net|io|dev|app|co|edu|gov|info|biz|me|us|uk|de|fr|eu|ca|au|jp|cn|ru|nl|it|es|ch|se|no|example|test|local|localhost|cloud|ai)(?:[/:?#]|$)/i

/**
 * A name specific enough to point at one place: at least `SPECIFIC_NAME_LENGTH` characters and one of
 * - a path (a slash inside: `browser/…/browser_urlbarDecode.js`), not a web address;
 * - a file (`module-info.java`, `AboutPrivateBrowsingHandler.jsm`);
 * - a setting's key: dotted segments that each start lower-case (`browser.fixup.dns_first_for_single_words`,
 *   `extensions.pocket.enabled`).
 * Not a class, a method or a type (`OffsetCommitter.decode`, `FilterPanel.toggleRow`, `NullPointerException`):
 * those name a place many bugs happen in ("X.decode() fails: A" / "X.decode() fails: B" are two bugs; on
 * the evaluation corpus they made two wrong merges), and an exception says what happened, not where.
 */
export function specificName(name: string): boolean {
  if (name.length < SPECIFIC_NAME_LENGTH || /^v?\d+([.\-_]\d+)*$/.test(name) || WEB_ADDRESS.test(name)) return false
  if (/[/]/.test(name.slice(1, -1))) return true
  if (FILE_EXTENSION.test(name)) return true
  const segments = name.split('.')
  return segments.length >= 2 && segments.every((s) => /^[a-z][\w-]*$/.test(s))
}

/**
 * Whether title `a` names a specific identifier title `b` does not hold, not even as a part or a longer
 * form (`AboutPrivateBrowsingHandler.jsm` / `resource:///modules/…/AboutPrivateBrowsingHandler.jsm`):
 * the two point at different places as well, and the name they share is
 * what a campaign of bugs has in common ("Remove com.ibm.icu.text from org.eclipse.jdt.core.manipulation"
 * / "Replace com.ibm.icu with com.ibm.icu.text in Eclipse 4 RCP template").
 */
function namesElsewhere(a: string, b: string): boolean {
  const lower = b.toLowerCase()
  const other = titleTokens(b).map((t) => t.toLowerCase())
  for (const token of titleTokens(a)) {
    if (!specificName(token)) continue
    const t = token.toLowerCase()
    if (!lower.includes(t) && !other.some((o) => o.length >= SPECIFIC_NAME_LENGTH && t.includes(o))) return true
  }
  return false
}

/** The word the index keeps for a whole name (its longest token: `browser.fixup.dns_first_for_single_words`). */
export function wholeNameWord(name: string): string | null {
  let best: string | null = null
  for (const w of words(name)) if (!best || w.length > best.length) best = w
  return best
}

/**
 * The first specific identifier both titles name that at most `RARE_NAME_REPORTS` of the App's reports
 * hold (`reportsHolding`: the App's count for an index word), or null. Null as well when the titles name
 * different exception types, or either names another specific place the other lacks.
 */
export function sharedIdentifier(a: string, b: string, reportsHolding: (word: string) => number): string | null {
  // The cheap test first: most pairs share no specific name, and need no look at the rest of their titles.
  const name = sharedNames(a, b, 8).find((n) => {
    if (!specificName(n)) return false
    const word = wholeNameWord(n)
    return word !== null && reportsHolding(word) <= RARE_NAME_REPORTS
  })
  if (!name) return null
  const ea = exceptionTypes(a)
  const eb = exceptionTypes(b)
  if (ea.size > 0 && eb.size > 0 && ![...ea].some((e) => eb.has(e))) return null
  if (namesElsewhere(a, b) || namesElsewhere(b, a)) return null
  return name
}
