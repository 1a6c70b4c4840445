/**
 * Context recorded from the moment widget.js runs: a console ring buffer (log/info/warn/error/debug,
 * uncaught errors, unhandled rejections) and a summary of failed or slow fetch/XHR calls. Bounded as
 * the spec says: at most 500 entries, each message at most 1000 characters, credentials stripped.
 */
import type { ConsoleEntry, NetworkEntry } from './types'
import { scrub, stripQueryValues } from './scrub'

const MAX_ENTRIES = 500
const MAX_MESSAGE = 1000
const MAX_NETWORK = 50
const LEVELS = ['log', 'info', 'warn', 'error', 'debug'] as const

const logs: ConsoleEntry[] = []
const requests: NetworkEntry[] = []
let installed = false
/** Calls to these URL prefixes (fixloop itself) are not summarised. */
const ignoredPrefixes: string[] = []
let slowMs = 3000

function describe(value: unknown): string {
  if (typeof value === 'string') return value
  if (value instanceof Error) return `${value.name}: ${value.message}${value.stack ? '\n' + value.stack : ''}`
  try {
    const json = JSON.stringify(value)
    return json === undefined ? String(value) : json
  } catch {
    return String(value)
  }
}

function push(level: ConsoleEntry['level'], args: unknown[]): void {
  const text = args.map(describe).join(' ').slice(0, MAX_MESSAGE * 2)
  logs.push({ level, message: scrub(text).slice(0, MAX_MESSAGE), ts: Date.now() })
  if (logs.length > MAX_ENTRIES) logs.splice(0, logs.length - MAX_ENTRIES)
}

function record(method: string, url: string, status: number, started: number): void {
  if (ignoredPrefixes.some((p) => url.startsWith(p))) return
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
  addEventListener('error', (e) => push('error', ['Uncaught', e.error ?? e.message]))
  addEventListener('unhandledrejection', (e) => push('error', ['Unhandled rejection:', e.reason]))
}

function patchFetch(): void {
  const original = window.fetch
  if (!original) return
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

/** Starts recording once per page; later calls only add ignored prefixes or change the slow threshold. */
export function installCapture(ignore: string, slowRequestMs?: number): void {
  if (!ignoredPrefixes.includes(ignore)) ignoredPrefixes.push(ignore)
  if (slowRequestMs) slowMs = slowRequestMs
  if (installed) return
  installed = true
  patchConsole()
  patchFetch()
  patchXhr()
}

export const consoleLogs = (): ConsoleEntry[] => logs.slice()
export const networkSummary = (): NetworkEntry[] => requests.slice()
