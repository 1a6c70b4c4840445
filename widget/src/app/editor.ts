/**
 * The screenshot editor. In the report dialog the screenshot is a thumbnail; "Edit screenshot" opens a
 * full-window editor where the image is shown fitted to the window (never enlarged) or at its actual
 * size (scrollable), so hiding an area or cropping is precise at 1280 px and at 375 px alike. The user
 * drags a rectangle, or (keyboard) moves a box with the arrow keys, resizes it with Shift+arrows and
 * applies it with Enter. Every change is drawn into the canvas that gets uploaded, so redaction
 * happens before upload.
 */
import { crop } from './screenshot'

const GAP = 24

export type Tool = 'redact' | 'crop'
export type Zoom = 'fit' | 'actual'
interface Rect {
  x: number
  y: number
  w: number
  h: number
}

export class ScreenshotEditor {
  private history: HTMLCanvasElement[] = []
  tool: Tool = 'redact'
  zoom: Zoom = 'fit'
  /** The drag or keyboard box, in image pixels. */
  private box?: Rect
  private dragFrom?: { x: number; y: number }

  /**
   * `view` is the one canvas on screen (moved between thumbnail and editor), `area` the focusable
   * region around it in the editor, `stage` its scrolling container, `marker` the box drawn over it.
   */
  constructor(
    readonly view: HTMLCanvasElement,
    private current: HTMLCanvasElement,
    private readonly area: HTMLElement,
    private readonly stage: HTMLElement,
    private readonly marker: HTMLElement,
  ) {
    this.draw()
  }

  get canvas(): HTMLCanvasElement {
    return this.current
  }

  /** CSS pixels per image pixel in the editor. */
  private get scale(): number {
    if (this.zoom === 'actual') return 1
    const { width: w, height: h } = this.current
    // The stage has no padding; GAP keeps the image off its edges (and the focus ring visible).
    return Math.min(1, Math.max(0.05, Math.min((this.stage.clientWidth - GAP) / w, (this.stage.clientHeight - GAP) / h)))
  }

  /** Sizes the canvas for the editor (fit or actual size); called on open, zoom and window resize. */
  layout(): void {
    const s = this.scale
    this.view.style.setProperty('width', `${Math.round(this.current.width * s)}px`)
    this.view.style.setProperty('height', `${Math.round(this.current.height * s)}px`)
    this.showBox()
  }

  /** Back to the thumbnail's stylesheet size. */
  unlayout(): void {
    this.view.style.removeProperty('width')
    this.view.style.removeProperty('height')
    this.box = undefined
    this.showBox()
  }

  /** Image pixel under the pointer. */
  private point(e: PointerEvent): { x: number; y: number } {
    const r = this.view.getBoundingClientRect()
    const { width: w, height: h } = this.current
    const clamp = (v: number, max: number) => Math.max(0, Math.min(max, v))
    return { x: clamp(((e.clientX - r.left) / r.width) * w, w), y: clamp(((e.clientY - r.top) / r.height) * h, h) }
  }

  pointerDown(e: PointerEvent): void {
    this.dragFrom = this.point(e)
    this.box = { ...this.dragFrom, w: 0, h: 0 }
    this.view.setPointerCapture(e.pointerId)
    this.showBox()
  }

  pointerMove(e: PointerEvent): void {
    if (!this.dragFrom) return
    const to = this.point(e)
    const from = this.dragFrom
    this.box = { x: Math.min(from.x, to.x), y: Math.min(from.y, to.y), w: Math.abs(to.x - from.x), h: Math.abs(to.y - from.y) }
    this.showBox()
  }

  pointerUp(e: PointerEvent): void {
    if (!this.dragFrom) return
    this.pointerMove(e)
    this.dragFrom = undefined
    const b = this.box!
    this.box = undefined
    if (b.w > 3 && b.h > 3) this.apply(b.x, b.y, b.w, b.h)
    else this.showBox()
  }

  /** Keyboard: the box appears when the area gets focus; arrows move, Shift+arrows resize, Enter applies. */
  key(e: KeyboardEvent): void {
    const { width: W, height: H } = this.current
    const b = (this.box ??= this.defaultBox())
    const step = e.altKey ? 1 : Math.max(4, Math.round(Math.min(W, H) / 40))
    const moves: Record<string, [number, number]> = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] }
    const move = moves[e.key]
    if (move) {
      e.preventDefault()
      if (e.shiftKey) {
        b.w = Math.max(8, Math.min(W - b.x, b.w + move[0]))
        b.h = Math.max(8, Math.min(H - b.y, b.h + move[1]))
      } else {
        b.x = Math.max(0, Math.min(W - b.w, b.x + move[0]))
        b.y = Math.max(0, Math.min(H - b.h, b.y + move[1]))
      }
      this.showBox(true)
    } else if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault()
      this.apply(b.x, b.y, b.w, b.h)
      this.box = this.defaultBox()
      this.showBox(true)
    }
  }

  focus(): void {
    this.box ??= this.defaultBox()
    this.showBox(true)
  }

  blur(): void {
    if (!this.dragFrom) this.box = undefined
    this.showBox()
  }

  private defaultBox(): Rect {
    const { width: W, height: H } = this.current
    const w = Math.max(8, Math.round(W / 3))
    const h = Math.max(8, Math.round(H / 3))
    return { x: Math.round((W - w) / 2), y: Math.round((H - h) / 2), w, h }
  }

  /** Draws the box over the canvas (CSS pixels) and, for the keyboard, keeps it in view. */
  private showBox(scrollIntoView = false): void {
    const b = this.box
    this.marker.hidden = !b
    this.marker.className = `box ${this.tool}`
    if (!b) return
    const s = this.view.getBoundingClientRect().width / this.current.width || this.scale
    const set = (prop: string, v: number) => this.marker.style.setProperty(prop, `${Math.round(v * s)}px`)
    set('left', b.x)
    set('top', b.y)
    set('width', b.w)
    set('height', b.h)
    if (scrollIntoView) this.marker.scrollIntoView({ block: 'nearest', inline: 'nearest' })
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

  undo(): boolean {
    const prev = this.history.pop()
    if (prev) {
      this.current = prev
      this.draw()
    }
    return !!prev
  }

  private draw(): void {
    this.view.width = this.current.width
    this.view.height = this.current.height
    this.view.getContext('2d')!.drawImage(this.current, 0, 0)
    if (this.area.contains(this.view)) this.layout()
  }
}
