/**
 * A session replay (rrweb events) as a short text timeline for the agent's task file: what the reporter
 * did and what went wrong before the report, never what they typed.
 *
 * Input: the replay attachment's bytes: gzip-compressed or plain UTF-8 JSON, either `{"v":1,"events":[…]}`
 * or a bare array of rrweb events (`{type, data, timestamp}`). Anything else gives no timeline (null).
 *
 * Lines, timed from the recording's first event as `mm:ss.s`:
 *   - navigations (Meta events, type 4: `data.href`);
 *   - clicks and double clicks (IncrementalSnapshot type 3, source 2 MouseInteraction, type 2/4), the
 *     clicked node resolved to a CSS-like selector from the last FullSnapshot (type 2) and the nodes later
 *     Mutations (source 0) added: `tag#id.class1.class2`, or `tag[data-testid=…]` / `[aria-label=…]` /
 *     `[name=…]`, prefixed with the nearest ancestor that has an id or a test id;
 *   - console errors (and warnings when there are at most MAX_WARNINGS of them) from the widget's Custom
 *     events (type 5, tag `fixloop.console`, payload `{level, message}`) or rrweb's console plugin
 *     (type 6, `rrweb/console@1`);
 *   - failed requests (tag `fixloop.network`, payload `{method, url, status, durationMs}`: status >= 400,
 *     or 0 / missing for a request that never got an answer) with status and duration;
 *   - the moment of the report (tag `fixloop.report`); nothing after it.
 * Never: input events (source 5), attribute `value`s, text nodes (the page's text, which may hold what
 * the user typed), query strings and fragments of URLs (`?…` says one was there: query values are where
 * tokens and personal data travel). Every string goes through `scrub` (the sanitizer) and is capped.
 *
 * Bounded: at most MAX_LINES lines and MAX_BYTES bytes; when cut, the LAST moments before the report are
 * kept (that is where the bug is) and a first line says how many earlier ones were left out.
 */
import { gunzipSync } from 'node:zlib'

/** The most lines and bytes a timeline holds. */
export const MAX_LINES = 80
export const MAX_BYTES = 8 * 1024
/** Warnings are listed only when the recording has at most this many (otherwise they drown the errors). */
export const MAX_WARNINGS = 10
/** A replay is decompressed up to this many bytes (a gzip bomb stops here: no timeline). */
export const MAX_REPLAY_JSON_BYTES = 64 * 1024 * 1024
/** Nodes resolved from snapshots at most (a huge page still resolves its clicks in bounded memory). */
const MAX_NODES = 500_000
/** One value (URL, selector, message) at most, in characters. */
const MAX_VALUE = 200

/** An rrweb event as recorded (eventWithTime). */
export interface ReplayEvent {
  type: number
  data?: unknown
  timestamp: number
}

/** rrweb's event and source numbers (rrweb-types). */
const EventType = { FullSnapshot: 2, IncrementalSnapshot: 3, Meta: 4, Custom: 5, Plugin: 6 } as const
const Source = { Mutation: 0, MouseInteraction: 2 } as const
const Mouse = { Click: 2, DblClick: 4 } as const
const ELEMENT_NODE = 2

/**
 * The events of a replay attachment's bytes, or null when they are not a replay: gzip or plain UTF-8
 * JSON, `{"v":1,"events":[…]}` or an array. Never throws.
 */
export function decodeReplay(bytes: Uint8Array): ReplayEvent[] | null {
  try {
    const raw = bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes, { maxOutputLength: MAX_REPLAY_JSON_BYTES }) : bytes
    if (raw.length > MAX_REPLAY_JSON_BYTES) return null
    const parsed: unknown = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(raw))
    const events = Array.isArray(parsed) ? parsed : isObject(parsed) && parsed.v === 1 && Array.isArray(parsed.events) ? parsed.events : null
    if (events === null) return null
    return events.filter((e): e is ReplayEvent => isObject(e) && typeof e.type === 'number' && typeof e.timestamp === 'number' && Number.isFinite(e.timestamp))
  } catch {
    return null
  }
}

interface NodeInfo {
  tag: string
  attrs: Record<string, unknown>
  parent: number | null
}

/** The element nodes seen so far, by rrweb node id. */
class NodeIndex {
  private nodes = new Map<number, NodeInfo>()

  reset(): void {
    this.nodes.clear()
  }

