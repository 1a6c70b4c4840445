/** Whether reports wait in the offline queue, without loading the queue's code (keeps the loader small). */
export const QUEUE_DB = 'fixloop'
export const QUEUE_STORE = 'queue'

/** Opens (creating when needed) the queue database. */
export function openQueueDb(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(QUEUE_DB, 1)
    req.onupgradeneeded = () => req.result.createObjectStore(QUEUE_STORE, { keyPath: 'key' })
    req.onsuccess = () => resolve(req.result)
    req.onerror = () => reject(req.error)
  })
}

export async function hasQueuedReports(): Promise<boolean> {
  if (typeof indexedDB === 'undefined') return false
  const db = await openQueueDb()
  return new Promise((resolve) => {
    const req = db.transaction(QUEUE_STORE).objectStore(QUEUE_STORE).count()
    req.onsuccess = () => resolve(req.result > 0)
    req.onerror = () => resolve(false)
  })
}
