// A report's session replay (docs/dashboard.md "Session replay"): downloads the replay attachment through
// its short-lived URL, unpacks it here (gzip or plain JSON of {"v":1,"events":[…rrweb events…]}), checks
// it, and plays it in the replay frame (/admin/replay-frame: rrweb's replayer, loaded only then) next to
// a timeline of the console messages and requests the widget recorded. Every control is a button, a
// slider or a select, so the player works from the keyboard.
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks'
import { html } from '@fixloop/ui'

/** Bounds on what the browser unpacks and hands to the replayer: a replay is at most 15 MB packed. */
export const REPLAY_LIMITS = { packedBytes: 16 * 1024 * 1024, unpackedBytes: 128 * 1024 * 1024, depth: 1000 }

/** rrweb's event types the player relies on. */
const FULL_SNAPSHOT = 2
const META = 4
const CUSTOM = 5

/** A replay this page cannot play, with the reason in words. */
export class ReplayError extends Error {}

async function readAll(stream, max, tooLarge) {
  const reader = stream.getReader()
  const chunks = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > max) {
      await reader.cancel().catch(() => {})
      throw new ReplayError(tooLarge)
    }
    chunks.push(value)
  }
  const out = new Uint8Array(size)
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.byteLength
  }
  return out
}

/** The deepest nesting of arrays and objects in `value`, walked without recursion; stops past `limit`. */
function deeperThan(value, limit) {
  const stack = [[value, 1]]
  while (stack.length) {
    const [v, d] = stack.pop()
    if (d > limit) return true
    if (Array.isArray(v)) for (const x of v) x && typeof x === 'object' && stack.push([x, d + 1])
    else for (const k in v) v[k] && typeof v[k] === 'object' && stack.push([v[k], d + 1])
  }
  return false
}

/**
 * The replay's events from its bytes: gzip (by its magic bytes, whatever the Content-Type said) or plain
 * UTF-8 JSON; `{"v":1,"events":[…]}` or a bare array. Sorted by time; throws ReplayError saying why not.
 */
export async function decodeReplay(bytes) {
  let text = bytes
  if (bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      text = await readAll(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip')), REPLAY_LIMITS.unpackedBytes, `it is larger than ${REPLAY_LIMITS.unpackedBytes / 1024 / 1024} MB unpacked`)
    } catch (e) {
      if (e instanceof ReplayError) throw e
      throw new ReplayError('its gzip data is damaged')
    }
  }
  let json
  try {
    json = new TextDecoder('utf-8', { fatal: true }).decode(text)
  } catch {
    throw new ReplayError('it is neither gzip nor UTF-8 JSON')
  }
  let doc
  try {
    doc = JSON.parse(json)
  } catch {
    throw new ReplayError('it is not JSON')
  }
  const events = Array.isArray(doc) ? doc : doc && typeof doc === 'object' && doc.v === 1 && Array.isArray(doc.events) ? doc.events : null
  if (!events) throw new ReplayError('it is not a recording (expected {"v":1,"events":[…]})')
  const valid = events.filter((e) => e && typeof e === 'object' && Number.isInteger(e.type) && Number.isFinite(e.timestamp))
  if (valid.length !== events.length) throw new ReplayError('some of its events are not rrweb events')
  if (!valid.some((e) => e.type === META) || !valid.some((e) => e.type === FULL_SNAPSHOT && e.data && e.data.node)) throw new ReplayError('it holds no snapshot of the page')
  // The replayer rebuilds the page recursively: a tree nested this deep would overflow its stack.
  if (valid.some((e) => deeperThan(e, REPLAY_LIMITS.depth))) throw new ReplayError(`it is nested too deeply (more than ${REPLAY_LIMITS.depth} levels)`)
  return valid.slice().sort((a, b) => a.timestamp - b.timestamp)
}

const text = (v) => (typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v))
const BAD_LEVELS = ['error', 'warn']

/**
 * The timeline beside the player, from the widget's custom events (docs/widget.md "Session replay"):
 * console messages (`fixloop.console`), requests (`fixloop.network`) and the moment the reporter opened
 * the report dialog (`fixloop.report`). Offsets in ms from the first event. The report's own console
 * lines stand in when the recording has none (the widget keeps them with their times).
 */