  /** Adds a serialized node and its descendants (iteratively: a deep page never overflows the stack). */
  add(root: unknown, parent: number | null): void {
    const stack: [unknown, number | null][] = [[root, parent]]
    while (stack.length > 0 && this.nodes.size < MAX_NODES) {
      const [node, parentId] = stack.pop()!
      if (!isObject(node) || typeof node.id !== 'number') continue
      if (node.type === ELEMENT_NODE && typeof node.tagName === 'string') {
        this.nodes.set(node.id, { tag: node.tagName.toLowerCase(), attrs: isObject(node.attributes) ? { ...node.attributes } : {}, parent: parentId })
      }
      if (Array.isArray(node.childNodes)) for (let i = node.childNodes.length - 1; i >= 0; i--) stack.push([node.childNodes[i], node.id])
    }
  }

  /** A Mutation's attribute changes (a class toggled, an id set). */
  setAttributes(id: unknown, attributes: unknown): void {
    const n = typeof id === 'number' ? this.nodes.get(id) : undefined
    if (!n || !isObject(attributes)) return
    for (const [k, v] of Object.entries(attributes)) {
      if (v === null) delete n.attrs[k]
      else n.attrs[k] = v
    }
  }

  /** A CSS-like selector of the node, or null when it is unknown (a text node, a node never seen). */
  selector(id: number): string | null {
    const n = this.nodes.get(id)
    if (!n) return null
    const own = describe(n)
    if (own.unique) return own.text
    // Context: the nearest ancestor with an id or a test id (a few levels up at most).
    let p = n.parent
    for (let depth = 0; p !== null && depth < 8; depth++) {
      const a = this.nodes.get(p)
      if (!a) break
      const d = describe(a)
      if (d.unique) return `${d.text} ${own.text}`
      p = a.parent
    }
    return own.text
  }
}

/** Attributes that name an element; never `value`, `placeholder` or text. */
const NAMING_ATTRIBUTES = ['data-testid', 'data-test-id', 'data-test', 'aria-label', 'name'] as const

/** `tag#id.a.b` or `tag[data-testid="…"]`; `unique` when it carries an id or a naming attribute. */
function describe(n: NodeInfo): { text: string; unique: boolean } {
  const tag = /^[a-z][a-z0-9-]{0,40}$/.test(n.tag) ? n.tag : 'element'
  const id = typeof n.attrs.id === 'string' ? n.attrs.id.trim() : ''
  if (id && id.length <= 80) return { text: `${tag}#${cssIdent(id)}`, unique: true }
  for (const name of NAMING_ATTRIBUTES) {
    const v = n.attrs[name]
    if (typeof v === 'string' && v.trim()) return { text: `${tag}[${name}="${v.trim().slice(0, 60).replace(/["\\]/g, '\\$&')}"]`, unique: true }
  }
  const classes = typeof n.attrs.class === 'string' ? n.attrs.class.split(/\s+/).filter((c) => c && c.length <= 60).slice(0, 2) : []
  return { text: tag + classes.map((c) => `.${cssIdent(c)}`).join(''), unique: false }
}

/** An identifier as CSS would need it escaped (enough for reading: spaces and punctuation escaped). */
function cssIdent(s: string): string {
  return s.replace(/[^A-Za-z0-9_-]/g, (c) => `\\${c}`)
}

