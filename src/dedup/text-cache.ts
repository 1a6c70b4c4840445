/**
 * Sanitized reports' texts by id, for ranking: a new report's 15 candidates would otherwise be read from
 * SQLite for their texts alone (one statement, ~50 µs a report: 15 random B-tree seeks). A sanitized
 * report's text never changes (only a raw row is scrubbed, and raw rows are never indexed), so a cached
 * text cannot go stale; what can change (a lead's status, a report's cluster) is not kept here.
 * Bounded in entries and characters, oldest out first; misses are read from the database.
 */

/** Characters held at most (~8 MB of one-byte text): ~40k widget reports, or ~4k long technical ones. */
export const TEXT_CACHE_CHARS = 8_000_000
export const TEXT_CACHE_ENTRIES = 50_000

export class TextCache {
  private texts = new Map<string, string>()
  private chars = 0

  constructor(
    private readonly maxChars = TEXT_CACHE_CHARS,
    private readonly maxEntries = TEXT_CACHE_ENTRIES,
  ) {}

  get size(): number {
    return this.texts.size
  }

  /**
   * The text, or undefined when not held. Reading does not reorder (the oldest entry goes first): the
   * candidates of a new report are mostly recent reports, and a re-read miss puts a text back at the end.
   */
  get(id: string): string | undefined {
    return this.texts.get(id)
  }

  /** Holds a sanitized report's text (never a raw one: the caller checks). */
  set(id: string, text: string): void {
    if (text.length > this.maxChars / 16) return
    const old = this.texts.get(id)
    if (old !== undefined) {
      this.texts.delete(id)
      this.chars -= old.length
    }
    this.texts.set(id, text)
    this.chars += text.length
    while (this.chars > this.maxChars || this.texts.size > this.maxEntries) {
      const [oldest, t] = this.texts.entries().next().value as [string, string]
      this.texts.delete(oldest)
      this.chars -= t.length
    }
  }

  delete(id: string): void {
    const old = this.texts.get(id)
    if (old === undefined) return
    this.texts.delete(id)
    this.chars -= old.length
  }

  clear(): void {
    this.texts.clear()
    this.chars = 0
  }
}
