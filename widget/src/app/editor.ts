/**
 * The screenshot editor: the user drags a rectangle to black out an area (default) or to crop.
 * Every change is drawn into the canvas that gets uploaded, so redaction happens before upload.
 */
import { crop } from './screenshot'

export type Tool = 'redact' | 'crop'

export class ScreenshotEditor {
  private history: HTMLCanvasElement[] = []
  tool: Tool = 'redact'
  private start?: { x: number; y: number }

  constructor(readonly view: HTMLCanvasElement, private current: HTMLCanvasElement, private readonly onChange: () => void) {
    view.addEventListener('pointerdown', (e) => {
      this.start = this.point(e)
      view.setPointerCapture(e.pointerId)
    })
    view.addEventListener('pointerup', (e) => {
      if (!this.start) return
      const end = this.point(e)
      const x = Math.min(this.start.x, end.x)
      const y = Math.min(this.start.y, end.y)
      const w = Math.abs(end.x - this.start.x)
      const h = Math.abs(end.y - this.start.y)
      this.start = undefined
      if (w > 3 && h > 3) this.apply(x, y, w, h)
    })
    this.draw()
  }

  get canvas(): HTMLCanvasElement {
    return this.current
  }

  /** Image pixel under the pointer; the preview is letterboxed (object-fit: contain) inside its box. */
  private point(e: PointerEvent): { x: number; y: number } {
    const r = this.view.getBoundingClientRect()
    const { width: w, height: h } = this.current
    const scale = Math.min(r.width / w, r.height / h)
    const left = r.left + (r.width - w * scale) / 2
    const top = r.top + (r.height - h * scale) / 2
    const clamp = (v: number, max: number) => Math.max(0, Math.min(max, v))
    return { x: clamp((e.clientX - left) / scale, w), y: clamp((e.clientY - top) / scale, h) }
  }

  /** Blacks out or crops to a rectangle in image pixels. */
  apply(x: number, y: number, w: number, h: number): void {
    this.history.push(this.current)
    if (this.tool === 'crop') {
      this.current = crop(this.current, x, y, w, h)
    } else {
      const next = crop(this.current, 0, 0, this.current.width, this.current.height)
      const ctx = next.getContext('2d')!
      ctx.fillStyle = '#000'
      ctx.fillRect(x, y, w, h)
      this.current = next
    }
    this.draw()
  }

  undo(): void {
    const prev = this.history.pop()
    if (prev) {
      this.current = prev
      this.draw()
    }
  }

  private draw(): void {
    this.view.width = this.current.width
    this.view.height = this.current.height
    this.view.getContext('2d')!.drawImage(this.current, 0, 0)
    this.onChange()
  }
}
