/**
 * A paged list: `await` it (or `.then`/`.catch`/`.finally`) for the first page, `for await` it for every
 * item of every page, or `.toArray({ limit })` for a bounded array. Pages are fetched lazily, one at a time.
 */

export interface Page<T> {
  data: T[]
  /** Pass back to get the next page; null on the last page. */
  next: string | number | null
}

export class PagedList<T, P = { data: T[] }> implements AsyncIterable<T>, PromiseLike<P> {
  private first?: Promise<P>

  constructor(
    /** Fetches the page after `cursor` (undefined: the first page). */
    private readonly fetchPage: (cursor: string | number | undefined) => Promise<P>,
    /** Reads the items and the next cursor out of a page. */
    private readonly unpack: (page: P) => Page<T>,
  ) {}

  /** The first page as the API returns it (e.g. `{ data, nextCursor }`). */
  firstPage(): Promise<P> {
    this.first ??= this.fetchPage(undefined)
    return this.first
  }

  then<A = P, B = never>(onok?: ((page: P) => A | PromiseLike<A>) | null, onerr?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<A | B> {
    return this.firstPage().then(onok, onerr)
  }

  // Every other call returns a Promise: `fixloop.apps.list().catch(…)` must not be a TypeError here.
  catch<B = never>(onerr?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<P | B> {
    return this.firstPage().catch(onerr)
  }

  finally(onfinally?: (() => void) | null): Promise<P> {
    return this.firstPage().finally(onfinally)
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    let page = await this.firstPage()
    for (;;) {
      const { data, next } = this.unpack(page)
      yield* data
      if (next === null || next === undefined || data.length === 0) return
      page = await this.fetchPage(next)
    }
  }

  /** Collects items up to `limit` (required, so a huge Org cannot fill memory by accident). */
  async toArray({ limit }: { limit: number }): Promise<T[]> {
    if (!(limit > 0)) throw new TypeError('fixloop: toArray needs a positive limit')
    const out: T[] = []
    for await (const item of this) {
      out.push(item)
      if (out.length >= limit) break
    }
    return out
  }
}
