/**
 * "The same text from many addresses" and "links to one site from many addresses" (issue 27), in memory
 * on this node (a cluster's nodes add each other's: shared-repeat-tracker.ts): for each App and text template (digits masked) or linked site, the distinct addresses that
 * sent it within the window. Bounded: at most `maxTexts` keys and a few more addresses per key than the
 * signal needs are kept (more is not more telling); old keys are dropped first.
 */
import { createHash } from 'node:crypto'
import type { Clock } from '../core/clock'
import { LINK_FLOOD_ADDRESSES, linkedSites, REPEAT_ADDRESSES, REPEAT_WINDOW_MS, templateOf } from './spam-score'

/** Texts shorter than this (normalized) are not compared: "it does not work" from many people is normal. */
export const REPEAT_MIN_CHARS = 24

interface Seen {
  firstAt: number
  addresses: Set<string>
}

export class RepeatTracker {
  private readonly texts = new Map<string, Seen>()

  constructor(
    private readonly clock: Clock,
    private readonly maxTexts = 20_000,
  ) {}

  /** Notes `address` sending `text` to `appId`; how many distinct addresses sent its template within the window. */
  note(appId: string, address: string, text: string): number {
    const norm = templateOf(text)
    if (norm.length < REPEAT_MIN_CHARS) return 1
    return this.count(appId + ':t:' + createHash('sha256').update(norm).digest('base64'), address, REPEAT_ADDRESSES)
  }

  /**
   * Notes `address` linking to the sites of `text` (except `ownSites`: the App's own pages, which every
   * real reporter may link); the most distinct addresses that linked to one of them within the window.
   */
  noteLinks(appId: string, address: string, text: string, ownSites: ReadonlySet<string>): number {
    let most = 0
    for (const site of linkedSites(text)) {
      if (ownSites.has(site)) continue
      most = Math.max(most, this.count(`${appId}:l:${site}`, address, LINK_FLOOD_ADDRESSES))
    }
    return most
  }

  /**
   * The distinct addresses of `key` as the signal counts them: this node's (`own`) here; a cluster's
   * nodes together in shared-repeat-tracker.ts.
   */
  protected counted(_key: string, _address: string, _enough: number, own: number): number {
    return own
  }

  private count(key: string, address: string, enough: number): number {
    const now = this.clock.now()
    let seen = this.texts.get(key)
    if (seen && now - seen.firstAt > REPEAT_WINDOW_MS) {
      this.texts.delete(key)
      seen = undefined
    }
    if (!seen) {
      if (this.texts.size >= this.maxTexts) this.evict(now)
      seen = { firstAt: now, addresses: new Set() }
      this.texts.set(key, seen)
    }
    if (seen.addresses.size <= enough) seen.addresses.add(address)
    return this.counted(key, address, enough, seen.addresses.size)
  }

  private evict(now: number): void {
    for (const [k, s] of this.texts) if (now - s.firstAt > REPEAT_WINDOW_MS) this.texts.delete(k)
    // Still full (a flood of distinct texts): drop the oldest half (Map keeps insertion order).
    if (this.texts.size >= this.maxTexts) {
      let n = this.texts.size / 2
      for (const k of this.texts.keys()) {
        if (n-- <= 0) break
        this.texts.delete(k)
      }
    }
  }
}
