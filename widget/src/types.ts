/** Public options of Fixloop.init() and the small core the loader shares with the lazily loaded UI. */
import type { Strings, StringOverrides } from './strings'
import type { Locale } from './locale'

/** What the customer page passes to window.Fixloop.init(). */
export interface FixloopOptions {
  publicKey: string
  /** fixloop's base URL; defaults to the origin widget.js was loaded from. */
  endpoint?: string
  /** Private mode: returns a user token (HS256 JWT minted by the customer's backend). */
  getUserToken?: () => Promise<string>
  /** The customer's own scrubbing: return the payload (changed or not) or null to cancel. */
  beforeSend?: (payload: SubmitPayload) => SubmitPayload | null | Promise<SubmitPayload | null>
  /** A BCP 47 tag (e.g. 'de', 'pt-BR', 'zh-Hant'); without it the browser's navigator.languages decide (locale.ts). */
  locale?: string
  /** Any UI string, overriding the locale's; per locale under its tag: { send: 'Go', de: { send: 'Los' } }. */
  strings?: StringOverrides
  /** Nonce for the lazily loaded script under a strict CSP (defaults to widget.js's own nonce). */
  nonce?: string
  /** false: no floating launcher; open with Fixloop.open() or attachTo(el). */
  autoInject?: boolean
  onSubmitSuccess?: (result: { id: string; status: string }) => void
  onSubmitError?: (error: { status: number; code: string; message: string; queued: boolean }) => void
  /** Public mode only: who is reporting. Never sent with a user token. */
  identity?: { email?: string; name?: string; externalUserId?: string }
  /** Customer metadata (the whole metadata object stays within 4 KB of JSON). */
  metadata?: Record<string, unknown>
  /** Theme variables, e.g. { accent: '#0f766e' } or { '--fixloop-accent': '#0f766e' }. */
  theme?: Record<string, string>
  /** false: no screenshot offered. */
  screenshot?: boolean
  /** A fetch/XHR slower than this (ms) is summarised even when it succeeds. */
  slowRequestMs?: number
  /**
   * Session replay (when the App turns it on): a lower cap, in bytes, on the recording kept in memory
   * (default and maximum 10 MB, at least 256 KB). The page can lower it, never raise it.
   */
  replayMemoryBytes?: number
}

export interface ConsoleEntry {
  level: 'log' | 'info' | 'warn' | 'error' | 'debug'
  message: string
  ts: number
}

export interface NetworkEntry {
  method: string
  url: string
  status: number
  ms: number
  ts: number
}

/** The JSON body of POST /v1/feedback (spec 2.3). */
export interface SubmitPayload {
  text: string
  url?: string
  userAgent?: string
  viewport?: { w: number; h: number; dpr: number }
  consoleLogs?: ConsoleEntry[]
  attachments?: { key: string; kind: 'screenshot' | 'attachment' | 'replay'; contentType: string; byteSize: number; width?: number; height?: number }[]
  componentTarget?: { name: string; meta?: Record<string, unknown>; bbox?: { x: number; y: number; w: number; h: number }; screenshotKey?: string }
  metadata?: Record<string, unknown>
  identity?: { email?: string; name?: string; externalUserId?: string }
  /** The reporter asked to be emailed once the report is resolved. */
  notifyEmail?: boolean
  severity?: 'low' | 'medium' | 'high' | null
  /** Cheap bot signals (docs/widget.md "Abuse defence"): the honeypot's value if a bot filled it, ms from open to Send. */
  clientSignals?: { honeypot?: string; formMs?: number }
  /**
   * Widget-only, never sent: true when a session replay will be attached. beforeSend drops the replay by
   * setting it to false (or deleting it); the field is removed before the report leaves the browser.
   */
  replay?: boolean
}

/** What the loader hands to the lazily loaded UI. */
export interface Core {
  options: FixloopOptions
  endpoint: string
  host: HTMLElement
  root: ShadowRoot
  /** The built-in table chosen (locale.ts); every element the widget adds to its shadow root carries its lang and dir. */
  locale: Locale
  dir: 'ltr' | 'rtl'
  /** English before the UI loads (with the launcher's label in the chosen language), the full table after. */
  strings: Strings
  consoleLogs(): ConsoleEntry[]
  network(): NetworkEntry[]
  /** The element focus returns to when the dialog closes. */
  trigger: HTMLElement | null
  /** The page's fetch from before the widget wrapped it: the widget's own calls are not summarised. */
  fetch: typeof fetch
  /** The screenshot sandbox's srcdoc, TrustedHTML under Trusted Types (the loader owns the one policy). */
  sandboxHTML(): string
  /** The proof-of-work Worker's blob: URL, as a TrustedScriptURL under Trusted Types (the loader owns the policy). */
  workerURL(url: string): string
  /** The session recorder, when the App has replay on and its chunk has loaded. */
  replay(): ReplayRecorder | undefined
}

/** The App's replay setting, as GET /v1/widget/config answers it. */
export interface ReplaySettings {
  mode: 'masked' | 'inputs'
  seconds: number
}

/** What the lazily loaded replay chunk (replay-<hash>.js) gives back to the loader. */
export interface ReplayRecorder {
  /** The moment of the report (the dialog opened): keeps the window before it until release(). */
  mark(): void
  /** The dialog closed without a report: the window follows the clock again. */
  release(): void
  /**
   * The recording of the window, gzipped JSON {"v":1,"events":[...]} with the console errors/warnings,
   * failed or slow requests and the report's moment merged in as rrweb custom events; undefined when
   * nothing is recorded or it cannot fit the upload limit.
   */
  export(context: { consoleLogs: ConsoleEntry[]; network: NetworkEntry[] }): Promise<Blob | undefined>
  /**
   * Debug and tests (window[Symbol.for('fixloop.recorder')].stats()): the estimated serialized bytes kept
   * in memory, the segments and events kept, the cap, the oldest segment's start, whether the page's
   * snapshot alone was over the cap (recording stopped).
   */
  stats(): { bytes: number; segments: number; events: number; maxBytes: number; oldest?: number; overflow: boolean }
  /** The page's user signed out: drops what was recorded, records on from a fresh snapshot. */
  forget(): void
  stop(): void
}

/** What the lazily loaded UI gives back to the loader. */
export interface WidgetUI {
  open(): void
  close(): void
  /** Sends queued reports (after a reload or when the browser is back online). */
  flush(): Promise<void>
  /** The page's user signed out (Fixloop.resetUser): forgets their token, list and draft. */
  resetUser(): void
}
