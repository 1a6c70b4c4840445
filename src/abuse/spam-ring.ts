/**
 * "Like a report already classified as spam" (issue 27: the clustering's view of a spam flood), in memory
 * per node: for each App, the character-trigram vectors of its last SPAM_RING_SIZE spam texts of the last
 * SPAM_RING_WINDOW_MS that a person marked spam (on this node at once; in a cluster, on any node once this
 * node has read them: src/abuse/spam-share.ts), never those the intake classified (a bot could then teach
 * it what to catch). A new public
 * report is compared with them by the clustering's own trigram cosine (src/dedup/rerank.ts), which is
 * blind to word order and survives rewording and other links far better than `repeated_text`'s exact
 * template. "Not spam" by hand takes the text (and what it resembles) out again.
 *
 * Bounded: SPAM_RING_SIZE texts per App, SPAM_RING_APPS Apps (the App fed longest ago is dropped first),
 * LIKE_SPAM_CHARS characters read per text. An App with no spam in the last hour costs one map lookup.
 */
import type { Clock } from '../core/clock'
import { trigramCosines, trigramVector, type TrigramVector } from '../dedup/rerank'
import { LIKE_SPAM_SIMILARITY } from './spam-score'

export const SPAM_RING_SIZE = 200
export const SPAM_RING_WINDOW_MS = 60 * 60_000
export const SPAM_RING_APPS = 1000
/** Apps with a decision by hand one look of a cluster node reads at most (src/abuse/spam-share.ts): the ring holds no more. */
export const SPAM_APPS_PER_LOOK = SPAM_RING_APPS
/** Characters of a text read for its trigrams: a pitch says what it sells first; bounds each comparison. */
export const LIKE_SPAM_CHARS = 1000
/**
 * A spam text this close to one of the NEAR_COPY_RECENT held last refreshes that one instead of taking a
 * slot: a flood of one template (caught by `repeated_text` anyway) would otherwise push every variant out
 * of the ring. Only the last few are compared: a template's copies arrive together, and a full comparison
 * on every spam report stored would cost what `like_spam` costs.
 */
export const NEAR_COPY = 0.9
export const NEAR_COPY_RECENT = 16
/** How long a load of an App's marks (`replaceInSlices`) holds the thread at once (a mark's step is ~1 ms). */
export const LOAD_SLICE_MS = 20

/** An App's spam texts, oldest first (parallel arrays: the vectors are compared as one batch). */
interface Ring {
  at: number[]
  vectors: TrigramVector[]
}

/** How much a text resembles the App's spam: the best cosine, and the text's vector (for `add`). */
export interface Likeness {
  best: number
  vector: TrigramVector
}

export class SpamRing {
  /** App → its ring; the App fed most recently is the map's last key. */
  private readonly apps = new Map<string, Ring>()

  constructor(
    private readonly clock: Clock,
    private readonly size = SPAM_RING_SIZE,
    private readonly maxApps = SPAM_RING_APPS,
  ) {}

  /** How many texts the App holds now (after dropping those older than the window). */
  count(appId: string): number {
    return this.live(appId)?.at.length ?? 0
  }

  /** The text's likeness to the App's spam texts; null, with nothing computed, when the App holds none. */
  likeness(appId: string, text: string): Likeness | null {
    const ring = this.live(appId)
    if (!ring) return null
    const vector = trigramVector(text, LIKE_SPAM_CHARS)
    let best = 0
    for (const c of trigramCosines(vector, ring.vectors)) if (c > best) best = c
    return { best, vector }
  }

  /** Holds a spam text of the App (`known`: its likeness, already computed at intake). */
  add(appId: string, text: string, known?: Likeness): void {
    const vector = known?.vector ?? trigramVector(text, LIKE_SPAM_CHARS)
    if (vector.sumSquares === 0) return
    let ring = this.live(appId)
    if (ring) this.apps.delete(appId) // set again below: the App fed most recently goes last
    else {
      ring = { at: [], vectors: [] }
      if (this.apps.size >= this.maxApps) this.evict()
    }
    this.hold(ring, vector, this.clock.now(), !known || known.best >= NEAR_COPY)
    this.apps.set(appId, ring)
  }

  /**
   * The App's spam texts as the database has them (cluster mode: the texts people marked spam on any node,
   * src/abuse/spam-share.ts), oldest first, each with when it was marked: they replace what the App held,
   * so a mark taken back on another node goes too. `cleared`: the texts declared "not spam" by hand lately,
   * with when; a mark one of them resembles at LIKE_SPAM_SIMILARITY or more and not marked after it is
   * left out, as `remove` would have dropped it then. The same bounds and near-copy rule as `add`.
   */
  replace(appId: string, marks: readonly { at: number; text: string }[], cleared: readonly { at: number; text: string }[] = []): void {
    const steps = this.rebuilt(marks, cleared)
    let step = steps.next()
    while (!step.done) step = steps.next()
    this.install(appId, step.value)
  }

