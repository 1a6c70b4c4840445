/**
 * The report dialog (native <dialog> in the open shadow root), the full-window screenshot editor and
 * the send flow: a report is queued, then sent; "Thanks" is announced only after the 201, and then the
 * dialog switches to a confirmation state (the form is gone, "Close" has focus). Esc closes; focus
 * returns to the trigger. What is sent always matches the "Include a screenshot" checkbox.
 */
import type { Core, WidgetUI } from '../types'
import { DIALOG_CSS } from './styles'
import { h } from './dom'
import { ScreenshotEditor, type Tool } from './editor'
import { renderPage, viewportOf, crop, toPng, canCaptureScreen, captureScreen, canvasFromFile, type PageShot } from './screenshot'
import { pickElement, type Picked } from './picker'
import { buildPayload, newIntentKey } from './payload'
import { enqueue, type PendingBlob, type QueuedReport } from './queue'
import { Sender } from './sender'
import { fetchMailOffered } from './proof'
import { listMine, tokenEmail, tokenSub, type MyReport } from './transport'
import { hasDroppedNotes, takeDroppedNotes } from './dropped-notes'
import { createSvg, on } from '../safe-dom'
import { clip } from '../clip'
import { stringify } from '../json'

/** A check mark in a circle (decorative; the status text says what happened). */
function checkIcon(): SVGSVGElement {
  const svg = createSvg('svg')
  svg.setAttribute('viewBox', '0 0 48 48')
  svg.setAttribute('aria-hidden', 'true')
  svg.setAttribute('class', 'check-icon')
  const circle = createSvg('circle')
  circle.setAttribute('cx', '24')
  circle.setAttribute('cy', '24')
  circle.setAttribute('r', '22')
  const path = createSvg('path')
  path.setAttribute('d', 'M14 25l7 7 13-15')
  svg.append(circle, path)
  return svg
}

/** Keeps Tab and Shift+Tab inside a modal dialog (the browser would otherwise move to its own UI). */
function trapTab(dialog: HTMLDialogElement, root: ShadowRoot): void {
  dialog.addEventListener('keydown', (e) => {
    if (e.key !== 'Tab') return
    const items = [...dialog.querySelectorAll<HTMLElement>('button, textarea, input, [tabindex="0"]')].filter(
      (el) => !(el as HTMLButtonElement).disabled && el.tabIndex >= 0 && el.getClientRects().length > 0,
    )
    const first = items[0]
    const last = items[items.length - 1]
    if (e.shiftKey && root.activeElement === first) {
      e.preventDefault()
      last.focus()
    } else if (!e.shiftKey && root.activeElement === last) {
      e.preventDefault()
      first.focus()
    }
  })
}

