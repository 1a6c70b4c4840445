/**
 * The screenshot chain. DOM render by default (modern-screenshot, bundled in this lazily loaded file):
 * fixloop's own element left out, password inputs, card-number, security-code, expiry and one-time-code inputs
 * (by their autocomplete token) and the elements marked private ([data-fixloop-mask], and the session
 * replay's classes fixloop-mask and fixloop-block) blacked out, in open shadow roots too.
 * getDisplayMedia when the user asks for it and the context allows; a file input as the last resort.
 */
import { createContext, destroyContext, domToCanvas } from 'modern-screenshot'
import { body, createElement, queryAll, rootElement } from '../safe-dom'

/** A rendered page: the whole document at scale 1, in page (CSS pixel) coordinates. */
export interface PageShot {
  canvas: HTMLCanvasElement
  scrollX: number
  scrollY: number
  viewportW: number
  viewportH: number
}

// The replay's markers too: a customer who marked an element private for one means it for both. Fields
// the page names card data or a one-time code (their `autocomplete` token) are blacked out like passwords:
// pixels cannot be scrubbed on the server, and the replay masks those inputs already.
const MASKED = [
  'input[type="password"]',
  '[data-fixloop-mask]',
  '.fixloop-mask',
  '.fixloop-block',
  ...['cc-number', 'cc-csc', 'cc-exp', 'cc-exp-month', 'cc-exp-year', 'one-time-code'].map((token) => `input[autocomplete~="${token}" i]`),
].join(', ')

/** The masked elements of the page and of every open shadow root in it (the renderer draws those too). */
function maskRects(): DOMRect[] {
  const found = queryAll(MASKED)
  const roots = queryAll('*').filter((el) => el.shadowRoot).map((el) => el.shadowRoot!)
  for (let i = 0; i < roots.length; i++) {
    for (const el of roots[i].querySelectorAll('*')) {
      if (el.matches(MASKED)) found.push(el)
      if (el.shadowRoot) roots.push(el.shadowRoot)
    }
  }
  return found.map((el) => el.getBoundingClientRect())
}

/**
 * The renderer reads default styles from a blank iframe. The widget creates it (instead of
 * modern-screenshot) so its srcdoc goes through the widget's Trusted Types policy, it is appended to
 * the real <body> even when the page clobbers `document.body`, and it is removed afterwards.
 */
function styleSandbox(srcdoc: string): HTMLIFrameElement {
  const frame = createElement('iframe')
  frame.width = frame.height = '0'
  frame.setAttribute('aria-hidden', 'true')
  frame.tabIndex = -1
  // Never in a session replay (the renderer clones the page into it).
  frame.className = 'fixloop-block'
  frame.style.setProperty('visibility', 'hidden')
  frame.style.setProperty('position', 'fixed')
  body()!.appendChild(frame)
  frame.srcdoc = srcdoc
  return frame
}

/** Renders the page without `exclude`, with masked elements painted black. */
export async function renderPage(exclude: Element, srcdoc: string): Promise<PageShot> {
  const scrollX = window.scrollX
  const scrollY = window.scrollY
  const rects = maskRects()
  const doc = rootElement()
  const sandbox = styleSandbox(srcdoc)
  let context: Awaited<ReturnType<typeof createContext>> | undefined
  try {
    context = await createContext(doc, {
      scale: 1,
      // At least the viewport: a page shorter than the window still gives a full-window screenshot.
      width: Math.max(doc.scrollWidth, innerWidth),
      height: Math.max(doc.scrollHeight, innerHeight),
      workerUrl: null,
      workerNumber: 0,
      font: false,
      filter: (node) => node !== exclude && node !== sandbox,
      backgroundColor: getComputedStyle(body()!).backgroundColor === 'rgba(0, 0, 0, 0)' ? '#ffffff' : null,
    })
    ;(context as { sandbox?: HTMLIFrameElement }).sandbox = sandbox
    const canvas = await domToCanvas(context)
    const ctx = canvas.getContext('2d')!
    ctx.fillStyle = '#000'
    for (const r of rects) ctx.fillRect(r.left + scrollX, r.top + scrollY, r.width, r.height)
    return { canvas, scrollX, scrollY, viewportW: innerWidth, viewportH: innerHeight }
  } finally {
    if (context) destroyContext(context)
    sandbox.remove()
  }
}

/** A region of a canvas as a new canvas (clamped to the source). */
export function crop(src: HTMLCanvasElement, x: number, y: number, w: number, h: number): HTMLCanvasElement {
  const sx = Math.max(0, Math.floor(x))
  const sy = Math.max(0, Math.floor(y))
  const sw = Math.max(1, Math.min(src.width - sx, Math.ceil(w)))
  const sh = Math.max(1, Math.min(src.height - sy, Math.ceil(h)))
  const out = createElement('canvas')
  out.width = sw
  out.height = sh
  out.getContext('2d')!.drawImage(src, sx, sy, sw, sh, 0, 0, sw, sh)
  return out
}

/** The visible part of a page render. */
export const viewportOf = (shot: PageShot): HTMLCanvasElement => crop(shot.canvas, shot.scrollX, shot.scrollY, shot.viewportW, shot.viewportH)

/** Whether getDisplayMedia can work here (secure context, top-level page, API present). */
export function canCaptureScreen(): boolean {
  return !!navigator.mediaDevices?.getDisplayMedia && window.isSecureContext && window.top === window
}

/** One frame of a screen/tab the user shares. */
export async function captureScreen(): Promise<HTMLCanvasElement> {
  const stream = await navigator.mediaDevices.getDisplayMedia({ video: true, audio: false })
  try {
    const video = createElement('video')
    video.muted = true
    video.srcObject = stream
    await video.play()
    const canvas = createElement('canvas')
    canvas.width = video.videoWidth
    canvas.height = video.videoHeight
    canvas.getContext('2d')!.drawImage(video, 0, 0)
    return canvas
  } finally {
    stream.getTracks().forEach((t) => t.stop())
  }
}

/** An image file drawn onto a canvas (so redaction and crop work on it too). */
export async function canvasFromFile(file: Blob): Promise<HTMLCanvasElement> {
  const bitmap = await createImageBitmap(file)
  const canvas = createElement('canvas')
  canvas.width = bitmap.width
  canvas.height = bitmap.height
  canvas.getContext('2d')!.drawImage(bitmap, 0, 0)
  return canvas
}

export function toPng(canvas: HTMLCanvasElement): Promise<Blob> {
  return new Promise((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('toBlob failed'))), 'image/png'))
}