export function timelineOf(events, consoleLogs = []) {
  const start = events.length ? events[0].timestamp : 0
  const total = events.length ? events[events.length - 1].timestamp - start : 0
  const entries = []
  let reportAt = null
  for (const e of events) {
    if (e.type !== CUSTOM || !e.data || typeof e.data !== 'object') continue
    const p = e.data.payload && typeof e.data.payload === 'object' ? e.data.payload : {}
    const t = e.timestamp - start
    if (e.data.tag === 'fixloop.console') entries.push({ t, kind: 'console', tag: text(p.level) || 'log', what: text(p.message), bad: BAD_LEVELS.includes(p.level) })
    else if (e.data.tag === 'fixloop.network') {
      const status = Number(p.status)
      const answer = status === 0 ? 'no answer' : text(p.status)
      const ms = Number.isFinite(Number(p.durationMs)) ? ` · ${Math.round(Number(p.durationMs))} ms` : ''
      entries.push({ t, kind: 'network', tag: text(p.method) || 'request', what: `${text(p.url)} → ${answer}${ms}`, bad: status === 0 || status >= 400 })
    } else if (e.data.tag === 'fixloop.report' && reportAt === null) reportAt = t
  }
  if (!entries.some((x) => x.kind === 'console'))
    for (const l of consoleLogs || []) {
      if (l && typeof l.ts === 'number' && l.ts >= start && l.ts <= start + total) entries.push({ t: l.ts - start, kind: 'console', tag: text(l.level), what: text(l.message), bad: BAD_LEVELS.includes(l.level) })
    }
  if (reportAt !== null) entries.push({ t: reportAt, kind: 'report', tag: 'report', what: 'The reporter opened the report dialog', bad: false })
  entries.sort((a, b) => a.t - b.t)
  return { total, entries, reportAt }
}

/** "1:05.3" (tenths when asked), from milliseconds. */
export function clock(ms, tenths = false) {
  const s = Math.max(0, ms) / 1000
  const whole = Math.floor(s)
  const base = `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, '0')}`
  return tenths ? `${base}.${Math.floor((s - whole) * 10)}` : base
}

/** Why a download answered non-2xx, in words: the server lets a replay out once it has scrubbed it. */
function downloadRefused(status) {
  if (status === 401 || status === 403) return `The replay's download link expired or was refused (HTTP ${status}): reload the page.`
  return `The replay is being prepared (the server answered HTTP ${status}): reload the page in a moment.`
}

/** Downloads and unpacks the replay: { events } or { notice } (not ready) or { error } (cannot play). */
async function fetchReplay(attachment) {
  if (attachment.replayState === 'unreadable') return { error: 'The server could not read this replay and removed it.' }
  if (!attachment.url) return { notice: 'The replay is being prepared: the server masks it before anyone can play it. Reload the page in a moment.' }
  let res
  try {
    res = await fetch(attachment.url, { credentials: 'same-origin' })
  } catch {
    return { error: 'The replay could not be downloaded (network error).' }
  }
  if (!res.ok) {
    res.body && res.body.cancel().catch(() => {})
    return { notice: downloadRefused(res.status) }
  }
  try {
    const bytes = res.body ? await readAll(res.body, REPLAY_LIMITS.packedBytes, 'it is larger than 16 MB') : new Uint8Array(0)
    return { events: await decodeReplay(bytes) }
  } catch (e) {
    return { error: `The replay cannot be played: ${e instanceof ReplayError ? e.message : 'it could not be read'}.` }
  }
}

const SPEEDS = [0.5, 1, 2, 4]

