/**
 * The triage inbox query: one Org's reports in a status folder, newest first, with the dashboard's
 * filters and this admin's unread marks. Ids sort by creation time, so paging is `id < cursor` on the
 * (org_id, status, id) index and a date range is an id range: a page costs the same at row 1M as at 1.
 *
 * The port: the SQLite side (src/db/sqlite/inbox.ts) and the PostgreSQL side (src/db/pg/inbox.ts), both
 * held to test/repos/inbox.test.ts. Status moves from the inbox go through the /v1 routes (the lifecycle).
 */
import { previewBudget, toListItem } from '../feedback/present'
import type { FeedbackRepo, ListRow } from '../feedback/repo'
import { suggestedLeadsOf } from '../feedback/suggested'
import type { FeedbackItem } from '../feedback/model'

/** Folder → the statuses it shows. "inbox" is everything not yet decided (new and awaiting a human). */
export const FOLDERS = {
  inbox: ['received', 'sanitizing', 'sanitized', 'awaiting_manual'],
  awaiting_manual: ['awaiting_manual'],
  queued: ['queued'],
  running: ['agent_running'],
  pr_opened: ['pr_opened'],
  resolved: ['resolved'],
  failed: ['failed'],
  archived: ['archived'],
  all: [],
  /** The spam folder (issue 27): reports classified as spam, whatever their status; every other folder hides them. */
  spam: [],
} as const satisfies Record<string, readonly string[]>
export type Folder = keyof typeof FOLDERS

/** Most rows one filtered inbox request reads (see list()). */
export const SCAN_WINDOW = 20_000

/** A row of the inbox query: the list columns and the dashboard's flags (0/1 on SQLite, booleans on PostgreSQL). */
export type InboxRow = ListRow & { hasScreenshot: number | boolean; hasConsole: number | boolean; isRead: number | boolean }

export interface InboxQuery {
  folder?: Folder
  appId?: string
  severity?: string
  mode?: 'public' | 'private'
  hasScreenshot?: boolean
  hasConsole?: boolean
  urlContains?: string
  /** ISO dates (inclusive day bounds are the caller's business). */
  from?: string
  to?: string
  q?: string
  cursor?: string
  limit?: number
}

/**
 * The forms of a text query the inbox also looks for, besides lower(text) containing lower(q): SQLite's
 * lower() folds ASCII only, and PostgreSQL's only as far as its database's locale does, so "кнопка" did
 * not find "Кнопка". A query with letters beyond ASCII is looked for as typed, in lower case, in upper
 * case and capitalized, the ways a report's words are written (none for an ASCII query).
 */
export function caseForms(q: string): string[] {
  if (!/[^\x00-\x7f]/.test(q)) return []
  const lower = q.toLowerCase()
  const capitalized = lower.charAt(0).toUpperCase() + lower.slice(1)
  return [...new Set([q, lower, q.toUpperCase(), capitalized])]
}

/** The smallest id created at or after `ms` (ids start with 4 bytes of unix seconds). */
export function idFloor(ms: number): string {
  return Math.max(0, Math.floor(ms / 1000)).toString(16).padStart(8, '0').slice(-8) + '0'.repeat(16)
}

export interface InboxPage {
  data: (FeedbackItem & { hasScreenshot: boolean; hasConsole: boolean; read: boolean })[]
  nextCursor: string | null
  /** The Org's last seq, read before the rows: the page's live stream starts after it. */
  eventSeq: number
}

export interface HistoryEntry {
  seq: number
  type: string
  data: Record<string, unknown>
  createdAt: string
}

export interface Inbox {
  list(orgId: string, adminId: string, q: InboxQuery): Promise<InboxPage>
  /** Per-folder counts of unread leads, for the sidebar. Bounded: counts stop at 1000 ("999+"). */
  counts(orgId: string, adminId: string): Promise<Record<Folder, number>>
  /** Marks reports read for this admin (ids of another Org are ignored); how many were newly marked. */
  markRead(orgId: string, adminId: string, ids: string[], now: number): Promise<number>
  markUnread(orgId: string, adminId: string, ids: string[]): Promise<void>
  /** Status history of one report from the event log, oldest first. */
  history(orgId: string, feedbackId: string): Promise<HistoryEntry[]>
}

/** The page as served: a row per lead, `limit` at most, and where the next page starts. */
export function inboxPage(rows: InboxRow[], limit: number, windowEnd: string | null, eventSeq: number): InboxPage {
  const more = rows.length > limit
  const page = more ? rows.slice(0, limit) : rows
  // One read's budget of on-the-fly previews for the page's pending reports (present.ts).
  const budget = previewBudget()
  return {
    // The stored suggestion as is: createInbox's list serves it as it stands now.
    data: page.map((r) => ({ ...toListItem(r, budget, r.suggestedLeadId), hasScreenshot: !!r.hasScreenshot, hasConsole: !!r.hasConsole, read: !!r.isRead })),
    nextCursor: more ? page[page.length - 1].id : windowEnd,
    eventSeq,
  }
}

export const historyEntry = (e: { seq: number; type: string; data: string; createdAt: number }): HistoryEntry => ({
  seq: e.seq,
  type: e.type,
  data: JSON.parse(e.data) as Record<string, unknown>,
  createdAt: new Date(e.createdAt).toISOString(),
})

/**
 * The store's inbox rows (src/db/store.ts `inbox`, which shows each stored suggestion as stored), with
 * each row's suggestion read as the API serves it (src/modules/feedback/suggested.ts: followed to the
 * current lead, none when stale): `feedback` reads the leads the page's suggestions point at.
 */
export function withSuggestedLeads(inbox: Inbox, feedback: Pick<FeedbackRepo, 'leadStates'>): Inbox {
  return {
    ...inbox,
    async list(orgId, adminId, q) {
      const page = await inbox.list(orgId, adminId, q)
      // The rows hold the stored suggestion; at most two reads, none when no row has one.
      const stored = page.data.flatMap((i) => (i.suggestedDuplicateOf ? [{ id: i.id, duplicateOfId: i.duplicateOfId, suggestedLeadId: i.suggestedDuplicateOf.id }] : []))
      if (stored.length === 0) return page
      const leads = await suggestedLeadsOf(feedback, orgId, stored)
      for (const item of page.data) {
        if (!item.suggestedDuplicateOf) continue
        const lead = leads.get(item.id) ?? null
        item.suggestedDuplicateOf = lead ? { ...item.suggestedDuplicateOf, id: lead } : null
      }
      return page
    },
  }
}
