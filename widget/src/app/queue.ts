/**
 * The offline queue in IndexedDB: a report is stored BEFORE the first send attempt and deleted only
 * after the server's 201 (or a final 4xx), so a closed tab, a reload or a lost connection never loses
 * it. At most 30 reports wait per page origin.
 */
import { openQueueDb, QUEUE_STORE } from '../queue-peek'
import type { SubmitPayload } from '../types'

export const QUEUE_MAX = 30

/** A screenshot or file still to upload (uploadedKey set once its PUT succeeded). */
export interface PendingBlob {
  slot: 'attachment' | 'component'
  kind: 'screenshot' | 'attachment'
  blob: Blob
  contentType: string
  width?: number
  height?: number
  filename?: string
  uploadedKey?: string
}

export interface QueuedReport {
  /** The Idempotency-Key: one per user intent, re-used on every retry. */
  key: string
  endpoint: string
  publicKey: string
  createdAt: number
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
  await run('readwrite', (s) => s.put(report))
  return true
}

export const saveReport = (report: QueuedReport): Promise<IDBValidKey> => run('readwrite', (s) => s.put(report))
export const removeReport = (key: string): Promise<undefined> => run('readwrite', (s) => s.delete(key))
export const queuedReports = (): Promise<QueuedReport[]> => run('readonly', (s) => s.getAll() as IDBRequest<QueuedReport[]>)
