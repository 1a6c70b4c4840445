/**
 * Context recorded from the moment widget.js runs: a console ring buffer (log/info/warn/error/debug,
 * uncaught errors, unhandled rejections) and a summary of failed or slow fetch/XHR calls. Bounded as
 * the spec says: at most 500 entries, each message at most 1000 characters, credentials stripped.
 * Logged objects are summarised without running page code (summarize.ts). The widget's own requests
 * go through the fetch saved before patching (`rawFetch`), so they are never summarised, while the
 * page's calls to the same origin (fixloop behind the app's reverse proxy) still are.
 */
import type { ConsoleEntry, NetworkEntry } from './types'
import { scrub, stripQueryValues } from './scrub'
import { summarize } from './summarize'
import { on } from './safe-dom'
import { clip } from './clip'

const MAX_ENTRIES = 500
const MAX_MESSAGE = 1000
const MAX_ARGS = 20
const MAX_NETWORK = 50
const LEVELS = ['log', 'info', 'warn', 'error', 'debug'] as const

const logs: ConsoleEntry[] = []
const requests: NetworkEntry[] = []
let installed = false
let slowMs = 3000
/** The page's fetch before the widget wrapped it: the widget's own calls use it and are not recorded. */
export let rawFetch: typeof fetch = (...args) => fetch(...args)

function push(level: ConsoleEntry['level'], args: unknown[]): void {
  let text = ''
  for (let i = 0; i < args.length && i < MAX_ARGS && text.length < MAX_MESSAGE * 2; i++) {
    text += (i ? ' ' : '') + summarize(args[i], MAX_MESSAGE * 2 - text.length)
  }
  logs.push({ level, message: clip(scrub(text), MAX_MESSAGE), ts: Date.now() })
  if (logs.length > MAX_ENTRIES) logs.splice(0, logs.length - MAX_ENTRIES)
}

function record(method: string, url: string, status: number, started: number): void {
  const ms = Math.round(performance.now() - started)
  if (status > 0 && status < 400 && ms < slowMs) return
  requests.push({ method: method.toUpperCase(), url: stripQueryValues(url), status, ms, ts: Date.now() })
  if (requests.length > MAX_NETWORK) requests.shift()
}

function patchConsole(): void {
  for (const level of LEVELS) {
    const original = console[level]
    console[level] = function (...args: unknown[]) {
      try {
        push(level, args)
      } catch {
        // Never let recording break the page's logging.
      }
      return original.apply(this, args)
    }
  }
  on(window, 'error', (e: ErrorEvent) => push('error', ['Uncaught', e.error ?? e.message]))
  on(window, 'unhandledrejection', (e: PromiseRejectionEvent) => push('error', ['Unhandled rejection:', e.reason]))
}

function patchFetch(): void {
  const original = window.fetch
  if (!original) return
  rawFetch = original.bind(window)
  window.fetch = function (input: RequestInfo | URL, init?: RequestInit) {
    const started = performance.now()
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET')
    return original.call(this, input, init).then(
      (res) => (record(method, new URL(url, location.href).href, res.status, started), res),
      (err) => {
        record(method, new URL(url, location.href).href, 0, started)
        throw err
      },
    )
  }
}

function patchXhr(): void {
  const proto = XMLHttpRequest.prototype
  const open = proto.open
  const send = proto.send
  proto.open = function (this: XMLHttpRequest & { __fl?: [string, string] }, method: string, url: string | URL) {
    this.__fl = [method, new URL(String(url), location.href).href]
    return open.apply(this, arguments as unknown as Parameters<typeof open>)
  } as typeof open
  proto.send = function (this: XMLHttpRequest & { __fl?: [string, string] }, body?: Document | XMLHttpRequestBodyInit | null) {
    const started = performance.now()
    const info = this.__fl
    if (info) this.addEventListener('loadend', () => record(info[0], info[1], this.status, started))
    return send.call(this, body)
  }
}

/** Starts recording once per page; later calls only change the slow threshold. */
export function installCapture(slowRequestMs?: number): void {
  if (slowRequestMs) slowMs = slowRequestMs
  if (installed) return
  installed = true
  patchConsole()
  patchFetch()
  patchXhr()
}

export const consoleLogs = (): ConsoleEntry[] => logs.slice()
/** The page's user signed out (Fixloop.resetUser): their console lines and requests go with no later report. */
export function forgetCaptured(): void {
  logs.length = 0
  requests.length = 0
}
export const networkSummary = (): NetworkEntry[] => requests.slice()
