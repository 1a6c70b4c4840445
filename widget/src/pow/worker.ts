/**
 * The Worker's script (bundled to a string by widget/build.ts and started from a blob: URL, since a
 * Worker must be same-origin with the customer's page): one message with a challenge in, one message
 * with the number (or -1) out.
 */
import { searchRange, type PowChallenge } from './solve'

self.onmessage = (e: MessageEvent<PowChallenge>) => {
  const c = e.data
  ;(self as unknown as Worker).postMessage(searchRange(c, 0, c.maxnumber + 1))
}
