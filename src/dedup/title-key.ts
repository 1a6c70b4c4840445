/** A title as the index keeps and counts it: its first characters, and a number standing for them. */

/** How much of a title the index keeps (the title rules need a few dozen characters). */
export const STORED_TITLE_CHARS = 160

/**
 * A title's key: a 53-bit hash of it, lower-cased, as far as the index keeps titles (cyrb53: two 32-bit
 * multiplicative hashes combined).
 */
export function titleKey(title: string): number {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0, end = Math.min(title.length, STORED_TITLE_CHARS); i < end; i++) {
    const c = title.charCodeAt(i)
    const ch = c >= 65 && c <= 90 ? c + 32 : c
    h1 = Math.imul(h1 ^ ch, 2654435761)
    h2 = Math.imul(h2 ^ ch, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return 4294967296 * (2097151 & h2) + (h1 >>> 0)
}
