/**
 * widget.js: the small loader every customer page includes. It records console and network context
 * from the first moment, mounts <fixloop-widget> (open shadow root, a "Report a problem" launcher) and
 * exposes window.Fixloop. The dialog, screenshots, picker and offline queue live in /widget/<hash>.js,
 * fetched from the same origin on first open (or at once when reports wait in the offline queue), with
 * the chosen language's strings (/widget/locale-<tag>-<hash>.json; locale.ts chooses).
 */
import type { Core, FixloopOptions, ReplayRecorder, ReplaySettings, WidgetUI } from './types'
import { resolveStrings, type Strings } from './strings'
import { browserLanguages, chooseLocale, directionOf, type Locale } from './locale'
import { installCapture, consoleLogs, forgetCaptured, networkSummary, rawFetch } from './capture'
import { LAUNCHER_CSS, applyTheme } from './theme'
import { hasQueuedReports } from './queue-peek'
import { API_KEY, RECORDER_KEY, REPLAY_KEY, UI_KEY, activeElement, body, createElement, currentScript, head, on, rootElement, shared } from './safe-dom'
import { allowScript, sandboxHTML, scriptURL } from './trusted'

/** The proof-of-work Worker's blob: URL, blessed by the one `fixloop` policy (it is the widget's own code). */
const workerURL = (url: string): string => {
  allowScript(url)
  return scriptURL(url)
}

declare const __APP_FILE__: string
/** The session recorder's file, /widget/replay-<hash>.js (widget/build.ts). */
declare const __REPLAY_FILE__: string
/** Every locale's launcher label (the launcher shows before any table is fetched), set by widget/build.ts. */
declare const __LAUNCHERS__: Record<Locale, string>
/** The content hash of the locale tables: /widget/locale-<tag>-<hash>.json (widget/build.ts). */
declare const __LOCALES_HASH__: string

const script = currentScript()
const scriptOrigin = script?.src ? new URL(script.src).origin : location.origin
const scriptNonce = script?.nonce || script?.getAttribute('nonce') || undefined
type Api = typeof Fixloop
/** widget.js included twice: the second copy only forwards its data-public-key to the first. */
const earlier = shared[API_KEY] as Api | undefined
if (!earlier) installCapture()

let core: Core | undefined
let ui: Promise<WidgetUI> | undefined
const triggers = new Set<HTMLElement>()

function deepActiveElement(): HTMLElement | null {
  let el = activeElement()
  while (el?.shadowRoot?.activeElement) el = el.shadowRoot.activeElement
  return el instanceof HTMLElement && el !== body() ? el : null
}

/**
 * A lazy script's factory (the UI, or the session recorder): loaded once from /widget/<file> with the
 * page's nonce under the one Trusted Types policy (a second widget.js finds it registered).
 */
function loadChunk<T>(c: Core, file: string, key: symbol): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const factory = () => shared[key] as T | undefined
    const ready = factory()
    if (ready) return resolve(ready)
    const tag = createElement('script')
    const src = `${c.endpoint}/widget/${file}`
    allowScript(src)
    try {
      tag.src = scriptURL(src)
    } catch (e) {
      return reject(new Error(`fixloop ${file} blocked by Trusted Types: allow the policy "fixloop" (${(e as Error).message})`))
    }
    tag.async = true
    tag.crossOrigin = 'anonymous'
    const nonce = c.options.nonce ?? scriptNonce
    if (nonce) tag.nonce = nonce
    tag.onload = () => {
      const registered = factory()
      if (registered) resolve(registered)
      else reject(new Error(`fixloop ${file} did not register`))
    }
    tag.onerror = () => reject(new Error(`fixloop ${file} could not be loaded`))
    ;(head() ?? body())!.appendChild(tag)
  })
}

/**
 * The chosen locale's table, fetched as JSON next to the UI script (24 tables would not fit the loader's
 * budget, and a page needs one). Data, not code: no script-src or Trusted Types involved, only the
 * connect-src the reports go through. If it cannot be had, the dialog speaks English.
 */
function loadTable(c: Core): Promise<unknown> {
  if (c.locale === 'en') return Promise.resolve(undefined)
  return c
    .fetch(`${c.endpoint}/widget/locale-${c.locale}-${__LOCALES_HASH__}.json`, { credentials: 'omit' })
    .then((r) => (r.ok ? r.json() : undefined))
    .then(undefined, () => undefined)
}

function loadUI(): Promise<WidgetUI> {
  if (!core) return Promise.reject(new Error('Fixloop.init() was not called'))
  const c = core
  if (!ui) {
    const loading = Promise.all([loadChunk<(core: Core) => WidgetUI>(c, __APP_FILE__, UI_KEY), loadTable(c)]).then(([make, table]) => {
      c.strings = resolveStrings(c.locale, table, c.options.strings)
      return make(c)
    })
    // A failed load is tried again on the next open.
    loading.then(undefined, () => {
      if (ui === loading) ui = undefined
    })
    ui = loading
  }
  return ui
}

let recorder: ReplayRecorder | undefined

