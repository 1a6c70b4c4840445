/**
 * The site icon, drawn in code (a blue rounded square with a white loop arrow: report → fix → back) and
 * encoded as a Windows ICO with 16 and 32 px images, so the binary carries no image file and every
 * browser, old or new, finds /favicon.ico. Drawn when first asked for, then served from memory: drawing
 * it is a millisecond once the code is warm, but ~30 ms of cold code at startup, which every server start
 * paid (and most never serve it).
 */

import { createHash } from 'node:crypto'

type Shape = (x: number, y: number) => boolean

const BLUE = [0x1f, 0x5f, 0xbf] as const
const WHITE = [0xff, 0xff, 0xff] as const

// Drawn on a 32-unit canvas; a pixel's colour is the share of its 4×4 samples inside each shape.
const square: Shape = (x, y) => {
  const r = 7
  const cx = Math.max(r, Math.min(32 - r, x))
  const cy = Math.max(r, Math.min(32 - r, y))
  return Math.hypot(x - cx, y - cy) <= r
}
const ARC = { cx: 16, cy: 16.5, r: 8, half: 1.7, from: -0.45, to: 4.35 } // radians, clockwise from +x (y points down)
const arcEnd = (a: number) => [ARC.cx + ARC.r * Math.cos(a), ARC.cy + ARC.r * Math.sin(a)] as const
const loop: Shape = (x, y) => {
  let a = Math.atan2(y - ARC.cy, x - ARC.cx)
  if (a < ARC.from) a += 2 * Math.PI
  if (a <= ARC.to && Math.abs(Math.hypot(x - ARC.cx, y - ARC.cy) - ARC.r) <= ARC.half) return true
  const [ex, ey] = arcEnd(ARC.from)
  return Math.hypot(x - ex, y - ey) <= ARC.half // round cap at the tail
}
// A filled arrowhead at the head end, pointing along the direction of travel (clockwise).
const [headX, headY] = arcEnd(ARC.to)
const tangent = [-Math.sin(ARC.to), Math.cos(ARC.to)] as const
const normal = [Math.cos(ARC.to), Math.sin(ARC.to)] as const
const TRIANGLE = [
  [headX + tangent[0] * 5, headY + tangent[1] * 5],
  [headX + normal[0] * 4.2 - tangent[0] * 0.6, headY + normal[1] * 4.2 - tangent[1] * 0.6],
  [headX - normal[0] * 4.2 - tangent[0] * 0.6, headY - normal[1] * 4.2 - tangent[1] * 0.6],
] as const
const arrow: Shape = (x, y) => {
  const side = (i: number) => {
    const [ax, ay] = TRIANGLE[i]
    const [bx, by] = TRIANGLE[(i + 1) % 3]
    return (bx - ax) * (y - ay) - (by - ay) * (x - ax)
  }
  const s = [side(0), side(1), side(2)]
  return s.every((v) => v >= 0) || s.every((v) => v <= 0)
}

/** BGRA rows bottom-up, as an ICO's BMP image wants them. */
function draw(size: number): Uint8Array {
  const out = new Uint8Array(size * size * 4)
  const scale = 32 / size
  const n = 4
  for (let py = 0; py < size; py++) {
    for (let px = 0; px < size; px++) {
      let inside = 0
      let white = 0
      for (let sy = 0; sy < n; sy++) {
        for (let sx = 0; sx < n; sx++) {
          const x = (px + (sx + 0.5) / n) * scale
          const y = (py + (sy + 0.5) / n) * scale
          if (!square(x, y)) continue
          inside++
          if (loop(x, y) || arrow(x, y)) white++
        }
      }
      const w = inside ? white / inside : 0
      const o = ((size - 1 - py) * size + px) * 4
      for (let c = 0; c < 3; c++) out[o + 2 - c] = Math.round(BLUE[c] * (1 - w) + WHITE[c] * w)
      out[o + 3] = Math.round((255 * inside) / (n * n))
    }
  }
  return out
}

/** One ICO image: BITMAPINFOHEADER (height doubled: colour + AND mask), 32-bit pixels, an all-zero mask. */
function bmp(size: number): Uint8Array {
  const pixels = draw(size)
  const maskRow = Math.ceil(size / 32) * 4
  const buf = new Uint8Array(40 + pixels.length + maskRow * size)
  const v = new DataView(buf.buffer)
  v.setUint32(0, 40, true)
  v.setInt32(4, size, true)
  v.setInt32(8, size * 2, true)
  v.setUint16(12, 1, true)
  v.setUint16(14, 32, true)
  v.setUint32(20, pixels.length + maskRow * size, true)
  buf.set(pixels, 40)
  return buf
}

function icoOf(sizes: number[]): Uint8Array {
  const images = sizes.map(bmp)
  const head = 6 + 16 * images.length
  const buf = new Uint8Array(head + images.reduce((n, i) => n + i.length, 0))
  const v = new DataView(buf.buffer)
  v.setUint16(2, 1, true) // type: icon
  v.setUint16(4, images.length, true)
  let offset = head
  images.forEach((img, i) => {
    const e = 6 + 16 * i
    buf[e] = sizes[i]
    buf[e + 1] = sizes[i]
    v.setUint16(e + 4, 1, true) // planes
    v.setUint16(e + 6, 32, true) // bits per pixel
    v.setUint32(e + 8, img.length, true)
    v.setUint32(e + 12, offset, true)
    buf.set(img, offset)
    offset += img.length
  })
  return buf
}

let drawn: { ico: Uint8Array; etag: string } | null = null

/** The icon and its ETag, drawn on the first call. */
export function favicon(): { ico: Uint8Array; etag: string } {
  if (!drawn) {
    const ico = icoOf([16, 32])
    drawn = { ico, etag: `"${createHash('sha256').update(ico).digest('hex').slice(0, 16)}"` }
  }
  return drawn
}
