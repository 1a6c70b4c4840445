/**
 * How sign-in is slowed down without letting a stranger lock the owner out. Only failures count, and
 * three ways, each with exponential back-off (src/core/failure-throttle.ts):
 * - per source (the client address of client-address.ts): one address guessing at many accounts;
 * - per (account, source) pair: one address guessing at one account. A correct password from an
 *   address that has not failed is still accepted, whatever other addresses did to the account;
 * - per account, from every source together: a ceiling only a distributed attack reaches (then the
 *   account waits, up to 15 minutes at a time, for everyone).
 * A missing TOTP code (the first step of a TOTP sign-in) is not a failure; a wrong one is.
 * An IPv6 source counts as its /64: one host is usually handed a whole /64 and could rotate through it.
 */
import { guard, type BackoffSpec } from '../../core/failure-throttle'
import type { ThrottleFactory } from '../../core/failure-throttle'
import { addressKey } from '../../core/address-key'

const FIFTEEN_MINUTES = 15 * 60_000
const HOUR = 3600_000

export const SIGN_IN_BACKOFF = {
  source: { freeFailures: 20, baseDelayMs: 1000, maxDelayMs: FIFTEEN_MINUTES, forgetAfterMs: HOUR },
  pair: { freeFailures: 5, baseDelayMs: 1000, maxDelayMs: FIFTEEN_MINUTES, forgetAfterMs: HOUR },
  account: { freeFailures: 500, baseDelayMs: 60_000, maxDelayMs: FIFTEEN_MINUTES, forgetAfterMs: HOUR },
} as const satisfies Record<string, BackoffSpec>

/** The source a failure is charged to: the address key of src/core/address-key.ts (an IPv6 address as its /64). */
export const sourceKey = addressKey

/** `throttles`: in memory on one node, shared through Redis by every node of a cluster. */
export function createSignInThrottle(throttles: ThrottleFactory) {
  const bySource = throttles('sign-in:source', SIGN_IN_BACKOFF.source)
  const byPair = throttles('sign-in:pair', SIGN_IN_BACKOFF.pair)
  const byAccount = throttles('sign-in:account', SIGN_IN_BACKOFF.account)
  // A newline cannot be in an email that reaches here (it is trimmed and lower-cased only) nor in an address.
  const pairKey = (account: string, source: string) => `${account}\n${source}`

  return {
    /**
     * Runs the password check for `account` from `address`: 429 rate_limited with Retry-After while any
     * of the three must wait (the password is not checked); a failure (`isFailure`) counts on all three;
     * a success starts the pair over, not the source (signing in to one's own account must not reset
     * guessing at others) nor the account.
     */
    guard<T>(account: string, address: string, run: () => Promise<T>, isFailure: (error: unknown) => boolean): Promise<T> {
      const source = sourceKey(address)
      return guard(
        [
          { throttle: bySource, key: source, clearOnSuccess: false },
          { throttle: byPair, key: pairKey(account, source), clearOnSuccess: true },
          { throttle: byAccount, key: account, clearOnSuccess: false },
        ],
        run,
        isFailure,
      )
    },
  }
}
export type SignInThrottle = ReturnType<typeof createSignInThrottle>
