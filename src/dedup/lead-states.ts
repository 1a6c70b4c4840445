/**
 * What each lead's summary (duplicate count, last duplicate time, consolidated text) is built from, kept
 * in memory between batches: the count, the newest time and id, and the newest `SUMMARY_WINDOW`
 * sanitized duplicates (ids and texts). Without it every batch re-read each touched lead's 200 newest
 * duplicate texts from SQLite (a big cluster is touched by almost every batch of a burst).
 *
 * A state is only a cache. It is trusted in a batch only after the database agrees with it: the first
 * attachment to a lead in a batch counts its duplicates in SQLite anyway (the event carries the count),
 * and that count, newest time and newest id must equal the state plus that attachment. Anything that
 * changed the cluster behind this thread's back (another connection, a rolled-back batch) shows there,
 * and the summary is then rebuilt from the database, as every change outside a batch (merge and unmerge
 * by hand) always is. Bounded in leads and characters, least recently used out first.
 */

/** Duplicates whose texts feed a consolidated text: the newest ones. */
export const SUMMARY_WINDOW = 200
export const LEAD_STATES_MAX = 2048
export const LEAD_STATES_CHARS = 16_000_000

export interface LeadState {
  /** Every duplicate, sanitized or not. */
  n: number
  /** The newest duplicate's created_at (null without duplicates). */
  last: number | null
  /** The greatest duplicate id (null without duplicates). */
  maxId: string | null
  /** The newest `SUMMARY_WINDOW` sanitized duplicates, newest (greatest id) first. */
  ids: string[]
  texts: string[]
  /** Characters of `texts`, for the bound. */
  chars: number
}

/** A duplicate joining a lead: what its state needs. */
export interface JoiningDuplicate {
  id: string
  created_at: number
  text: string
}

const maxOf = <T extends number | string>(a: T | null, b: T): T => (a === null || b > a ? b : a)

export class LeadStates {
  private states = new Map<string, LeadState>()
  private chars = 0

  constructor(
    private readonly maxLeads = LEAD_STATES_MAX,
    private readonly maxChars = LEAD_STATES_CHARS,
  ) {}

  get size(): number {
    return this.states.size
  }

  /** The lead's state, marked as recently used. */
  get(leadId: string): LeadState | undefined {
    const s = this.states.get(leadId)
    if (s) {
      this.states.delete(leadId)
      this.states.set(leadId, s)
    }
    return s
  }

  /** Holds a state built from the database (`ids`/`texts` newest first, at most SUMMARY_WINDOW). */
  set(leadId: string, state: Omit<LeadState, 'chars'>): void {
    this.delete(leadId)
    let chars = 0
    for (const t of state.texts) chars += t.length
    if (chars > this.maxChars / 8) return
    this.states.set(leadId, { ...state, chars })
    this.chars += chars
    this.evict()
  }

  /**
   * True when the database's figures for the lead (after `d` joined it) are the state's plus `d`: the
   * state is then brought up to date with `d` and may be trusted. Otherwise the state is dropped.
   */
  confirm(leadId: string, d: JoiningDuplicate, db: { n: number; last: number | null; maxId: string | null }): boolean {
    const s = this.get(leadId)
    if (s && db.n === s.n + 1 && db.last === maxOf(s.last, d.created_at) && db.maxId === maxOf(s.maxId, d.id)) {
      this.add(leadId, d)
      return true
    }
    this.delete(leadId)
    return false
  }

  /** One more sanitized duplicate for a state already trusted. */
  add(leadId: string, d: JoiningDuplicate): void {
    const s = this.states.get(leadId)
    if (!s) return
    s.n++
    s.last = maxOf(s.last, d.created_at)
    s.maxId = maxOf(s.maxId, d.id)
    // Newest first: a new report's id is nearly always the greatest (the loop ends at once).
    let i = 0
    while (i < s.ids.length && s.ids[i] > d.id) i++
    if (i >= SUMMARY_WINDOW) return
    s.ids.splice(i, 0, d.id)
    s.texts.splice(i, 0, d.text)
    s.chars += d.text.length
    this.chars += d.text.length
    if (s.ids.length > SUMMARY_WINDOW) {
      s.ids.pop()
      const gone = s.texts.pop()!
      s.chars -= gone.length
      this.chars -= gone.length
    }
    this.evict()
  }

  delete(leadId: string): void {
    const s = this.states.get(leadId)
    if (!s) return
    this.states.delete(leadId)
    this.chars -= s.chars
  }

  clear(): void {
    this.states.clear()
    this.chars = 0
  }

  private evict(): void {
    while (this.states.size > this.maxLeads || this.chars > this.maxChars) {
      const oldest = this.states.keys().next().value as string
      this.delete(oldest)
    }
  }
}
