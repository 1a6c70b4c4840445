/**
 * Runs a replay's scrub (replay-blob.ts `scrubReplayBytes`) on a thread of its own (replay-thread.ts), so
 * the request thread keeps answering while a large recording is inflated, parsed and scrubbed. A scrub
 * that takes longer than SCRUB_TIMEOUT_MS is stopped and the replay counts as unreadable (a pathological
 * recording must not hold the job forever); a thread that fails to start falls back to this thread.
 */
import type { ReplayMasking } from '../../sanitize/replay'
import { scrubReplayBytes, type ReplayScrubResult } from './replay-blob'

/** The longest one scrub may take. */
export const SCRUB_TIMEOUT_MS = 5 * 60_000

/** The thread's entry: inside the compiled binary it is a second entry point (package.json "build"). */
function threadUrl(): string {
  const compiled = import.meta.url.includes('/$bunfs/')
  return new URL(compiled ? './modules/uploads/replay-thread.ts' : './replay-thread.ts', import.meta.url).href
}

/** Scrubs `bytes` off the calling thread; never rejects. */
export function scrubReplayOffThread(bytes: Uint8Array, masking: ReplayMasking, timeoutMs = SCRUB_TIMEOUT_MS): Promise<ReplayScrubResult> {
  let thread: Worker
  try {
    thread = new Worker(threadUrl())
  } catch {
    return Promise.resolve(scrubReplayBytes(bytes, masking))
  }
  return new Promise<ReplayScrubResult>((resolve) => {
    const done = (result: ReplayScrubResult) => {
      clearTimeout(timer)
      thread.terminate()
      resolve(result)
    }
    const timer = setTimeout(() => done({ kind: 'unreadable', reason: `scrubbing took longer than ${timeoutMs / 1000} s` }), timeoutMs)
    thread.onmessage = (e: MessageEvent<ReplayScrubResult>) => done(e.data)
    thread.onerror = () => done({ kind: 'unreadable', reason: 'could not be scrubbed' })
    // A copy of its own is transferred: `bytes` may be a view into a shared (pooled) buffer.
    const own = new Uint8Array(bytes) // a copy (Buffer#slice would be a view)
    thread.postMessage({ bytes: own, masking }, [own.buffer as ArrayBuffer])
  })
}
