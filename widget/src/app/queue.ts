/**
 * The offline queue in IndexedDB: a report is stored BEFORE the first send attempt and deleted only
 * after the server's 201 (or a final 4xx), so a closed tab, a reload or a lost connection never loses
 * it. At most 30 reports wait per page origin.
 */
import { openQueueDb, QUEUE_STORE } from '../queue-peek'
import type { SubmitPayload } from '../types'

export const QUEUE_MAX = 30
/** The session replays kept in the queue, all reports together (gzipped bytes). */
export const QUEUE_REPLAY_BYTES = 32 * 1024 * 1024

/** A screenshot or file still to upload (uploadedKey set once its PUT succeeded). */
export interface PendingBlob {
  slot: 'attachment' | 'component'
  kind: 'screenshot' | 'attachment' | 'replay'
  blob: Blob
  contentType: string
  width?: number
  height?: number
  filename?: string
  uploadedKey?: string
  /** A replay the server refused (an older server, or over its limits): the report goes without it. */
  dropped?: boolean
}

export interface QueuedReport {
  /** The Idempotency-Key: one per user intent, re-used on every retry. */
  key: string
  endpoint: string
  publicKey: string
  createdAt: number
  /**
   * Private mode: the `sub` of the user token the report was written under. It is sent only with a token
   * naming the same user (a shared browser's next user never files it as theirs); unset in public mode.
   */
  owner?: string
  payload: SubmitPayload
  blobs: PendingBlob[]
}

function run<T>(mode: IDBTransactionMode, op: (store: IDBObjectStore) => IDBRequest<T>): Promise<T> {
  return openQueueDb().then(
    (db) =>
      new Promise<T>((resolve, reject) => {
        const tx = db.transaction(QUEUE_STORE, mode)
        const req = op(tx.objectStore(QUEUE_STORE))
        tx.oncomplete = () => resolve(req.result)
        tx.onerror = () => reject(tx.error)
        tx.onabort = () => reject(tx.error)
      }),
  )
}

/** Stores a new report; false when 30 already wait (the report is refused, not silently dropped). */
export async function enqueue(report: QueuedReport): Promise<boolean> {
  const count = await run('readonly', (s) => s.count())
  if (count >= QUEUE_MAX) return false
  const replay = report.blobs.find((b) => b.kind === 'replay')
  if (replay && count) {
    // Offline for a while: the queue keeps replays up to a byte budget; past it a report waits without one.
    const waiting = await queuedReports()
    let bytes = replay.blob.size
    for (const r of waiting) for (const b of r.blobs) if (b.kind === 'replay' && !b.uploadedKey) bytes += b.blob.size
    if (bytes > QUEUE_REPLAY_BYTES) report.blobs = report.blobs.filter((b) => b !== replay)
  }
  await run('readwrite', (s) => s.put(report))
  return true
}

export const saveReport = (report: QueuedReport): Promise<IDBValidKey> => run('readwrite', (s) => s.put(report))
export const removeReport = (key: string): Promise<undefined> => run('readwrite', (s) => s.delete(key))
export const queuedReports = (): Promise<QueuedReport[]> => run('readonly', (s) => s.getAll() as IDBRequest<QueuedReport[]>)