/** A URL as the timeline shows it: origin and path, the query and fragment replaced by `?…` / `#…`. */
export function timelineUrl(href: string, scrub: (s: string) => string): string {
  let shown: string
  try {
    const u = new URL(href)
    shown = u.protocol === 'http:' || u.protocol === 'https:' ? `${u.origin}${u.pathname}` : `${u.protocol}…`
    if (u.search) shown += '?…'
    if (u.hash) shown += '#…'
  } catch {
    // A relative URL (a fetch of "/api/cart?id=…"): the same cut by hand.
    const q = href.search(/[?#]/)
    shown = q === -1 ? href : `${href.slice(0, q)}${href[q] === '?' ? '?…' : '#…'}`
  }
  return cap(scrub(shown))
}

function cap(s: string, max = MAX_VALUE): string {
  const one = s.replace(/\s+/g, ' ').trim()
  return one.length > max ? `${one.slice(0, max)}…` : one
}

/** `mm:ss.s` from the recording's start. */
export function clockOf(ms: number): string {
  const tenths = Math.max(0, Math.floor(ms / 100))
  const m = Math.floor(tenths / 600)
  const s = (tenths % 600) / 10
  return `${String(m).padStart(2, '0')}:${s.toFixed(1).padStart(4, '0')}`
}

interface Moment {
  at: number
  text: string
  /** Console warnings are kept only when few (decided once all are seen). */
  warning?: boolean
}

/**
 * The timeline's lines (without a trailing newline), or an empty list when nothing worth saying happened.
 * `scrub` is applied to every string taken from the recording.
 */
export function replayTimeline(events: readonly ReplayEvent[], scrub: (s: string) => string): string[] {
  if (events.length === 0) return []
  const start = Math.min(...events.slice(0, 1000).map((e) => e.timestamp))
  const nodes = new NodeIndex()
  const moments: Moment[] = []
  for (const e of events) {
    const d: Record<string, unknown> = isObject(e.data) ? e.data : {}
    const at = e.timestamp - start
    if (e.type === EventType.FullSnapshot) {
      nodes.reset()
      nodes.add(d.node, null)
    } else if (e.type === EventType.Meta && typeof d.href === 'string') {
      moments.push({ at, text: `navigated to ${timelineUrl(d.href, scrub)}` })
    } else if (e.type === EventType.IncrementalSnapshot && d.source === Source.Mutation) {
      if (Array.isArray(d.adds)) for (const a of d.adds) if (isObject(a)) nodes.add(a.node, typeof a.parentId === 'number' ? a.parentId : null)
      if (Array.isArray(d.attributes)) for (const a of d.attributes) if (isObject(a)) nodes.setAttributes(a.id, a.attributes)
    } else if (e.type === EventType.IncrementalSnapshot && d.source === Source.MouseInteraction && (d.type === Mouse.Click || d.type === Mouse.DblClick)) {
      const target = typeof d.id === 'number' ? nodes.selector(d.id) : null
      moments.push({ at, text: `${d.type === Mouse.DblClick ? 'double-clicked' : 'clicked'} ${target ? cap(scrub(target)) : 'an element not in the recording'}` })
    } else if (e.type === EventType.Custom && typeof d.tag === 'string') {
      const m = custom(d.tag, isObject(d.payload) ? d.payload : {}, scrub)
      if (m === 'report') {
        moments.push({ at, text: 'the report was sent (the feedback form opened here)' })
        break
      }
      if (m) moments.push({ at, ...m })
    } else if (e.type === EventType.Plugin && d.plugin === 'rrweb/console@1' && isObject(d.payload)) {
      const p = d.payload
      const message = Array.isArray(p.payload) ? p.payload.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join(' ') : ''
      const m = consoleMoment(p.level, message, scrub)
      if (m) moments.push({ at, ...m })
    }
  }
  const warnings = moments.filter((m) => m.warning).length
  const kept = warnings > MAX_WARNINGS ? moments.filter((m) => !m.warning) : moments
  return bound(kept.map((m) => `${clockOf(m.at)}  ${m.text}`))
}

function custom(tag: string, p: Record<string, unknown>, scrub: (s: string) => string): Omit<Moment, 'at'> | 'report' | null {
  if (tag === 'fixloop.report') return 'report'
  if (tag === 'fixloop.console') return consoleMoment(p.level, typeof p.message === 'string' ? p.message : '', scrub)
  if (tag === 'fixloop.network') {
    const status = typeof p.status === 'number' && Number.isFinite(p.status) ? Math.trunc(p.status) : 0
    if (status > 0 && status < 400) return null
    const method = typeof p.method === 'string' && /^[A-Za-z]{1,10}$/.test(p.method) ? p.method.toUpperCase() : 'GET'
    const url = typeof p.url === 'string' ? timelineUrl(p.url, scrub) : '(unknown URL)'
    const ms = typeof p.durationMs === 'number' && Number.isFinite(p.durationMs) ? ` in ${Math.max(0, Math.round(p.durationMs))} ms` : ''
    return { text: `request failed: ${method} ${url} → ${status > 0 ? status : 'no response'}${ms}` }
  }
  return null
}

function consoleMoment(level: unknown, message: string, scrub: (s: string) => string): Omit<Moment, 'at'> | null {
  if (level !== 'error' && level !== 'warn') return null
  // Scrubbed first, then cut: a credential cut in half would no longer be recognized.
  const text = cap(scrub(message.slice(0, 4000)))
  return level === 'error' ? { text: `console error: ${text}` } : { text: `console warning: ${text}`, warning: true }
}

/** At most MAX_LINES lines and MAX_BYTES bytes, keeping the last ones; the first line says what was cut. */
function bound(lines: string[]): string[] {
  if (lines.length <= MAX_LINES && lines.reduce((n, l) => n + Buffer.byteLength(l) + 1, 0) <= MAX_BYTES) return lines
  const kept: string[] = []
  let bytes = 0
  for (let i = lines.length - 1; i >= 0; i--) {
    const size = Buffer.byteLength(lines[i]!) + 1
    if (kept.length >= MAX_LINES - 1 || bytes + size > MAX_BYTES - 100) break
    kept.push(lines[i]!)
    bytes += size
  }
  kept.reverse()
  const cut = lines.length - kept.length
  return cut > 0 ? [`… ${cut} earlier moment${cut === 1 ? '' : 's'} left out`, ...kept] : kept
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}
