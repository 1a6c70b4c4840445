/**
 * `like_spam` across a cluster's nodes: a text a person marked spam on one node makes its rewordings
 * `like_spam` on every node, not only there (src/abuse/spam-ring.ts holds them per node, in memory). A bot
 * spreading its rewordings over N nodes escaped on the other N-1 before.
 *
 * A decision by hand ("spam" or "not spam") commits the report's mark and its App's lesson
 * (spam_learning.updated_at), then announces itself on the wake-up channel (`spam`). Every node, when it
 * hears that and on a safety poll (pub/sub is at-most-once, Redis may be away), reads the Apps with a
 * decision since its last look and loads each one's marks by hand of the last hour (at most
 * SPAM_RING_SIZE) into its ring in place of what it held, less those a "not spam" of the last hour
 * resembles (src/abuse/spam-cleared.ts): a mark taken back, or a rewording declared "not spam", on another
 * node takes the texts out here too, as on the node that decided. Nothing of this is on a report's way:
 * intake still compares with memory only.
 *
 * The Apps are read by the lesson's time, written by the deciding node's clock: each look goes back
 * LOOK_BACK_MS (clocks of a cluster's nodes may differ by seconds, a decision commits a moment after its
 * time), and an App is loaded again only when its time changed. A node that starts loads the last hour.
 */
import type { Clock } from '../core/clock'
import type { Logger } from '../core/logger'
import { SPAM_APPS_PER_LOOK, SPAM_RING_SIZE, SPAM_RING_WINDOW_MS } from './spam-ring'
import { WokenReader } from '../nodes/woken-reader'

/** How often a node looks for decisions by hand when no wake-up came. */
export const SPAM_SHARE_POLL_MS = 2_000
/** How far back each look goes (see the file's comment). */
export const LOOK_BACK_MS = 5 * 60_000
/** The wake-up a decision by hand announces (src/nodes/wake-bus.ts). */
export const SPAM_DECIDED = 'spam'
/**
 * The share of this thread loading takes at most. Loading an App compares each of its marks with each of
 * its "not spam" texts (up to 200 x 200 trigram cosines: ~150 ms for texts of 1,000 characters), on the
 * thread that serves requests, on every node, for each decision by hand: a member deciding on a few Apps
 * with full lists, several times a second, held every node's thread (a decision is one request; each node
 * loaded the App again). A look stops loading once it spent LOOK_WORK_MS (the rest waits for the next
 * look, still within the look-back), and the next look waits until loading is LOAD_SHARE of the time.
 * One App's load is itself cut in slices of LOAD_SLICE_MS (spam-ring.ts `replaceInSlices`): it held the
 * thread ~150-250 ms at once before, whatever the share.
 */
export const LOAD_SHARE = 0.2
export const LOOK_WORK_MS = 50

/** What the share reads (src/db/pg/spam-marks.ts). */
export interface SpamMarksRepo {
  /** Apps with a spam decision by hand at `since` or later (their lesson's time), newest first, `limit` at most. */
  decidedSince(since: number, limit: number): Promise<{ appId: string; at: number }[]>
  /** The App's reports marked spam by hand after `since`, the newest `limit`, oldest first. */
  markedByHand(appId: string, since: number, limit: number): Promise<{ at: number; text: string }[]>
  /** The texts of the App's reports declared "not spam" by hand after `since` (spam-cleared.ts), with when. */
  clearedSince(appId: string, since: number): Promise<{ at: number; text: string }[]>
}

export interface SpamShareDeps {
  repo: SpamMarksRepo
  /**
   * Replaces the App's spam texts in this node's ring, less what a "not spam" cleared (spam-ring.ts
   * `replaceInSlices`): resolves with the ms of this thread it worked (the waits between its slices left
   * out).
   */
  load(appId: string, marks: readonly { at: number; text: string }[], cleared: readonly { at: number; text: string }[]): Promise<number>
  clock: Clock
  log: Logger
  pollMs?: number
}

export class SpamShare extends WokenReader {
  /** Per App, the decision time it was last loaded at (only those within the look-back are kept). */
  private readonly loaded = new Map<string, number>()
  private looked = false
  private failing = false
  /**
   * One look at a time (woken-reader.ts): a flood of `spam` wake-ups (anyone who can publish on the
   * channel) costs a read per gap, not one per round trip; loading, LOAD_SHARE of the thread at most.
   */
  constructor(private readonly deps: SpamShareDeps) {
    super({ pollMs: deps.pollMs ?? SPAM_SHARE_POLL_MS, restAfter: (work) => (work * (1 - LOAD_SHARE)) / LOAD_SHARE })
  }

  /** One look (woken, or the poll); resolves with the time it spent loading (ms of this thread). */
  protected async read(): Promise<number> {
    const { repo, clock } = this.deps
    const now = clock.now()
    const since = now - (this.looked ? LOOK_BACK_MS : SPAM_RING_WINDOW_MS)
    let work = 0
    let cut = false
    try {
      const apps = await repo.decidedSince(since, SPAM_APPS_PER_LOOK)
      for (const { appId, at } of apps) {
        if (this.loaded.get(appId) === at) continue
        if (work >= LOOK_WORK_MS) {
          // The rest at the next look, which goes back as far as this one did until one gets through.
          cut = true
          this.askAgain()
          break
        }
        const window = clock.now() - SPAM_RING_WINDOW_MS
        const marks = await repo.markedByHand(appId, window, SPAM_RING_SIZE)
        const cleared = await repo.clearedSince(appId, window)
        work += await this.deps.load(appId, marks, cleared)
        this.loaded.set(appId, at)
      }
      for (const [appId, at] of this.loaded) if (at < since) this.loaded.delete(appId)
      if (!cut) this.looked = true
      if (this.failing) this.deps.log.info('spam decisions of other nodes readable again')
      this.failing = false
    } catch (e) {
      if (this.stopped) return work
      if (!this.failing) this.deps.log.warn('spam decisions of other nodes unreadable: like_spam compares with this node\'s own until they are read', { error: e instanceof Error ? e.message : String(e) })
      this.failing = true
    }
    return work
  }
}