export function createUI(core: Core): WidgetUI {
  const { root, strings: s, options } = core
  /** Every top-level element carries the locale's lang and direction (ar and he are right to left). */
  const speech = { lang: core.locale, dir: core.dir }
  const sheet = new CSSStyleSheet()
  sheet.replaceSync(DIALOG_CSS)
  root.adoptedStyleSheets = [...root.adoptedStyleSheets, sheet]
  const sender = new Sender(core)
  const mac = /Mac|iP(hone|ad)/.test(navigator.platform)

  // The report form.
  const textarea = h('textarea', { id: 'fl-text', name: 'text', required: true, maxlength: '8192', placeholder: s.placeholder })
  textarea.addEventListener('input', () => textarea.removeAttribute('aria-invalid'))
  const status = h('p', { role: 'status', 'aria-live': 'polite', class: 'status' })
  const send = h('button', { type: 'submit', class: 'primary', 'aria-keyshortcuts': 'Control+Enter Meta+Enter' }, s.send)
  const cancel = h('button', { type: 'button' }, s.cancel)
  const closeX = h('button', { type: 'button', class: 'icon', 'aria-label': s.close }, '×')
  const include = h('input', { type: 'checkbox', id: 'fl-shot', checked: true })
  const view = h('canvas', { 'aria-hidden': 'true' })
  const thumb = h('button', { type: 'button', class: 'thumb', hidden: true }, view, h('span', {}, s.edit))
  const shotNote = h('p', { class: 'note' })
  const screenBtn = h('button', { type: 'button', hidden: !canCaptureScreen() }, s.captureScreen)
  const file = h('input', { type: 'file', id: 'fl-file', accept: 'image/*', class: 'visually-hidden' })
  const pickBtn = h('button', { type: 'button' }, s.pick)
  const pickedText = h('span', { id: 'fl-picked' })
  const clearPick = h('button', { type: 'button' }, s.clearPick)
  const pickedRow = h('p', { class: 'row note', hidden: true }, pickedText, clearPick)
  const outline = h('div', { class: 'picker-outline', hidden: true })
  const banner = h('div', { ...speech, class: 'picker-banner', role: 'status', hidden: true }, s.pickHelp)
  const shotSet = h(
    'fieldset',
    {},
    h('legend', {}, s.screenshotLegend),
    h('label', { class: 'check', for: 'fl-shot' }, include, s.screenshot),
    shotNote,
    thumb,
    h('div', { class: 'row' }, screenBtn, file, h('label', { for: 'fl-file', class: 'button' }, s.attachFile)),
  )
  // "Email me when this is fixed": public mode asks for the address (prefilled from `identity`),
  // private mode uses the user token's ctx.email and says which address that is.
  const privateMode = !!options.getUserToken
  const notify = h('input', { type: 'checkbox', id: 'fl-notify' })
  const notifyText = h('span', {}, s.notify)
  const email = h('input', { type: 'email', id: 'fl-email', name: 'email', autocomplete: 'email', maxlength: '254', value: options.identity?.email ?? '' })
  // The field's own message (under it, tied by aria-describedby): on a small screen the status line may sit below the fold.
  const emailError = h('p', { id: 'fl-email-error', class: 'note field-error', role: 'status', 'aria-live': 'polite', hidden: true }, s.emailNeeded)
  email.setAttribute('aria-describedby', 'fl-email-error')
  const emailRow = h('div', { class: 'email', hidden: true }, h('label', { for: 'fl-email' }, s.email), email, emailError)
  const notifyRow = h('div', { class: 'notify', hidden: true }, h('label', { class: 'check', for: 'fl-notify' }, notify, notifyText), emailRow)
  // The honeypot: off-screen, hidden from assistive technology and out of the tab order, so people never
  // meet it; a bot that fills every input does. Its value (and the time from open to Send) go in clientSignals.
  const honeypot = h('input', { type: 'text', id: 'fl-website', name: 'website', tabindex: '-1', autocomplete: 'off' })
  const trap = h('div', { class: 'trap', 'aria-hidden': 'true' }, h('label', { for: 'fl-website' }, s.honeypot), honeypot)
  const fields = h(
    'div',
    { class: 'fields' },
    h('label', { for: 'fl-text' }, s.describe),
    textarea,
    trap,
    options.screenshot === false ? null : shotSet,
    h('div', { class: 'row' }, pickBtn),
    pickedRow,
    notifyRow,
  )
  // Private mode: "Your reports", the signed-in user's reports with their status (GET /v1/me/feedback).
  const mineBtn = h('button', { type: 'button', class: 'link', hidden: !privateMode }, s.yourReports)
  const mineTitle = h('h3', { id: 'fl-mine-title', tabindex: '-1' }, s.yourReports)
  const mineList = h('ul', { class: 'mine', 'aria-labelledby': 'fl-mine-title' })
  const mineBack = h('button', { type: 'button' }, s.back)
  const mineView = h('section', { class: 'mine-view', hidden: true, 'aria-labelledby': 'fl-mine-title' }, mineTitle, mineList, h('div', { class: 'actions' }, mineBack))
  const actions = h('div', { class: 'actions' }, h('span', { class: 'note hint' }, mac ? s.sendShortcut.replace(/Ctrl|Strg/, '⌘') : s.sendShortcut), cancel, send)
  const another = h('button', { type: 'button' }, s.another)
  const doneClose = h('button', { type: 'button', class: 'primary' }, s.close)
  const doneIcon = h('div', { class: 'done-icon', hidden: true }, checkIcon())
  const doneActions = h('div', { class: 'actions', hidden: true }, another, doneClose)
  const form = h(
    'form',
    { novalidate: true },
    h('div', { class: 'head' }, h('h2', { id: 'fl-title' }, s.title), h('div', { class: 'row' }, mineBtn, closeX)),
    fields,
    mineView,
    doneIcon,
    status,
    actions,
    doneActions,
  )
  const dialog = h('dialog', { ...speech, 'aria-labelledby': 'fl-title' }, form)

  // The full-window screenshot editor.
  const redactBtn = h('button', { type: 'button', 'aria-pressed': 'true' }, s.redact)
  const cropBtn = h('button', { type: 'button', 'aria-pressed': 'false' }, s.crop)
  const undoBtn = h('button', { type: 'button' }, s.undo)
  const zoomBtn = h('button', { type: 'button', 'aria-pressed': 'false' }, s.actualSize)
  const editorDone = h('button', { type: 'button', class: 'primary' }, s.done)
  const marker = h('div', { class: 'box', hidden: true })
  const area = h('div', { class: 'area', tabindex: '0', role: 'application', 'aria-label': s.preview, 'aria-describedby': 'fl-edit-help' }, marker)
  const stage = h('div', { class: 'stage' }, area)
  const editorDialog = h(
    'dialog',
    { ...speech, class: 'editor', 'aria-labelledby': 'fl-edit-title' },
    h(
      'div',
      { class: 'toolbar' },
      h('h2', { id: 'fl-edit-title' }, s.edit),
      h('div', { class: 'row', role: 'group', 'aria-label': s.edit }, redactBtn, cropBtn, undoBtn, zoomBtn),
      editorDone,
    ),
    h('p', { id: 'fl-edit-help', class: 'note help' }, s.editHelp),
    stage,
  )
  root.append(dialog, editorDialog, outline, banner)

  let editor: ScreenshotEditor | undefined
  let page: PageShot | undefined
  let shooting: Promise<void> | undefined
  /** Bumped on reset: a screenshot that finishes after it belongs to the previous report. */
  let generation = 0
  let picked: Picked | undefined
  let picking = false
  let busy = false
  /** When the current form was opened (clientSignals.formMs). */
  let openedAt = Date.now()
  sender.onProofWait = (waiting) => {
    if (busy) say(waiting ? s.checking : s.sending)
  }

  const say = (text: string, tone: '' | 'error' | 'ok' = '') => {
    status.textContent = text
    status.className = `status ${tone}`
  }
  const showShot = () => {
    thumb.hidden = !include.checked || !editor
  }
  const useCanvas = (canvas: HTMLCanvasElement) => {
    editor = new ScreenshotEditor(view, canvas, area, stage, marker)
    setTool(editor.tool)
    include.checked = true
    shotNote.textContent = ''
    showShot()
  }
  const setTool = (tool: Tool) => {
    if (editor) editor.tool = tool
    redactBtn.setAttribute('aria-pressed', String(tool === 'redact'))
    cropBtn.setAttribute('aria-pressed', String(tool === 'crop'))
  }
  /** Takes the DOM screenshot once per report; a failure unticks the checkbox so it says what is sent. */
  const takeScreenshot = (): Promise<void> | undefined => {
    if (options.screenshot === false || !include.checked || editor) return shooting
    if (shooting) return shooting
    const mine = generation
    shotNote.textContent = s.screenshotPending
    shooting = renderPage(core.host, core.sandboxHTML()).then(
      (shot) => {
        if (mine !== generation) return
        page = shot
        useCanvas(viewportOf(shot))
      },
      () => {
        if (mine !== generation) return
        include.checked = false
        shotNote.textContent = s.screenshotFailed
      },
    ).finally(() => {
      if (mine === generation) shooting = undefined
    })
    return shooting
  }
  const reset = () => {
    generation++
    textarea.value = ''
    editor = undefined
    page = undefined
    shooting = undefined
    picked = undefined
    pickedRow.hidden = true
    include.checked = true
    shotNote.textContent = ''
    showShot()
    file.value = ''
    honeypot.value = ''
    openedAt = Date.now()
    notify.checked = false
    emailRow.hidden = true
    email.removeAttribute('aria-invalid')
    emailError.hidden = true
    textarea.removeAttribute('aria-invalid')
  }
  /** The form for a new report (after a confirmation, or on open). */
  const showForm = () => {
    if (doneActions.hidden) return
    reset()
    say('')
    doneIcon.hidden = doneActions.hidden = true
    fields.hidden = actions.hidden = false
    offerNotify()
  }
  const statusLabel = (status: string) =>
    status === 'resolved' ? s.statusFixed
    : status === 'archived' ? s.statusClosed
    : status === 'pr_opened' ? s.statusReview
    : ['received', 'sanitizing', 'sanitized', 'awaiting_manual'].includes(status) ? s.statusReceived
    : s.statusWorking
  const renderMine = (items: MyReport[]) => {
    mineList.replaceChildren(
      ...items.map((r) => {
        const text = r.text.length > 140 ? `${clip(r.text, 140)}…` : r.text
        const when = new Date(r.createdAt)
        return h(
          'li',
          {},
          h('p', { class: 'mine-text' }, text),
          h('p', { class: 'row note' }, h('span', { class: `badge ${r.status === 'resolved' ? 'fixed' : ''}` }, statusLabel(r.status)), h('time', { datetime: r.createdAt }, when.toLocaleDateString())),
        )
      }),
    )
    if (items.length === 0) mineList.replaceChildren(h('li', { class: 'note' }, s.noReports))
  }
  /** The form gives way to the list of the user's reports; Back returns to the form as it was. */
  const showMine = async () => {
    fields.hidden = actions.hidden = true
    doneIcon.hidden = doneActions.hidden = true
    mineView.hidden = false
    mineList.replaceChildren()
    say(s.loading)
    mineTitle.focus()
    try {
      renderMine(await listMine(core.fetch, core.endpoint, options.publicKey, sender.tokens))
      say('')
    } catch {
      say(s.loadFailed, 'error')
    }
  }
  const hideMine = () => {
    mineView.hidden = true
    fields.hidden = actions.hidden = false
    say('')
    mineBtn.focus()
  }
  mineBtn.addEventListener('click', () => void (mineView.hidden ? showMine() : hideMine()))
  mineBack.addEventListener('click', hideMine)
  notify.addEventListener('change', () => {
    emailRow.hidden = privateMode || !notify.checked
    if (!emailRow.hidden && !email.value) email.focus()
  })
  /**
   * Private mode: the label names the token's address once a token is at hand (never fetched just for
   * this: the page's getUserToken is called when a report is sent, as before); a token without ctx.email
   * hides the box. Before any token, the label says the account's address is used.
   */
  // Whether the App can send the mail at all (it has SMTP settings: the challenge answer's notifyEmail).
  // Public mode: unknown (the answer could not be had) hides the box. Private mode: asked with the token
  // once one is at hand (an App may refuse public requests); before that, or unknown, the box is offered
  // as it always was (a report's opt-in without SMTP is settled `no_smtp` on the server, never an error).
  let canMail: boolean | null = null
  let askedWithToken = false
  const learnMail = (answer: Promise<boolean | null>) =>
    void answer.then((known) => {
      if (known === null && canMail !== null) return
      canMail = known
      offerNotify()
    })
  const offerNotify = () => {
    if (!privateMode) {
      notifyRow.hidden = canMail !== true
      if (notifyRow.hidden) notify.checked = false
      return
    }
    const token = sender.tokens.peek()
    if (token && !askedWithToken) {
      askedWithToken = true
      learnMail(fetchMailOffered(core.fetch, core.endpoint, options.publicKey, token))
    }
    const address = tokenEmail(token)
    notifyRow.hidden = (!!token && !address) || canMail === false
    // A function replacer: "$&" in an address is literal. Isolated (FSI…PDI) so an address keeps its
    // left-to-right order inside right-to-left text.
    notifyText.textContent = address ? s.notifyAt.replace('{email}', () => (core.dir === 'rtl' ? `\u2068${address}\u2069` : address)) : s.notifyAccount
  }
  /** The report is safe (sent, or queued on this device): the form gives way to a confirmation. */
  const showDone = (text: string) => {
    reset()
    say(text, 'ok')
    fields.hidden = actions.hidden = true
    doneIcon.hidden = doneActions.hidden = false
    doneClose.focus()
  }

  const restoreFocus = () => {
    const target = core.trigger?.isConnected ? core.trigger : (root.querySelector('.launcher') as HTMLElement | null)
    target?.focus()
  }
  dialog.addEventListener('close', () => {
    if (picking) return
    restoreFocus()
    // No report from this opening: the replay window follows the clock again.
    core.replay()?.release()
  })
  trapTab(dialog, root)
  trapTab(editorDialog, root)
  dialog.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && !fields.hidden) {
      e.preventDefault()
      send.click()
    }
  })
  const close = () => {
    if (editorDialog.open) editorDialog.close()
    if (dialog.open) dialog.close()
  }
  cancel.addEventListener('click', close)
  closeX.addEventListener('click', close)
  doneClose.addEventListener('click', close)
  another.addEventListener('click', () => {
    sender.proofs?.prefetch()
    showForm()
    textarea.focus()
    void takeScreenshot()
  })

  // Editor: the thumbnail's canvas moves into the editor and back.
  const openEditor = () => {
    if (!editor) return
    area.prepend(view)
    editorDialog.showModal()
    editor.layout()
    editorDone.focus()
  }
  editorDialog.addEventListener('close', () => {
    editor?.unlayout()
    thumb.prepend(view)
    if (dialog.open) thumb.focus()
  })
  thumb.addEventListener('click', openEditor)
  editorDone.addEventListener('click', () => editorDialog.close())
  redactBtn.addEventListener('click', () => setTool('redact'))
  cropBtn.addEventListener('click', () => setTool('crop'))
  undoBtn.addEventListener('click', () => editor?.undo())
  zoomBtn.addEventListener('click', () => {
    if (!editor) return
    editor.zoom = editor.zoom === 'fit' ? 'actual' : 'fit'
    zoomBtn.setAttribute('aria-pressed', String(editor.zoom === 'actual'))
    editor.layout()
  })
  view.addEventListener('pointerdown', (e) => editorDialog.open && editor?.pointerDown(e))
  view.addEventListener('pointermove', (e) => editor?.pointerMove(e))
  view.addEventListener('pointerup', (e) => editor?.pointerUp(e))
  area.addEventListener('keydown', (e) => {
    if ((e.ctrlKey || e.metaKey) && e.key === 'z') {
      e.preventDefault()
      editor?.undo()
    } else editor?.key(e)
  })
  area.addEventListener('focus', () => editor?.focus())
  area.addEventListener('blur', () => editor?.blur())
  on(window, 'resize', () => editorDialog.open && editor?.layout())

  include.addEventListener('change', () => {
    if (include.checked) void takeScreenshot()
    else shotNote.textContent = ''
    showShot()
  })
  file.addEventListener('change', () => {
    const f = file.files?.[0]
    if (f) canvasFromFile(f).then(useCanvas, () => say(s.screenshotFailed, 'error'))
  })
  screenBtn.addEventListener('click', () => {
    picking = true
    dialog.close()
    // Refused or unavailable (no display, policy): the DOM render stays; the note points to "Attach an image".
    captureScreen()
      .then(useCanvas, () => {
        shotNote.textContent = s.screenshotFailed
      })
      .finally(() => {
        picking = false
        dialog.showModal()
        screenBtn.focus()
      })
  })
  pickBtn.addEventListener('click', async () => {
    picking = true
    dialog.close()
    const result = await pickElement(core.host, outline, banner)
    dialog.showModal()
    picking = false
    if (result) {
      picked = result
      pickedText.textContent = `${s.picked} ${result.target.name}`
      pickedRow.hidden = false
    }
    pickBtn.focus()
  })
  clearPick.addEventListener('click', () => {
    picked = undefined
    pickedRow.hidden = true
    pickBtn.focus()
  })

  form.addEventListener('submit', async (e) => {
    e.preventDefault()
    if (busy || fields.hidden) return
    const text = textarea.value.trim()
    if (!text) {
      // The field is required and now marked invalid (a screen reader says so with its name), not only a
      // red line under the form; the mark goes as soon as something is typed.
      textarea.setAttribute('aria-invalid', 'true')
      say(s.describe, 'error')
      textarea.focus()
      return
    }
    const notifyMe = notify.checked && !notifyRow.hidden
    const address = email.value.trim()
    if (notifyMe && !privateMode && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(address)) {
      email.setAttribute('aria-invalid', 'true')
      emailError.hidden = false
      say('')
      email.focus()
      // Above the sticky buttons (scroll-margin in styles.ts), so the message is seen, not only announced.
      emailError.scrollIntoView({ block: 'nearest' })
      return
    }
    email.removeAttribute('aria-invalid')
    emailError.hidden = true
    busy = true
    send.disabled = true
    say(s.sending)
    try {
      // The checkbox is ticked: the screenshot is part of this report, even if it is still being taken.
      if (include.checked) await takeScreenshot()
      let payload = buildPayload(core, text, picked?.target)
      const recorder = core.replay()
      if (recorder) payload.replay = true
      // Private mode: the token is needed now anyway (the upload and the submission send it); one without
      // an address cannot be told, so the opt-in is dropped rather than the report refused.
      const canNotify = notifyMe && (!privateMode || !!tokenEmail(await sender.tokens.current()))
      if (canNotify) {
        payload.notifyEmail = true
        if (!privateMode) payload.identity = { ...payload.identity, email: address }
      }
      if (options.beforeSend) {
        const changed = await options.beforeSend(payload)
        if (!changed) return say(s.cancelled)
        payload = changed
        // What JSON cannot carry (a cycle, a BigInt) would be queued, retried for ever as if fixloop were
        // down ("saved on this device") and hold up every report behind it: refused now, with the reason.
        stringify(payload)
      }
      // beforeSend drops the replay by setting `replay` to false or leaving it out; never sent as a field.
      const withReplay = !!recorder && payload.replay === true
      delete payload.replay
      // Public mode, on an App with the abuse defence on (proof of work): a user token already says who is
      // reporting, and an App left at the defaults gets exactly the reports it got before.
      const bait = honeypot.value
      if (!privateMode && (await sender.proofs?.defended())) payload.clientSignals = { formMs: Math.max(0, Math.round(Date.now() - openedAt)), ...(bait ? { honeypot: clip(bait, 200) } : {}) }
      const blobs: PendingBlob[] = []
      if (include.checked && editor) {
        const c = editor.canvas
        blobs.push({ slot: 'attachment', kind: 'screenshot', blob: await toPng(c), contentType: 'image/png', width: c.width, height: c.height })
      }
      if (include.checked && picked && page && payload.componentTarget?.bbox) {
        const b = payload.componentTarget.bbox
        const c = crop(page.canvas, b.x, b.y, b.w, b.h)
        blobs.push({ slot: 'component', kind: 'screenshot', blob: await toPng(c), contentType: 'image/png', width: c.width, height: c.height })
      }
      if (withReplay) {
        const replay = await recorder!.export({ consoleLogs: core.consoleLogs(), network: core.network() }).catch(() => undefined)
        recorder!.release()
        if (replay) blobs.push({ slot: 'attachment', kind: 'replay', blob: replay, contentType: 'application/gzip', filename: 'replay.json.gz' })
      }
      const report: QueuedReport = { key: newIntentKey(), endpoint: core.endpoint, publicKey: options.publicKey, createdAt: Date.now(), payload, blobs }
      // Without IndexedDB (some private windows) the report is still sent, just not kept across reloads.
      const stored = await enqueue(report).catch(() => true)
      if (!stored) return say(s.queueFull, 'error')
      const result = await sender.send(report, true)
      if (result.kind === 'sent') showDone(s.thanks)
      // "Offline" only when the browser says so: a 5xx, a 429 or an answer the browser refused (an origin not
      // allowed) happen online, and telling that reporter to check their connection would be untrue.
      else if (result.kind === 'later' || result.kind === 'held') showDone(navigator.onLine === false ? s.queued : s.queuedUnsent)
      else say(`${s.failed} ${result.message}`, 'error')
    } catch (err) {
      say(`${s.failed} ${(err as Error).message}`, 'error')
    } finally {
      busy = false
      send.disabled = false
    }
  })

  /**
   * Private mode: the signed-in user is told, once, of their reports another user's page dropped after
   * they had waited 7 days unsent (dropped-notes.ts). A token is asked for only when such notes exist.
   */
  const tellDropped = async () => {
    if (!privateMode || !hasDroppedNotes(core.endpoint, options.publicKey)) return
    const sub = tokenSub(await sender.tokens.current().catch(() => undefined))
    if (!sub || busy) return
    const written = takeDroppedNotes(core.endpoint, options.publicKey, sub)
    if (written.length > 0) say(`${s.droppedAway} (${written.map((at) => new Date(at).toLocaleDateString(core.locale)).join(', ')})`, 'error')
  }

  return {
    open() {
      if (dialog.open) return
      if (!mineView.hidden) hideMine()
      if (!textarea.value) openedAt = Date.now()
      // Public mode with proof of work on: the solution is prepared while the user types. Its answer
      // also says whether the App can mail the reporter.
      sender.proofs?.prefetch()
      if (sender.proofs) learnMail(sender.proofs.mailOffered())
      showForm()
      if (!busy && !status.classList.contains('error')) say('')
      offerNotify()
      dialog.showModal()
      textarea.focus()
      void takeScreenshot()
      void tellDropped()
    },
    close,
    flush: () => sender.flush(),
    resetUser() {
      // The page's user signed out: nothing of theirs stays for the next one (their token, the address it
      // named, their list, what they typed). Their queued reports wait for them (QueuedReport.owner).
      sender.forgetUser()
      askedWithToken = false
      close()
      mineView.hidden = true
      mineList.replaceChildren()
      reset()
      email.value = ''
      doneIcon.hidden = doneActions.hidden = true
      fields.hidden = actions.hidden = false
      say('')
      offerNotify()
    },
  }
}
