/**
 * The widget's UI string keys, apart from the tables (widget/src/locales/) and their resolution
 * (strings.ts), which both use them: a locale table imports only this.
 */
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
  /** Kept to send later while the browser says it is offline. */
  queued: string
  /** Kept to send later while the browser is online: fixloop answered 5xx or 429, or could not be reached (or its answer was refused). */
  queuedUnsent: string
  queueFull: string
  /** Private mode: shown to a user when they open the dialog after a report of theirs waited 7 days unsent and was dropped. */
  droppedAway: string
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
