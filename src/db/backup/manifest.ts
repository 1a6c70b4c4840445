/**
 * The backup archive's format (docs/operations.md, "Backup archive format"): an uncompressed POSIX tar
 * holding `fixloop.db` (a consistent copy made by SQLite's VACUUM INTO), `blobs/...` (the embedded store's
 * objects), `master.key` only when asked for, then `manifest.json`, so the writer can hash every file
 * while streaming it, and LAST `manifest.hmac`, its MAC under the master key (mac.ts). Restore finds the
 * manifest and its MAC first (tar-scan.ts), then checks every file against the manifest as it unpacks it.
 * Plain tar because any machine can list or unpack it (`tar tf`), and uploads are already-compressed images.
 */
import { MAC_NAME } from './mac'

export const FORMAT = 'fixloop-backup'
export const FORMAT_VERSION = 1
export const MANIFEST_NAME = 'manifest.json'
export const DB_ENTRY = 'fixloop.db'
export const KEY_ENTRY = 'master.key'
export const BLOB_PREFIX = 'blobs/'
export { MAC_NAME } from './mac'

/**
 * Largest manifest read (compact JSON, about 130 bytes a file: some 500,000 files). `fixloop backup`
 * refuses to write a larger one, so every archive it makes can be restored.
 */
export const MAX_MANIFEST_BYTES = 64 * 1024 * 1024
/** Largest `manifest.hmac` or `master.key` entry read. */
export const MAX_SMALL_ENTRY_BYTES = 1024

export interface ManifestFile {
  path: string
  bytes: number
  sha256: string
}

export interface Manifest {
  format: typeof FORMAT
  formatVersion: number
  fixloopVersion: string
  createdAt: string
  /** Applied migration names, oldest first: restore refuses a backup whose schema this binary does not know. */
  migrations: string[]
  storage: 'embedded' | 's3'
  masterKeyIncluded: boolean
  files: ManifestFile[]
}

/** Entry names a restore accepts: nothing absolute, no `..`, only what a backup writes. */
export function isSafeEntryName(name: string): boolean {
  if (name === DB_ENTRY || name === KEY_ENTRY || name === MANIFEST_NAME || name === MAC_NAME) return true
  if (!name.startsWith(BLOB_PREFIX) || name.length > 1024) return false
  const parts = name.slice(BLOB_PREFIX.length).split('/')
  return parts.every((p) => p !== '' && p !== '.' && p !== '..' && /^[A-Za-z0-9._=-]+$/.test(p))
}

export function parseManifest(text: string): Manifest {
  let m: Manifest
  try {
    m = JSON.parse(text)
  } catch {
    throw new Error('the archive\'s manifest.json is not valid JSON')
  }
  if (m?.format !== FORMAT) throw new Error('this file is not a fixloop backup (manifest format is not "fixloop-backup")')
  if (m.formatVersion !== FORMAT_VERSION) throw new Error(`backup format version ${m.formatVersion} is not supported by this fixloop (it reads version ${FORMAT_VERSION})`)
  if (!Array.isArray(m.files) || !Array.isArray(m.migrations)) throw new Error('the archive\'s manifest.json is incomplete')
  const paths = new Set<string>()
  for (const f of m.files as unknown[]) {
    const file = f as Partial<ManifestFile> | null
    const ok = typeof file?.path === 'string' && isSafeEntryName(file.path) && file.path !== MANIFEST_NAME && file.path !== MAC_NAME
    if (!ok || !Number.isSafeInteger(file.bytes) || file.bytes! < 0 || typeof file.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(file.sha256)) {
      throw new Error(`the archive's manifest.json lists an invalid file entry (${JSON.stringify(f).slice(0, 200)})`)
    }
    if (paths.has(file.path!)) throw new Error(`the archive's manifest.json lists ${file.path} twice`)
    paths.add(file.path!)
  }
  return m
}

/** "12.3 MB" style sizes for progress lines. */
export function humanBytes(n: number): string {
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MB`
  return `${(n / 1024 ** 3).toFixed(2)} GB`
}

/** Calls `report` at most once a second while work goes on, and always for the last step. */
export function throttled(report: (line: string) => void): (line: string, final?: boolean) => void {
  let last = 0
  return (line, final = false) => {
    const now = Date.now()
    if (final || now - last >= 1000) {
      last = now
      report(line)
    }
  }
}