/** The player and its timeline, once the events are in hand. */
function Player({ events, consoleLogs }) {
  const frame = useRef(null)
  const sent = useRef(false)
  const [state, setState] = useState({ loaded: false, t: 0, playing: false, total: 0, width: 1024, height: 768, error: null })
  const [speed, setSpeed] = useState(1)
  const timeline = useMemo(() => timelineOf(events, consoleLogs), [events])
  const send = (message) => frame.current && frame.current.contentWindow && frame.current.contentWindow.postMessage({ fixloop: 'replay', ...message }, location.origin)
  // Listening from the commit that adds the frame (a layout effect), not after the next paint (useEffect):
  // a cached frame can load, be sent the events and answer 'loaded' before a later listener exists, and
  // the player then never started (seen in Chromium's headless shell, which paints late).
  useLayoutEffect(() => {
    const onMessage = (e) => {
      if (!frame.current || e.source !== frame.current.contentWindow || e.origin !== location.origin) return
      const m = e.data
      if (!m || m.fixloop !== 'replay') return
      if (m.op === 'ready') load()
      else if (m.op === 'loaded') setState((s) => ({ ...s, loaded: true, total: m.total, width: m.width, height: m.height }))
      else if (m.op === 'size') setState((s) => ({ ...s, width: m.width, height: m.height }))
      else if (m.op === 'time') setState((s) => ({ ...s, t: m.t, playing: m.playing }))
      else if (m.op === 'error') setState((s) => ({ ...s, error: String(m.message) }))
    }
    addEventListener('message', onMessage)
    return () => removeEventListener('message', onMessage)
  }, [events])
  // The frame says 'ready' once its scripts ran; its load event is the fallback (the events go once).
  function load() {
    if (sent.current) return
    sent.current = true
    send({ op: 'load', events })
  }
  const seek = (t) => send({ op: 'seek', t })
  const total = state.total || timeline.total
  const jumpTo = timeline.reportAt === null ? total : timeline.reportAt
  const current = timeline.entries.reduce((at, x, i) => (x.t <= state.t + 1 ? i : at), -1)
  const off = !state.loaded || !!state.error
  return html`<div class="replay">
    <div class="replay-stage">
      ${state.error && html`<p class="error" role="alert">The replay cannot be played: ${state.error}</p>`}
      ${!state.loaded && !state.error && html`<p class="muted" role="status">Starting the player…</p>`}
      <iframe ref=${frame} class="replay-frame" src="/admin/replay-frame" title="Session replay: a picture of the recorded page (use the controls below)" tabindex="-1" onLoad=${load}
        style=${{ aspectRatio: `${state.width} / ${state.height}` }} hidden=${!!state.error}></iframe>
      <div class="replay-bar" role="group" aria-label="Replay controls">
        <button type="button" class="primary" disabled=${off} onClick=${() => send({ op: state.playing ? 'pause' : 'play' })}>${state.playing ? 'Pause' : 'Play'}</button>
        <span class="replay-time mono">${clock(state.t, true)} / ${clock(total, true)}</span>
        <input type="range" class="replay-seek" aria-label="Position in the replay" min="0" max=${Math.max(1, Math.round(total))} step="100" value=${Math.round(state.t)}
          aria-valuetext=${`${clock(state.t)} of ${clock(total)}`} disabled=${off} onInput=${(e) => seek(Number(e.currentTarget.value))} />
        <label class="replay-speed">Speed <select disabled=${off} value=${String(speed)} onChange=${(e) => {
          const s = Number(e.currentTarget.value)
          setSpeed(s)
          send({ op: 'speed', speed: s })
        }}>${SPEEDS.map((s) => html`<option value=${String(s)}>${s}×</option>`)}</select></label>
        <button type="button" disabled=${off} onClick=${() => seek(jumpTo)}>Jump to the report</button>
      </div>
    </div>
    <div class="replay-events">
      <h3 id="replay-events-h">Console and network</h3>
      ${timeline.entries.length === 0 && html`<p class="muted small">No console messages or requests were recorded.</p>`}
      <ol class="replay-list" aria-labelledby="replay-events-h">
        ${timeline.entries.map(
          (x, i) => html`<li><button type="button" class=${`replay-entry ${x.kind}${x.bad ? ' bad' : ''}`} disabled=${off} aria-current=${i === current ? 'time' : undefined} onClick=${() => seek(x.t)}>
            <span class="when mono">${clock(x.t)}</span> <span class="tag">${x.kind === 'network' ? x.tag : x.kind === 'report' ? 'report' : `console.${x.tag}`}</span> <span class="what">${x.what}</span>
          </button></li>`,
        )}
      </ol>
    </div>
  </div>`
}

/**
 * The report's session replay section: a message while it is being prepared or when it cannot be
 * played, the player otherwise. Nothing of the replayer loads until there is a recording to play.
 */
export function Replay({ attachment, consoleLogs }) {
  const [got, setGot] = useState(null)
  useEffect(() => {
    let live = true
    setGot(null)
    fetchReplay(attachment).then((r) => live && setGot(r))
    return () => {
      live = false
    }
  }, [attachment.key, attachment.url])
  return html`<section aria-labelledby="replay-h" class="replay-section"><h2 id="replay-h">Session replay</h2>
    ${!got && html`<p class="muted" role="status">Downloading the replay…</p>`}
    ${got && got.notice && html`<p class="notice" role="status">${got.notice}</p>`}
    ${got && got.error && html`<p class="error" role="alert">${got.error}</p>`}
    ${got && got.events && html`<${Player} events=${got.events} consoleLogs=${consoleLogs} />`}
  </section>`
}