/**
 * Session replay: asks the App's setting (GET /v1/widget/config) and, only when replay is on, loads the
 * replay chunk and starts recording. Any failure means off: nothing is loaded, nothing recorded.
 */
async function startReplay(c: Core): Promise<void> {
  if (typeof CompressionStream === 'undefined') return
  const res = await c.fetch(`${c.endpoint}/v1/widget/config`, { headers: { authorization: `Bearer ${c.options.publicKey}` } }).catch(() => undefined)
  if (res?.status !== 200) return
  const replay = ((await res.json().catch(() => undefined)) as { replay?: { mode?: string; seconds?: number } } | undefined)?.replay
  const mode = replay?.mode
  const seconds = Number(replay?.seconds)
  if ((mode !== 'masked' && mode !== 'inputs') || !(seconds >= 10 && seconds <= 300)) return
  const start = await loadChunk<(s: ReplaySettings, host: Element, memoryBytes?: number) => ReplayRecorder>(c, __REPLAY_FILE__, REPLAY_KEY)
  recorder = start({ mode, seconds }, c.host, c.options.replayMemoryBytes)
  shared[RECORDER_KEY] = recorder
}

let openWhenMounted = false

function open(): void {
  if (!core) {
    // init() ran before <body> existed: open as soon as the widget is mounted.
    openWhenMounted = true
    return
  }
  core.trigger = deepActiveElement()
  recorder?.mark()
  loadUI().then((u) => u.open(), (e) => console.warn('[fixloop]', e.message))
}

function mount(options: FixloopOptions): void {
  const endpoint = (options.endpoint ?? scriptOrigin).replace(/\/+$/, '')
  installCapture(options.slowRequestMs)
  const host = createElement('fixloop-widget' as 'div')
  const root = host.attachShadow({ mode: 'open' })
  const sheet = new CSSStyleSheet()
  sheet.replaceSync(LAUNCHER_CSS)
  root.adoptedStyleSheets = [sheet]
  const locale = chooseLocale(options.locale, browserLanguages())
  const dir = directionOf(locale)
  const strings: Strings = resolveStrings(locale, { launcher: __LAUNCHERS__[locale] }, options.strings)
  core = { options, endpoint, host, root, locale, dir, strings, consoleLogs, network: networkSummary, trigger: null, fetch: (...a) => rawFetch(...a), sandboxHTML, workerURL, replay: () => recorder }
  if (options.autoInject !== false) {
    const button = createElement('button')
    button.type = 'button'
    button.className = 'launcher'
    button.setAttribute('part', 'launcher')
    button.setAttribute('aria-haspopup', 'dialog')
    button.lang = locale
    button.dir = dir
    button.textContent = strings.launcher
    button.addEventListener('click', open)
    root.appendChild(button)
  }
  if (options.theme) applyTheme(host, options.theme)
  // A child of <html>, after <body>, not inside it: a transform, filter, will-change or contain on <body>
  // makes <body> the containing block of fixed descendants (the launcher would sit at the page's bottom,
  // out of sight), and Turbo Drive and similar routers swap <body> for the next page's on each visit,
  // which took the widget with it (the new body's widget.js finds it mounted and does nothing).
  rootElement().appendChild(host)
  startReplay(core).catch((e) => console.warn('[fixloop] session replay off:', (e as Error).message))
  for (const el of triggers) on(el, 'click', open)
  if (openWhenMounted) open()
  hasQueuedReports().then(
    (waiting) => {
      if (waiting) loadUI().then((u) => u.flush(), () => undefined)
    },
    () => undefined,
  )
}

function whenBody(run: () => void): void {
  if (body()) run()
  else on(document, 'DOMContentLoaded', run, { once: true })
}

/** window.Fixloop: the mount API of CONTRACT.md "Browser widget". */
const Fixloop = {
  init(options: FixloopOptions): void {
    if (core) return
    if (!options?.publicKey) throw new Error('Fixloop.init: publicKey is required')
    whenBody(() => mount(options))
  },
  open,
  close(): void {
    ui?.then((u) => u.close())
  },
  /** Opens the widget from the customer's own button. */
  /**
   * Private mode, a single-page app: call when the user signs out (or another signs in) without a page
   * load. The widget forgets the cached user token (it would be used until its exp), the address it
   * named, the "Your reports" list, the draft, and what it recorded of the page (console lines, requests,
   * the session replay's window): none of it goes with the next user's report.
   */
  resetUser(): void {
    forgetCaptured()
    recorder?.forget()
    ui?.then((u) => u.resetUser(), () => undefined)
  },
  attachTo(el: HTMLElement): void {
    triggers.add(el)
    if (core) on(el, 'click', open)
  },
  setTheme(theme: Record<string, string>): void {
    if (core) applyTheme(core.host, theme)
  },
}

const api: Api = earlier ?? Fixloop
shared[API_KEY] = api
// An own property of window: it shadows any element with id="Fixloop" for the page's scripts.
;(window as unknown as { Fixloop: Api }).Fixloop = api

const key = script?.dataset.publicKey
if (key) api.init({ publicKey: key, endpoint: script?.dataset.endpoint, locale: script?.dataset.locale })
