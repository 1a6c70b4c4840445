/**
 * The screenshot chain. DOM render by default (modern-screenshot, bundled in this lazily loaded file):
 * fixloop's own element left out, password inputs and [data-fixloop-mask] elements blacked out.
 * getDisplayMedia when the user asks for it and the context allows; a file input as the last resort.
 */
import { domToCanvas } from 'modern-screenshot'

/** A rendered page: the whole document at scale 1, in page (CSS pixel) coordinates. */
export interface PageShot {
  canvas: HTMLCanvasElement
  scrollX: number
  scrollY: number
  viewportW: number
  viewportH: number
}

const MASKED = 'input[type="password"], [data-fixloop-mask]'

function maskRects(): DOMRect[] {
  return [...document.querySelectorAll(MASKED)].map((el) => el.getBoundingClientRect())
}

/** Renders the page without `exclude`, with masked elements painted black. */
export async function renderPage(exclude: Element): Promise<PageShot> {
  const scrollX = window.scrollX
  const scrollY = window.scrollY
  const rects = maskRects()
  const doc = document.documentElement
  const canvas = await domToCanvas(doc, {
    scale: 1,
    // At least the viewport: a page shorter than the window still gives a full-window screenshot.
    width: Math.max(doc.scrollWidth, innerWidth),
    height: Math.max(doc.scrollHeight, innerHeight),
    workerUrl: null,
    workerNumber: 0,
    font: false,
    filter: (node) => node !== exclude,
    backgroundColor: getComputedStyle(document.body).backgroundColor === 'rgba(0, 0, 0, 0)' ? '#ffffff' : null,
  })
  const ctx = canvas.getContext('2d')!
  ctx.fillStyle = '#000'
  for (const r of rects) ctx.fillRect(r.left + scrollX, r.top + scrollY, r.width, r.height)
  return { canvas, scrollX, scrollY, viewportW: innerWidth, viewportH: innerHeight }
}

/** A region of a canvas as a new canvas (clamped to the source). */
export function crop(src: HTMLCanvasElement, x: number, y: number, w: number, h: number): HTMLCanvasElement {
  const sx = Math.max(0, Math.floor(x))
  const sy = Math.max(0, Math.floor(y))
  const sw = Math.max(1, Math.min(src.width - sx, Math.ceil(w)))
  const sh = Math.max(1, Math.min(src.height - sy, Math.ceil(h)))
  const out = document.createElement('canvas')
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
    const video = document.createElement('video')
    video.muted = true
    video.srcObject = stream
    await video.play()
    const canvas = document.createElement('canvas')
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
  const canvas = document.createElement('canvas')
  canvas.width = bitmap.width
  canvas.height = bitmap.height
  canvas.getContext('2d')!.drawImage(bitmap, 0, 0)
  return canvas
}

export function toPng(canvas: HTMLCanvasElement): Promise<Blob> {
  return new Promise((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('toBlob failed'))), 'image/png'))
}
