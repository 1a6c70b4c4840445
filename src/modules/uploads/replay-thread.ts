/**
 * The session replay scrub's thread: decoding (gunzip up to 100 MB), parsing and scrubbing a replay is
 * CPU work of seconds for a large one (measured: an 8 MB recording, 32,000 events, about 2-10 s), which
 * on the request thread would stall every HTTP answer as long. Started per scrub by replay-scrubber.ts,
 * it answers one message and is terminated: its heap goes with it.
 *
 * Message in: {bytes: Uint8Array, masking}; out: a ReplayScrubResult (the gzip transferred, not copied).
 */
import { scrubReplayBytes } from './replay-blob'

declare const self: Worker

self.onmessage = (e: MessageEvent<{ bytes: Uint8Array; masking: 'masked' | 'inputs' }>) => {
  let result
  try {
    result = scrubReplayBytes(e.data.bytes, e.data.masking)
  } catch {
    result = { kind: 'unreadable' as const, reason: 'could not be scrubbed' }
  }
  if (result.kind === 'scrubbed') {
    // zlib may hand back a view into a pooled buffer: the exact bytes are copied, then moved.
    const gzip = new Uint8Array(result.gzip)
    self.postMessage({ ...result, gzip }, [gzip.buffer as ArrayBuffer])
  } else {
    self.postMessage(result)
  }
}
