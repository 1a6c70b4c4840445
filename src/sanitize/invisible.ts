/**
 * Characters that show nothing: the zero-width space, non-joiner and joiner, the word joiner and invisible
 * operators, the byte-order mark, the soft hyphen, and the direction marks, embeddings and isolates that
 * right-to-left text puts around and inside numbers (a phone number typed in Hebrew or Arabic). A web page
 * that splits an address with zero-width spaces so that scrapers miss it hands them on to whoever copies
 * it. A reader sees the value whole, so the rules read the text without them (sanitize.ts), and a key's
 * name is read without them (keys.ts `normalizeKey`: `pass\u200Bword` shows as `password`).
 */
export const INVISIBLE_CLASS = '\\u00AD\\u061C\\u180E\\u200B-\\u200F\\u202A-\\u202E\\u2060-\\u2064\\u2066-\\u2069\\uFEFF'
export const INVISIBLE = new RegExp(`[${INVISIBLE_CLASS}]`)

/** Whether the UTF-16 unit `code` is one of INVISIBLE_CLASS (the same set, for a loop over a text). */
export function isInvisible(code: number): boolean {
  if (code < 0xad) return false
  return (
    code === 0xad ||
    code === 0x61c ||
    code === 0x180e ||
    (code >= 0x200b && code <= 0x200f) ||
    (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2060 && code <= 0x2064) ||
    (code >= 0x2066 && code <= 0x2069) ||
    code === 0xfeff
  )
}
