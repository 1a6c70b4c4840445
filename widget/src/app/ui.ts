/**
 * The report dialog (native <dialog> in the open shadow root) and the send flow: a report is queued,
 * then sent; "Thanks" is announced only after the 201. Esc closes; focus returns to the trigger.
 */
import type { Core, WidgetUI } from '../types'
import { DIALOG_CSS } from './styles'
import { h } from './dom'
import { ScreenshotEditor } from './editor'
import { renderPage, viewportOf, crop, toPng, canCaptureScreen, captureScreen, canvasFromFile, type PageShot } from './screenshot'
import { pickElement, type Picked } from './picker'
import { buildPayload, newIntentKey } from './payload'
import { enqueue, type PendingBlob, type QueuedReport } from './queue'
import { Sender } from './sender'

export function createUI(core: Core): WidgetUI {
  const { root, strings: s, options } = core
  const sheet = new CSSStyleSheet()
  sheet.replaceSync(DIALOG_CSS)
  root.adoptedStyleSheets = [...root.adoptedStyleSheets, sheet]
  const sender = new Sender(core)

  const textarea = h('textarea', { id: 'fl-text', name: 'text', required: true, maxlength: '8192', placeholder: s.placeholder })
  const status = h('p', { role: 'status', 'aria-live': 'polite', class: 'status' })
  const send = h('button', { type: 'submit', class: 'primary' }, s.send)
  const cancel = h('button', { type: 'button' }, s.cancel)
  const closeX = h('button', { type: 'button', class: 'icon', 'aria-label': s.close }, '×')
  const include = h('input', { type: 'checkbox', id: 'fl-shot', checked: true })
  const preview = h('canvas', { class: 'preview', role: 'img', 'aria-label': s.preview, hidden: true })
  const shotNote = h('p', { class: 'note' })
  const redactBtn = h('button', { type: 'button', 'aria-pressed': 'true' }, s.redact)
  const cropBtn = h('button', { type: 'button', 'aria-pressed': 'false' }, s.crop)
  const undoBtn = h('button', { type: 'button' }, s.undo)
  const screenBtn = h('button', { type: 'button', hidden: !canCaptureScreen() }, s.captureScreen)
  const file = h('input', { type: 'file', id: 'fl-file', accept: 'image/*', class: 'file' })
  const pickBtn = h('button', { type: 'button' }, s.pick)
  const pickedText = h('span', { id: 'fl-picked' })
  const clearPick = h('button', { type: 'button' }, s.clearPick)
  const pickedRow = h('p', { class: 'row note', hidden: true }, pickedText, clearPick)
  const outline = h('div', { class: 'picker-outline', hidden: true })
  const banner = h('div', { class: 'picker-banner', role: 'status', hidden: true }, s.pickHelp)
  const tools = h('div', { class: 'row', hidden: true }, redactBtn, cropBtn, undoBtn)
  const shotSet = h(
    'fieldset',
    {},
    h('legend', {}, s.screenshotLegend),
    h('label', { class: 'check', for: 'fl-shot' }, include, s.screenshot),
    shotNote, preview, tools,
    h('div', { class: 'row' }, screenBtn, h('label', { for: 'fl-file', class: 'file' }, s.attachFile), file),
  )
  const form = h(
    'form',
    { novalidate: true },
    h('div', { class: 'head' }, h('h2', { id: 'fl-title' }, s.title), closeX),
    h('label', { for: 'fl-text' }, s.describe),
    textarea,
    options.screenshot === false ? null : shotSet,
    h('div', { class: 'row' }, pickBtn),
    pickedRow,
    status,
    h('div', { class: 'actions' }, cancel, send),
  )
  const dialog = h('dialog', { 'aria-labelledby': 'fl-title' }, form)
  root.append(dialog, outline, banner)

  let editor: ScreenshotEditor | undefined
  let page: PageShot | undefined
  let shooting: Promise<void> | undefined
  let picked: Picked | undefined
  let picking = false
  let busy = false

  const say = (text: string, error = false) => {
    status.textContent = text
    status.classList.toggle('error', error)
  }
  const useCanvas = (canvas: HTMLCanvasElement) => {
    editor = new ScreenshotEditor(preview, canvas, () => undefined)
    setTool(editor.tool)
    preview.hidden = false
    tools.hidden = false
    shotNote.textContent = ''
  }
  const setTool = (tool: 'redact' | 'crop') => {
    if (editor) editor.tool = tool
    redactBtn.setAttribute('aria-pressed', String(tool === 'redact'))
    cropBtn.setAttribute('aria-pressed', String(tool === 'crop'))
  }
  const takeScreenshot = () => {
    if (options.screenshot === false || !include.checked) return
    shotNote.textContent = s.screenshotPending
    shooting = renderPage(core.host).then(
      (shot) => {
        page = shot
        useCanvas(viewportOf(shot))
      },
      () => {
        shotNote.textContent = s.screenshotFailed
      },
    )
  }
  const reset = () => {
    textarea.value = ''
    editor = undefined
    page = undefined
    picked = undefined
    pickedRow.hidden = true
    preview.hidden = true
    tools.hidden = true
    file.value = ''
  }

  const restoreFocus = () => {
    const target = core.trigger?.isConnected ? core.trigger : (root.querySelector('.launcher') as HTMLElement | null)
    target?.focus()
  }
  dialog.addEventListener('close', () => {
    if (!picking) restoreFocus()
  })
  // The modal dialog makes the page inert, but Tab would still leave for the browser's UI: wrap it.
  dialog.addEventListener('keydown', (e) => {
    if (e.key !== 'Tab') return
    const items = [...dialog.querySelectorAll<HTMLElement>('button, textarea, input')].filter((el) => !(el as HTMLButtonElement).disabled && el.offsetParent !== null)
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
  const close = () => dialog.open && dialog.close()
  cancel.addEventListener('click', close)
  closeX.addEventListener('click', close)
  redactBtn.addEventListener('click', () => setTool('redact'))
  cropBtn.addEventListener('click', () => setTool('crop'))
  undoBtn.addEventListener('click', () => editor?.undo())
  include.addEventListener('change', () => {
    if (include.checked && !editor) takeScreenshot()
    preview.hidden = tools.hidden = !include.checked || !editor
  })
  file.addEventListener('change', () => {
    const f = file.files?.[0]
    if (f) canvasFromFile(f).then(useCanvas, () => say(s.screenshotFailed, true))
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
    if (busy) return
    const text = textarea.value.trim()
    if (!text) {
      say(s.describe, true)
      textarea.focus()
      return
    }
    busy = true
    send.disabled = true
    say(s.sending)
    try {
      await shooting?.catch(() => undefined)
      let payload = buildPayload(core, text, picked?.target)
      if (options.beforeSend) {
        const changed = await options.beforeSend(payload)
        if (!changed) return say(s.cancelled)
        payload = changed
      }
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
      const report: QueuedReport = { key: newIntentKey(), endpoint: core.endpoint, publicKey: options.publicKey, createdAt: Date.now(), payload, blobs }
      // Without IndexedDB (some private windows) the report is still sent, just not kept across reloads.
      const stored = await enqueue(report).catch(() => true)
      if (!stored) return say(s.queueFull, true)
      const result = await sender.send(report)
      if (result.kind === 'sent') {
        say(s.thanks)
        reset()
      } else if (result.kind === 'later') {
        say(s.queued)
        reset()
      } else {
        say(`${s.failed} ${result.message}`, true)
      }
    } catch (err) {
      say(`${s.failed} ${(err as Error).message}`, true)
    } finally {
      busy = false
      send.disabled = false
    }
  })

  return {
    open() {
      if (dialog.open) return
      if (!busy && status.textContent && !status.classList.contains('error')) say('')
      dialog.showModal()
      textarea.focus()
      if (!editor) takeScreenshot()
    },
    close,
    flush: () => sender.flush(),
  }
}
