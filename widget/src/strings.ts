import type { Locale } from './locale'
import en from './locales/en'

/** Every UI string, per locale (widget/src/locales/<tag>.ts); Fixloop.init({ strings }) overrides any of them. */
export interface Strings {
  launcher: string
  title: string
  describe: string
  placeholder: string
  screenshotLegend: string
  screenshot: string
  preview: string
  edit: string
  editHelp: string
  actualSize: string
  done: string
  screenshotPending: string
  screenshotFailed: string
  redact: string
  crop: string
  undo: string
  captureScreen: string
  attachFile: string
  pick: string
  pickHelp: string
  picked: string
  clearPick: string
  cancel: string
  send: string
  sending: string
  /** Shown while Send waits for the proof of work (rare: it is prepared when the form opens). */
  checking: string
  /** The honeypot's label (never seen or announced: the field is hidden from people and screen readers). */
  honeypot: string
  thanks: string
  queued: string
  queueFull: string
  cancelled: string
  failed: string
  close: string
  another: string
  sendShortcut: string
  notify: string
  /** Private mode: the token's address; {email} is replaced. */
  notifyAt: string
  /** Private mode before the token is known. */
  notifyAccount: string
  email: string
  emailNeeded: string
  yourReports: string
  back: string
  loading: string
  noReports: string
  loadFailed: string
  statusReceived: string
  statusWorking: string
  statusReview: string
  statusFixed: string
  statusClosed: string
}


/**
 * Fixloop.init({ strings }): any key of Strings for every locale, and per-locale overrides under the
 * locale's tag (`{ send: 'Go', de: { send: 'Los' } }`): the tag's own entries win over the plain ones.
 */
export type StringOverrides = Partial<Strings> & Partial<Record<Locale, Partial<Strings>>>

/** Only the known keys with string values: a table fetched from the server or given by a page never adds junk to the UI. */
function known(table: unknown): Partial<Strings> {
  const out: Partial<Strings> = {}
  if (!table || typeof table !== 'object') return out
  for (const key of Object.keys(en) as (keyof Strings)[]) {
    const value = (table as Record<string, unknown>)[key]
    if (typeof value === 'string' && Object.prototype.hasOwnProperty.call(table, key)) out[key] = value
  }
  return out
}

/** English, then the locale's table (fetched lazily, see loader.ts), then the page's overrides, then its overrides for this locale. */
export function resolveStrings(locale: Locale, table: unknown, overrides: StringOverrides | undefined): Strings {
  return { ...en, ...known(table), ...known(overrides), ...known(overrides?.[locale]) }
}
