/**
 * How much of a one-job-at-a-time worker one App's remote host may take. Tracker pushes and polls and pull
 * request polls run on the worker that also starts agent runs and reviews, one job at a time, and each
 * App's tracker and git host are its Org's choice (a server it runs will do): one that holds every call to
 * its deadline (FIXLOOP_OUTBOUND_TIMEOUT: 15-20 s by default) held that worker for its whole backlog, every
 * other App's work waiting behind it (4 pushes: a minute; hundreds: hours). Each App may spend `budgetMs` of
 * calls per `windowMs`; past it, its calls wait for the next window (a push is deferred, a poll skips the
 * App's items), and the other Apps' go ahead. All the Apps of one Org share ORG_CALL_BUDGET_MS besides
 * (createAppTimeShare). A call once started is never cut by the budget, so a single slow call still runs
 * to its own deadline. Kept by this process only: another node has its own.
 */

export interface TimeShare {
  /** 0 when the App may call its host now, else how long until its window starts again (ms). */
  waitMs(appId: string): number
  /** Charges `ms` of call time to the App. */
  spend(appId: string, ms: number): void
}

/** 10 s of calls per minute: dozens of ordinary calls (well under a second each). */
export const APP_CALL_BUDGET_MS = 10_000
export const APP_CALL_WINDOW_MS = 60_000

export function createTimeShare(now: () => number, budgetMs = APP_CALL_BUDGET_MS, windowMs = APP_CALL_WINDOW_MS): TimeShare {
  /** Per App: when its window began and what it spent in it. Entries of ended windows are dropped as met. */
  const used = new Map<string, { since: number; ms: number }>()
  const current = (appId: string) => {
    const u = used.get(appId)
    const age = now() - (u?.since ?? 0)
    // A window that began after now: the clock was stepped back (NTP, or cluster mode's database offset
    // measured again). Kept, it held the App until the clock came back to it, plus a window: it ends.
    if (u && age >= 0 && age < windowMs) return u
    if (u) used.delete(appId)
    return undefined
  }
  return {
    waitMs(appId) {
      const u = current(appId)
      return u && u.ms >= budgetMs ? Math.max(1, u.since + windowMs - now()) : 0
    },
    spend(appId, ms) {
      const u = current(appId)
      if (u) u.ms += ms
      else used.set(appId, { since: now(), ms })
      // Bounded: an App that stopped calling leaves its entry until a sweep like this one.
      if (used.size > 10_000) for (const id of [...used.keys()]) current(id)
    },
  }
}

/**
 * What all the Apps of one Org may spend together per window: an Org makes as many Apps as it likes (an
 * owner's dashboard, `POST …/apps`), each pointed at a tracker or git host it runs, so a share per App
 * alone let one Org hold the worker with a handful of Apps (six at 10 s each: the whole minute). Two
 * Apps' worth: one slow App of an Org leaves its other Apps 10 s.
 */
export const ORG_CALL_BUDGET_MS = 2 * APP_CALL_BUDGET_MS

/**
 * The shares of one worker's call time: APP_CALL_BUDGET_MS per App and ORG_CALL_BUDGET_MS per Org each
 * APP_CALL_WINDOW_MS. At the default deadline (15 s) one call held to it spends an App's share, two an
 * Org's. Given otherwise only by tests (src/runtime/server.ts StartOptions.callShare) that shorten
 * FIXLOOP_OUTBOUND_TIMEOUT and scale the shares with it, so that still holds.
 */
export interface CallShare {
  appBudgetMs: number
  orgBudgetMs: number
  windowMs: number
}
export const DEFAULT_CALL_SHARE: CallShare = { appBudgetMs: APP_CALL_BUDGET_MS, orgBudgetMs: ORG_CALL_BUDGET_MS, windowMs: APP_CALL_WINDOW_MS }

/** An App's share within its Org's: a call waits while either is spent. */
export interface AppTimeShare {
  waitMs(appId: string, orgId: string): number
  spend(appId: string, orgId: string, ms: number): void
}

export function createAppTimeShare(now: () => number, appBudgetMs = APP_CALL_BUDGET_MS, orgBudgetMs = ORG_CALL_BUDGET_MS, windowMs = APP_CALL_WINDOW_MS): AppTimeShare {
  const apps = createTimeShare(now, appBudgetMs, windowMs)
  const orgs = createTimeShare(now, orgBudgetMs, windowMs)
  return {
    waitMs: (appId, orgId) => Math.max(apps.waitMs(appId), orgs.waitMs(orgId)),
    spend(appId, orgId, ms) {
      apps.spend(appId, ms)
      orgs.spend(orgId, ms)
    },
  }
}
