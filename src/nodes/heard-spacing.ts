/**
 * The job-kind and `events` wake-ups heard from other nodes (src/nodes/wake-bus.ts), spaced as the
 * woken readers' are (woken-reader.ts): anyone who can publish on the Redis channel can send them (a live
 * node's id is in every message there), and each woke this node's workers (a claim, a read of the jobs
 * table) or its event hub (a plain `events`: a read of the outbox's counters) at once. A flood of 250,000
 * forged `process` wake-ups in 2 s read the jobs table ~1.5 times as often as a quiet node, 330,000 `events`
 * ~70 outbox counter reads a second (2 at rest). Now, per word: the first wake-up after WOKEN_GAP_MS of
 * quiet acts at once (a single genuine wake-up waits for nothing), the ones heard within WOKEN_GAP_MS of
 * the last act become one act at the gap's end (never lost; their event news merged). Publishers send one
 * message per word every 20 ms at most (wake-bus.ts), so a busy genuine peer's wake-ups wait 30 ms at most.
 */
import { WOKEN_GAP_MS } from './woken-reader'
import { EVENT_NEWS_MAX_ORGS, type EventNews } from './wake-bus'

/** The news of two `events` wake-ups as one: each Org its highest seq; a plain wake (undefined) or too many Orgs: a plain wake. */
function merged(a: EventNews | undefined, b: EventNews | undefined): EventNews | undefined {
  if (a === undefined || b === undefined) return undefined
  const out = new Map(a)
  for (const [org, seq] of b) if (seq > (out.get(org) ?? 0)) out.set(org, seq)
  return out.size > EVENT_NEWS_MAX_ORGS ? undefined : out
}

export class HeardSpacing {
  /** Per word: when it last acted (performance.now()). */
  private readonly acted = new Map<string, number>()
  /** Per word: the act waiting for the gap's end, with the news it carries. */
  private readonly waiting = new Map<string, { news: EventNews | undefined; timer: ReturnType<typeof setTimeout> }>()

  constructor(
    /** What a wake-up does (`news`: with `events`, the Orgs it names; undefined: look at the outbox). */
    private readonly act: (what: string, news?: EventNews) => void,
    private readonly gapMs = WOKEN_GAP_MS,
  ) {}

  /** A wake-up heard (the caller passes only words it knows: job kinds, `events`; the map stays bounded). */
  heard(what: string, news?: EventNews): void {
    const held = this.waiting.get(what)
    if (held) {
      held.news = merged(held.news, news)
      return
    }
    const wait = (this.acted.get(what) ?? -Infinity) + this.gapMs - performance.now()
    if (wait <= 0) return this.run(what, news)
    const entry = {
      news,
      timer: setTimeout(() => {
        this.waiting.delete(what)
        this.run(what, entry.news)
      }, wait),
    }
    this.waiting.set(what, entry)
  }

  private run(what: string, news: EventNews | undefined): void {
    this.acted.set(what, performance.now())
    this.act(what, news)
  }

  /** The node stops: acts waiting for their gap are dropped (the workers and the hub stop too). */
  stop(): void {
    for (const { timer } of this.waiting.values()) clearTimeout(timer)
    this.waiting.clear()
  }
}
