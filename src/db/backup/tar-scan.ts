/**
 * A first pass over a backup archive that reads only tar headers (512 bytes each, seeking over every
 * entry's data) to find the manifest, its MAC and the master key entry before anything is unpacked: the
 * manifest comes last, and without this pass every entry before it would be written to disk before it
 * could be checked. Only what `fixloop backup` writes is accepted: plain ustar regular files (no pax or
 * GNU long-name headers, which could make this reader and the unpacking one disagree on a name).
 */
import { open } from 'node:fs/promises'

export interface ScannedEntry {
  name: string
  size: number
  /** Where the entry's data starts in the file. */
  offset: number
}

export class ArchiveRefused extends Error {}

const BLOCK = 512

function field(buf: Buffer, start: number, len: number): string {
  const end = buf.indexOf(0, start)
  return buf.toString('utf8', start, end === -1 || end > start + len ? start + len : end)
}

function octal(buf: Buffer, start: number, len: number): number {
  // GNU base-256 for sizes over 8 GB: the first byte has its high bit set.
  if (buf[start] & 0x80) {
    let n = buf[start] & 0x7f
    for (let i = start + 1; i < start + len; i++) n = n * 256 + buf[i]
    return n
  }
  const text = field(buf, start, len).trim()
  if (!/^[0-7]*$/.test(text)) throw new ArchiveRefused('the archive has a damaged tar header')
  return text === '' ? 0 : parseInt(text, 8)
}

function checksumOk(buf: Buffer): boolean {
  let sum = 0
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : buf[i]
  return sum === octal(buf, 148, 8)
}

/** Calls `each` for every entry header in order, until the end-of-archive block or the file's end. */
export async function scanTar(path: string, each: (e: ScannedEntry) => void): Promise<void> {
  const fh = await open(path, 'r')
  try {
    const fileSize = (await fh.stat()).size
    const buf = Buffer.alloc(BLOCK)
    let at = 0
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, BLOCK, at)
      if (bytesRead < BLOCK) throw new ArchiveRefused('the archive is cut short (no end-of-archive block)')
      if (buf.every((b) => b === 0)) return
      if (!checksumOk(buf)) throw new ArchiveRefused('the archive has a damaged tar header (bad checksum): not a fixloop backup, or damaged')
      const type = String.fromCharCode(buf[156] || 48)
      const magic = buf.toString('latin1', 257, 263)
      const prefix = magic === 'ustar\0' ? field(buf, 345, 155) : ''
      const name = prefix ? `${prefix}/${field(buf, 0, 100)}` : field(buf, 0, 100)
      if (type !== '0' || magic !== 'ustar\0') throw new ArchiveRefused(`the archive holds an unexpected entry "${name}" (tar type ${type}${magic === 'ustar\0' ? '' : ', not POSIX ustar'}), which fixloop backup never writes: not a fixloop backup, or tampered with`)
      const size = octal(buf, 124, 12)
      const offset = at + BLOCK
      if (offset + size > fileSize) throw new ArchiveRefused(`the archive is cut short: ${name} claims ${size} bytes past the end of the file`)
      each({ name, size, offset })
      at = offset + Math.ceil(size / BLOCK) * BLOCK
    }
  } finally {
    await fh.close()
  }
}

/** Reads one entry's data (the caller has bounded `size`). */
export async function readEntry(path: string, e: ScannedEntry): Promise<Buffer> {
  const fh = await open(path, 'r')
  try {
    const buf = Buffer.alloc(e.size)
    const { bytesRead } = await fh.read(buf, 0, e.size, e.offset)
    if (bytesRead !== e.size) throw new ArchiveRefused(`the archive is cut short inside ${e.name}`)
    return buf
  } finally {
    await fh.close()
  }
}
