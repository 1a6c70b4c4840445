/**
 * A read of a report the worker has not sanitized yet is served sanitized on the fly (`previewStored`),
 * never raw. This cache makes that once per row version instead of once per request: polling a pending
 * report, or listing a backlog again and again, costs the sanitizer nothing after the first read.
 * Bounded by the characters it holds; the oldest entries go first.
 */
import { freeTextLength, type StoredReport } from '../../sanitize/report'

/** About 16 MB of UTF-16: a few hundred full reports, thousands of list entries. */
const BUDGET_CHARS = 8_000_000

const sizeOf = freeTextLength

export class PreviewCache {
  private readonly entries = new Map<string, StoredReport>()
  private chars = 0

  constructor(private readonly budget = BUDGET_CHARS) {}

  /** The cached preview under `key` (id, version and shape), if made already. */
  peek(key: string): StoredReport | undefined {
    return this.entries.get(key)
  }

  /** The cached preview under `key` (id, version and shape), or `make()`'s, remembered. */
  get(key: string, make: () => StoredReport): StoredReport {
    const hit = this.entries.get(key)
    if (hit) return hit
    const made = make()
    const size = sizeOf(made)
    if (size > this.budget) return made
    this.entries.set(key, made)
    this.chars += size
    for (const [k, v] of this.entries) {
      if (this.chars <= this.budget) break
      this.entries.delete(k)
      this.chars -= sizeOf(v)
    }
    return made
  }

  /** How many previews were made and kept (for tests). */
  get size(): number {
    return this.entries.size
  }
}

/** The process's cache (keys hold the row id and version, so a stale entry is never hit). */
export const previews = new PreviewCache()