  /**
   * `replace` in slices of about `sliceMs` of this thread, resuming on the next turn of the event loop:
   * an App's 200 marks each compared with 200 "not spam" texts of 1,000 characters is ~150-250 ms, which
   * held the thread that serves requests at once (src/abuse/spam-share.ts loads this way). The same ring
   * as `replace`; the App's texts as they were serve until it is done. Resolves with the time it spent
   * working (ms of this thread, the waits between slices left out).
   */
  async replaceInSlices(appId: string, marks: readonly { at: number; text: string }[], cleared: readonly { at: number; text: string }[] = [], sliceMs = LOAD_SLICE_MS): Promise<number> {
    const steps = this.rebuilt(marks, cleared)
    let work = 0
    for (;;) {
      const began = performance.now()
      let step = steps.next()
      while (!step.done && performance.now() - began < sliceMs) step = steps.next()
      work += performance.now() - began
      if (step.done) {
        this.install(appId, step.value)
        return work
      }
      await new Promise<void>((resolve) => setImmediate(resolve))
    }
  }

  /** The ring `replace` makes of `marks` less what `cleared` resembles, a step (a text's vector or a mark) at a time. */
  private *rebuilt(marks: readonly { at: number; text: string }[], cleared: readonly { at: number; text: string }[]): Generator<void, Ring> {
    const since = this.clock.now() - SPAM_RING_WINDOW_MS
    const clearedVectors: TrigramVector[] = []
    for (const c of cleared) {
      clearedVectors.push(trigramVector(c.text, LIKE_SPAM_CHARS))
      yield
    }
    const ring: Ring = { at: [], vectors: [] }
    for (const m of marks.slice(-this.size)) {
      if (m.at <= since) continue
      const vector = trigramVector(m.text, LIKE_SPAM_CHARS)
      if (vector.sumSquares === 0) continue
      const cosines = trigramCosines(vector, clearedVectors)
      if (!cleared.some((c, i) => c.at >= m.at && cosines[i] >= LIKE_SPAM_SIMILARITY)) this.hold(ring, vector, m.at, true)
      yield
    }
    return ring
  }

  /** The App's texts are `ring` from now on (none: the App holds nothing). */
  private install(appId: string, ring: Ring): void {
    this.apps.delete(appId)
    if (ring.at.length === 0) return
    if (this.apps.size >= this.maxApps) this.evict()
    this.apps.set(appId, ring)
  }

  /** Appends a vector to a ring (`nearCopy`: in place of a near copy among the last few), within its size. */
  private hold(ring: Ring, vector: TrigramVector, at: number, nearCopy: boolean): void {
    if (nearCopy && ring.vectors.length > 0) {
      const from = Math.max(0, ring.vectors.length - NEAR_COPY_RECENT)
      const recent = trigramCosines(vector, ring.vectors.slice(from))
      let near = -1
      for (let i = 0; i < recent.length; i++) if (recent[i] >= NEAR_COPY && (near === -1 || recent[i] > recent[near])) near = i
      if (near !== -1) {
        ring.at.splice(from + near, 1)
        ring.vectors.splice(from + near, 1)
      }
    }
    ring.at.push(at)
    ring.vectors.push(vector)
    if (ring.at.length > this.size) {
      ring.at.splice(0, ring.at.length - this.size)
      ring.vectors.splice(0, ring.vectors.length - this.size)
    }
  }

  /**
   * "Not spam" by hand: drops every held text this one resembles at LIKE_SPAM_SIMILARITY or more (the
   * text itself, its near copies), so the text a person just cleared never fires `like_spam` again.
   * Returns how many were dropped.
   */
  remove(appId: string, text: string): number {
    const ring = this.live(appId)
    if (!ring) return 0
    const cosines = trigramCosines(trigramVector(text, LIKE_SPAM_CHARS), ring.vectors)
    const kept: Ring = { at: [], vectors: [] }
    for (let i = 0; i < cosines.length; i++) {
      if (cosines[i] >= LIKE_SPAM_SIMILARITY) continue
      kept.at.push(ring.at[i])
      kept.vectors.push(ring.vectors[i])
    }
    const dropped = ring.at.length - kept.at.length
    if (kept.at.length === 0) this.apps.delete(appId)
    else if (dropped > 0) this.apps.set(appId, kept)
    return dropped
  }

  /** The App's texts of the window, or undefined (and forgotten) when none is left. */
  private live(appId: string): Ring | undefined {
    const ring = this.apps.get(appId)
    if (!ring) return undefined
    const since = this.clock.now() - SPAM_RING_WINDOW_MS
    if (ring.at[ring.at.length - 1] <= since) {
      this.apps.delete(appId)
      return undefined
    }
    let old = 0
    while (ring.at[old] <= since) old++
    if (old > 0) {
      ring.at.splice(0, old)
      ring.vectors.splice(0, old)
    }
    return ring
  }

  /** Room for one more App: those with nothing left in the window go first, else the App fed longest ago. */
  private evict(): void {
    for (const appId of [...this.apps.keys()]) this.live(appId)
    if (this.apps.size >= this.maxApps) this.apps.delete(this.apps.keys().next().value!)
  }
}
