/**
 * For tests that wait out a tracker's or git host's deadline: they run it short (FIXLOOP_OUTBOUND_TIMEOUT,
 * or the `outboundTimeoutMs` a step is given) and the worker's call shares (src/core/time-share.ts) with it,
 * in the default's proportions. At the default 15 s an App's share is 10 s of calls a minute and an Org's
 * 20 s: one call held to its deadline spends the App's share, two the Org's. Scaled, that still holds, so
 * "one held call, not the backlog" means the same at 5 s as at 15.
 */
import { OUTBOUND_TIMEOUT_MS_DEFAULT } from '../src/core/outbound-deadline'
import { DEFAULT_CALL_SHARE, type CallShare } from '../src/core/time-share'

/** The shares for a deadline of `deadlineMs`: the default's scaled by deadlineMs / 15 s, the same one-minute window. */
export function callShareFor(deadlineMs: number): CallShare {
  const scale = deadlineMs / OUTBOUND_TIMEOUT_MS_DEFAULT
  return { appBudgetMs: DEFAULT_CALL_SHARE.appBudgetMs * scale, orgBudgetMs: DEFAULT_CALL_SHARE.orgBudgetMs * scale, windowMs: DEFAULT_CALL_SHARE.windowMs }
}
