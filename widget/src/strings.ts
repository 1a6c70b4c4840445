/** Every UI string, per locale; Fixloop.init({ strings }) overrides any of them. */
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

const en: Strings = {
  launcher: 'Report a problem',
  title: 'Report a problem',
  describe: 'Describe the problem',
  placeholder: 'What happened? What did you expect?',
  screenshotLegend: 'Screenshot',
  screenshot: 'Include a screenshot of this page',
  preview: 'Screenshot',
  edit: 'Edit screenshot',
  editHelp: 'Drag over the image to hide an area or to crop it. Keyboard: arrow keys move the box, Shift+arrow keys resize it, Enter applies.',
  actualSize: 'Actual size',
  done: 'Done',
  screenshotPending: 'Taking a screenshot…',
  screenshotFailed: 'No screenshot could be taken. You can attach an image instead.',
  redact: 'Hide an area',
  crop: 'Crop',
  undo: 'Undo',
  captureScreen: 'Capture my screen instead',
  attachFile: 'Attach an image',
  pick: 'Point at the broken element',
  pickHelp: 'Click the broken element. Keyboard: Tab to move, Enter to choose, Esc to cancel.',
  picked: 'Selected element:',
  clearPick: 'Clear selection',
  cancel: 'Cancel',
  send: 'Send',
  sending: 'Sending…',
  checking: 'Checking you’re not a bot…',
  honeypot: 'Leave this field empty',
  thanks: 'Thanks! Your report was sent.',
  queued: 'You seem to be offline. Your report is saved on this device and will be sent automatically.',
  queueFull: 'Too many reports are waiting to be sent from this device. Please try again later.',
  cancelled: 'The report was not sent.',
  failed: 'The report could not be sent:',
  close: 'Close',
  another: 'Report another problem',
  sendShortcut: 'Ctrl+Enter sends',
  notify: 'Email me when this is fixed',
  notifyAt: 'Email me at {email} when this is fixed',
  notifyAccount: 'Email me at my account\'s address when this is fixed',
  email: 'Your email',
  emailNeeded: 'Enter your email address to be told when it is fixed.',
  yourReports: 'Your reports',
  back: 'Back',
  loading: 'Loading…',
  noReports: 'You have not reported any problem yet.',
  loadFailed: 'Your reports could not be loaded.',
  statusReceived: 'Received',
  statusWorking: 'Being worked on',
  statusReview: 'Fix in review',
  statusFixed: 'Fixed',
  statusClosed: 'Closed',
}

const de: Partial<Strings> = {
  launcher: 'Problem melden',
  title: 'Problem melden',
  describe: 'Beschreiben Sie das Problem',
  send: 'Senden',
  cancel: 'Abbrechen',
  sending: 'Wird gesendet…',
  checking: 'Wir prüfen, dass Sie kein Bot sind…',
  thanks: 'Danke! Ihre Meldung wurde gesendet.',
  close: 'Schließen',
  notify: 'Per E-Mail benachrichtigen, wenn es behoben ist',
  notifyAt: 'An {email} schreiben, wenn es behoben ist',
  email: 'Ihre E-Mail-Adresse',
  emailNeeded: 'Geben Sie Ihre E-Mail-Adresse an, um benachrichtigt zu werden.',
  yourReports: 'Ihre Meldungen',
  back: 'Zurück',
  statusFixed: 'Behoben',
}

const fr: Partial<Strings> = {
  launcher: 'Signaler un problème',
  title: 'Signaler un problème',
  describe: 'Décrivez le problème',
  send: 'Envoyer',
  cancel: 'Annuler',
  sending: 'Envoi…',
  checking: 'Nous vérifions que vous n’êtes pas un robot…',
  thanks: 'Merci ! Votre signalement a été envoyé.',
  close: 'Fermer',
  notify: 'Me prévenir par e-mail une fois corrigé',
  notifyAt: 'M\'écrire à {email} une fois corrigé',
  email: 'Votre e-mail',
  emailNeeded: 'Indiquez votre adresse e-mail pour être prévenu.',
  yourReports: 'Vos signalements',
  back: 'Retour',
  statusFixed: 'Corrigé',
}

const LOCALES: Record<string, Partial<Strings>> = { de, fr }

/** The locale's table over English, then the customer's overrides. */
export function resolveStrings(locale: string | undefined, overrides: Partial<Strings> | undefined): Strings {
  const lang = (locale ?? '').toLowerCase().split('-')[0]
  return { ...en, ...(LOCALES[lang] ?? {}), ...(overrides ?? {}) }
}
