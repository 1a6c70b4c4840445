/**
 * Entry of /widget/replay-<hash>.js, loaded by widget.js only when the App has replay on: registers the
 * recorder factory. The recorder keeps the last N seconds of the page in memory (buffer.ts) and hands
 * them over, gzipped, only when a report is sent (pack.ts); nothing else leaves the browser.
 */
import { record } from '@rrweb/record'
import type { ReplayRecorder, ReplaySettings } from '../types'
import { REPLAY_KEY, shared } from '../safe-dom'
import { ReplayBuffer, type TimedEvent } from './buffer'
import { contextEvents, pack } from './pack'
import { hideChoices, maskEventAttributes, recordOptions } from './privacy'
import { ownEventsFilter } from './own'
import { privateMasker } from './private'

/** The hard cap on the recording kept in memory (estimated serialized bytes). */
export const MAX_MEMORY_BYTES = 10 * 1024 * 1024
const MIN_MEMORY_BYTES = 256 * 1024

function startRecorder(settings: ReplaySettings, host: Element, memoryBytes?: number): ReplayRecorder {
  const windowMs = settings.seconds * 1000
  const cap = Math.max(MIN_MEMORY_BYTES, Math.min(MAX_MEMORY_BYTES, memoryBytes || MAX_MEMORY_BYTES))
  const buffer = new ReplayBuffer(windowMs, cap, () => record.takeFullSnapshot(true))
  const masked = settings.mode === 'masked'
  let markAt: number | undefined
  const ownEvents = ownEventsFilter(host, record.mirror)
  const maskPrivate = privateMasker(record.mirror)
  const stop = record({
    ...recordOptions(settings.mode),
    // A full snapshot every half window (at most 30 s): a segment older than the window can go.
    checkoutEveryNms: Math.min(30_000, Math.max(5_000, windowMs / 2)),
    emit(event) {
      const e = ownEvents(event as unknown as TimedEvent)
      if (!e) return
      maskPrivate(e)
      hideChoices(e)
      if (masked) maskEventAttributes(e)
      buffer.push(e)
    },
    errorHandler: () => true,
  })
  return {
    mark() {
      markAt = Date.now()
      buffer.hold(markAt)
    },
    release() {
      markAt = undefined
      buffer.release()
    },
    async export({ consoleLogs, network }) {
      const end = Date.now()
      const at = markAt
      return pack(buffer.snapshot(), (start) => contextEvents(start, end, consoleLogs, network, at))
    },
    forget() {
      markAt = undefined
      buffer.forget()
    },
    stats: () => buffer.stats(),
    stop: () => stop?.(),
  }
}

shared[REPLAY_KEY] = startRecorder
