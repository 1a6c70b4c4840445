/**
 * The agent sees what the reporter saw: before a run, the report's screenshots and image attachments,
 * and those of its cluster's other reports (its duplicates, newest first), are copied into the run's
 * attachments folder (FIXLOOP_ATTACHMENTS_DIR); the task file lists them (src/agent/task.ts), with the
 * report each belongs to, its kind, size and the report's component target, and adds a text timeline of
 * the report's session replay when there is one (src/agent/replay-timeline.ts).
 *
 * What is copied:
 *   - only reports the worker has sanitized (`redactions` set) and that are not spam: the agent runs on
 *     sanitized reports, and nothing the dashboard would not show goes in;
 *   - only referenced uploads of the run's App (their sealed copy: the object the report points at, as
 *     the dashboard's download link serves it), read through the blob store (embedded or S3);
 *   - the component screenshot (componentTarget.screenshotKey), attachments of kind `screenshot`, and
 *     attachments of kind `attachment` with an image type: PNG, JPEG, WebP or GIF, whose first bytes
 *     must say so too (a "PNG" that is HTML is left out). Never SVG (it is a program), never text;
 *   - bounded: at most MEDIA_MAX_FILES files and MEDIA_MAX_BYTES bytes in all; the report's own first,
 *     then its duplicates' (newest first); what does not fit is counted as left out.
 * The folder is made read-only (files 0444, the folder 0555) and bound read-only into the sandbox. It
 * always exists (empty when there is nothing to show), and goes with the workspace after the run.
 * Bytes never go into the task text; a file that cannot be read is left out with a warning, never
 * failing the run.
 */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { RunDuplicateMedia, RunFeedbackRow } from '../modules/agent-runs/repo'
import { decodeReplay, replayTimeline } from './replay-timeline'
import { sanitizeText } from '../sanitize/sanitize'
import { LIMITS } from '../core/limits'
import { clip } from '../core/clip'

/** At most this many files, and this many bytes in all, in a run's attachments folder. */
export const MEDIA_MAX_FILES = 8
export const MEDIA_MAX_BYTES = 20 * 1024 * 1024

/** Image types copied, with the file extension they get. */
const IMAGE_TYPES: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp', 'image/gif': 'gif' }

/** Where the folder's bytes come from (the runner's wiring: the agent-runs repository and the uploads service). */
export interface MediaSource {
  /** The lead's duplicates that may hold screenshots, newest first. */
  duplicates(leadId: string): Promise<RunDuplicateMedia[]>
  /** A referenced upload of the App: its bytes and content type as checked at upload; null when not that or over `maxBytes`. */
  read(appId: string, key: string, maxBytes: number): Promise<{ bytes: Uint8Array; contentType: string } | null>
  /** Logs a warning (a file that could not be read, a replay that is not one). */
  warn(message: string, fields: Record<string, unknown>): void
}

/** One file in the folder, as the task file lists it. */
export interface MediaFile {
  /** The file's name in the folder (fixloop's own: `01-report-screenshot.png`). */
  name: string
  /** `this report`, or `duplicate <id>`. */
  report: string
  /** `screenshot`, `component screenshot` or `image attachment`. */
  kind: string
  contentType: string
  bytes: number
  width?: number
  height?: number
  /** The report's component target, in words (name, selector, bounding box), when it has one. */
  component?: string
}

/** What the task file gets: the listing, how many candidates did not fit, and the replay's timeline. */
export interface ReportMedia {
  files: MediaFile[]
  leftOut: number
  /** The report's own attachments that are not in the folder (`kind n (type)`), as before. */
  notCopied: string[]
  timeline: { report: string; lines: string[] } | null
}

interface AttachmentRef {
  key: string
  kind: string
  contentType: string
  byteSize?: number
  width?: number
  height?: number
}

interface Candidate {
  key: string
  report: string
  kind: string
  size: number
  width?: number
  height?: number
  component?: string
}

/**
 * Fills `dir` (created here) with the report's and its cluster's images and makes it read-only; returns
 * what the task file says about them. Never throws for a report's content; a file system error does.
 */
export async function collectReportMedia(src: MediaSource, f: RunFeedbackRow, dir: string): Promise<ReportMedia> {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const own = { id: f.id, label: 'this report', attachments: f.attachments, component_target: f.component_target, redactions: f.redactions }
  const dups = f.duplicate_count > 0 ? await src.duplicates(f.id).catch((e) => (src.warn('could not read the duplicates of a report for its agent run', { feedbackId: f.id, error: message(e) }), [])) : []
  const reports = [own, ...dups.map((d) => ({ ...d, label: `duplicate ${d.id}` }))].filter((r) => r.redactions !== null)

  const candidates: Candidate[] = []
  let replay: { key: string; report: string } | null = null
  const seen = new Set<string>()
  for (const r of reports) {
    const component = parseObject(r.component_target)
    const described = component ? describeComponent(component) : undefined
    const shot = component && typeof component.screenshotKey === 'string' ? component.screenshotKey : null
    if (shot && !seen.has(shot)) {
      seen.add(shot)
      candidates.push({ key: shot, report: r.label, kind: 'component screenshot', size: 0, component: described })
    }
    for (const a of parseAttachments(r.attachments)) {
      if (seen.has(a.key)) continue
      if (a.kind === 'replay') {
        replay ??= { key: a.key, report: r.label }
        continue
      }
      const image = IMAGE_TYPES[baseType(a.contentType)] !== undefined
      if (!(a.kind === 'screenshot' || (a.kind === 'attachment' && image))) continue
      seen.add(a.key)
      candidates.push({ key: a.key, report: r.label, kind: a.kind === 'screenshot' ? 'screenshot' : 'image attachment', size: a.byteSize ?? 0, width: a.width, height: a.height, component: described })
    }
  }

  const files: MediaFile[] = []
  let total = 0
  let leftOut = 0
  const copied = new Set<string>()
  for (const c of candidates) {
    if (files.length >= MEDIA_MAX_FILES || total + c.size > MEDIA_MAX_BYTES) {
      leftOut++
      continue
    }
    const got = await src.read(f.app_id, c.key, Math.min(LIMITS.attachmentMaxBytes, MEDIA_MAX_BYTES - total)).catch((e) => {
      src.warn('could not read an attachment for an agent run', { feedbackId: f.id, key: c.key, error: message(e) })
      return null
    })
    const type = got ? baseType(got.contentType) : ''
    const ext = IMAGE_TYPES[type]
    if (!got || !ext || sniffImage(got.bytes) !== type) {
      // Not there, too large for what is left, not an image, or not what it claims to be.
      leftOut++
      continue
    }
    const who = c.report === 'this report' ? 'report' : `duplicate-${c.report.slice('duplicate '.length)}`
    const name = `${String(files.length + 1).padStart(2, '0')}-${who}-${c.kind.replace(/ /g, '-')}.${ext}`
    const path = join(dir, name)
    writeFileSync(path, got.bytes, { mode: 0o444, flag: 'wx' })
    chmodSync(path, 0o444)
    total += got.bytes.length
    copied.add(c.key)
    files.push({ name, report: c.report, kind: c.kind, contentType: type, bytes: got.bytes.length, width: c.width, height: c.height, component: c.component })
  }
  chmodSync(dir, 0o555)

  const notCopied = parseAttachments(f.attachments)
    .map((a, i) => ({ a, name: `${a.kind} ${i + 1} (${a.contentType})` }))
    .filter(({ a }) => !copied.has(a.key))
    .map(({ name }) => name)
  return { files, leftOut, notCopied, timeline: replay ? await timelineOf(src, f, replay) : null }
}

/** The replay's timeline, or null (with a warning) when its bytes are not a replay. */
async function timelineOf(src: MediaSource, f: RunFeedbackRow, replay: { key: string; report: string }): Promise<ReportMedia['timeline']> {
  try {
    const got = await src.read(f.app_id, replay.key, LIMITS.attachmentMaxBytes)
    const events = got ? decodeReplay(got.bytes) : null
    if (!events) {
      src.warn('a replay attachment is not a readable recording: no timeline for the agent', { feedbackId: f.id, key: replay.key })
      return null
    }
    const lines = replayTimeline(events, (s) => sanitizeText(s, {}))
    return lines.length > 0 ? { report: replay.report, lines } : null
  } catch (e) {
    src.warn('could not build the replay timeline for an agent run', { feedbackId: f.id, key: replay.key, error: message(e) })
    return null
  }
}

/** The image type the bytes start with (PNG, JPEG, GIF, WebP signatures), or null. */
export function sniffImage(b: Uint8Array): string | null {
  const at = (i: number, ...bytes: number[]) => bytes.every((x, j) => b[i + j] === x)
  if (at(0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png'
  if (at(0, 0xff, 0xd8, 0xff)) return 'image/jpeg'
  if (at(0, 0x47, 0x49, 0x46, 0x38) && (at(4, 0x37, 0x61) || at(4, 0x39, 0x61))) return 'image/gif'
  if (at(0, 0x52, 0x49, 0x46, 0x46) && at(8, 0x57, 0x45, 0x42, 0x50)) return 'image/webp'
  return null
}

/** The component target in words: its name, a selector (or the meta, compact), the bounding box. */
function describeComponent(c: Record<string, unknown>): string | undefined {
  const parts: string[] = []
  if (typeof c.name === 'string' && c.name) parts.push(`"${clip(c.name, 200)}"`)
  const meta = parseObject(c.meta)
  if (meta) {
    const json = JSON.stringify(meta)
    parts.push(`details ${json.length > 600 ? `${clip(json, 600)}…` : json}`)
  }
  const b = parseObject(c.bbox)
  if (b && [b.x, b.y, b.w, b.h].every((v) => typeof v === 'number' && Number.isFinite(v))) parts.push(`bounding box x=${b.x} y=${b.y} w=${b.w} h=${b.h} (CSS pixels)`)
  return parts.length > 0 ? parts.join(', ') : undefined
}

function parseAttachments(json: string | null): AttachmentRef[] {
  let list: unknown
  try {
    list = json === null ? [] : JSON.parse(json)
  } catch {
    return []
  }
  if (!Array.isArray(list)) return []
  return list.filter((a): a is AttachmentRef => parseObject(a) !== null && typeof a.key === 'string' && typeof a.kind === 'string' && typeof a.contentType === 'string')
}

function parseObject(v: unknown): Record<string, unknown> | null {
  let o = v
  if (typeof v === 'string') {
    try {
      o = JSON.parse(v)
    } catch {
      return null
    }
  }
  return typeof o === 'object' && o !== null && !Array.isArray(o) ? (o as Record<string, unknown>) : null
}

const baseType = (t: string) => t.split(';')[0]!.trim().toLowerCase()
const message = (e: unknown) => (e instanceof Error ? e.message : String(e))
