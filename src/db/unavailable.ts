/**
 * Whether an error means the database cannot be reached right now (as opposed to a bug or bad data): the
 * request then answers 503 with Retry-After, so load balancers and clients retry instead of reporting a
 * server fault. PostgreSQL: connection exceptions (SQLSTATE class 08), the server shutting down or
 * starting (57P01-57P03), too many connections (53300), the socket refused or cut, the pool's wait for a
 * connection timing out, the database read-only (25006 read_only_sql_transaction: a failover that left the
 * nodes on a standby or a demoted primary until the new one takes over, or an operator's
 * `default_transaction_read_only` during maintenance; nothing can be written, and the same write succeeds
 * once the primary is back), a lock another session holds past the pool's `lock_timeout` (55P03
 * lock_not_available: db/pg/client-options.ts), a statement that ran past the pool's `statement_timeout`
 * or that an operator cancelled (57014 query_canceled: the same file), the transaction chosen to end a deadlock (40P01) or to keep
 * a serializable order (40001): rolled back whole, so the same request succeeds when sent again (Retry-After
 * 1; a job waits a second, its attempt not spent). SQLite: the database busy past the retry window (another process holding the
 * write lock). Either: no room to write (SQLite's SQLITE_FULL, PostgreSQL's disk_full 53100 and
 * out_of_memory 53200, a file write's ENOSPC or EDQUOT) or storage made read-only or failing under the
 * server: EROFS for a file write; for SQLite SQLITE_READONLY, and SQLITE_IOERR with any extended code,
 * because a filesystem remounted read-only after an error (ext4 errors=remount-ro) reaches SQLite's open
 * file as a failed write or fsync (SQLITE_IOERR_WRITE, _FSYNC), never as SQLITE_READONLY, and a disk
 * that fails is as much the environment (nothing can be stored, the operator has to act; a job could not
 * even record its failure). Nothing is stored, so nothing may be acknowledged, and the server writes
 * again once the operator makes room or remounts, without a restart. Out of file descriptors (EMFILE,
 * ENFILE, SQLITE_CANTOPEN): soon, once connections close. The S3 blob store too: its socket errors and
 * its own timeout (ETIMEDOUT), and S3 answering that it cannot do the work now (503 SlowDown and the
 * like: S3_UNAVAILABLE). Anything else stays a 500.
 */
const PG_UNAVAILABLE = new Set(['57P01', '57P02', '57P03', '53300', '25006', '55P03', '57014'])
/** deadlock_detected, serialization_failure: this transaction lost a race and was rolled back; again at once. */
const PG_RETRY_NOW = new Set(['40P01', '40001'])
/** Retry-After for a full disk or a read-only database: an operator has to act, so not every second. */
const NO_ROOM_RETRY_S = 60
const PG_NO_ROOM = new Set(['53100', '53200'])
/** A file write (the embedded blob store) refused for room or a read-only filesystem. */
const FS_NO_ROOM = new Set(['ENOSPC', 'EDQUOT', 'EROFS'])
/** The S3 blob store answering that it cannot do the work now (blobs/s3-store.ts `S3Unavailable`). */
const BLOB_STORE_AWAY = 'S3_UNAVAILABLE'
/**
 * Out of file descriptors (the process's open-files limit, or the system's): a blob write, SQLite's journal
 * or a WAL file cannot be opened (SQLITE_CANTOPEN; also a file system without inodes) until connections or
 * files close, so soon.
 */
const FD_CODES = new Set(['EMFILE', 'ENFILE', 'SQLITE_CANTOPEN'])
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN'])
const DRIVER_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended unexpectedly|connect ECONNREFUSED/i

/**
 * A stored file the server holds but cannot open (an embedded-store blob fixloop's user may not read after
 * a restore or a copy made as root, a failing disk): the operator's to fix, so 503 like a full disk.
 */
export class StoredFileUnreadable extends Error {}

/** Seconds a client should wait before retrying, or null when the error is not the database being away. */
export function storageUnavailable(err: unknown): number | null {
  if (err instanceof StoredFileUnreadable) return NO_ROOM_RETRY_S
  let e = err as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown } | null
  for (let i = 0; i < 4 && e; i++) {
    const code = typeof e.code === 'string' ? e.code : ''
    if (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_') || PG_RETRY_NOW.has(code)) return 1
    if (code === 'SQLITE_FULL' || code === 'SQLITE_READONLY' || code.startsWith('SQLITE_READONLY_') || code === 'SQLITE_IOERR' || code.startsWith('SQLITE_IOERR_')) return NO_ROOM_RETRY_S
    if (PG_NO_ROOM.has(code) || FS_NO_ROOM.has(code)) return NO_ROOM_RETRY_S
    if (FD_CODES.has(code)) return 5
    if (code.length === 5 && (code.startsWith('08') || PG_UNAVAILABLE.has(code))) return 5
    if (SOCKET_CODES.has(code) || code === BLOB_STORE_AWAY) return 5
    if (typeof e.message === 'string' && DRIVER_MESSAGES.test(e.message)) return 5
    // An AggregateError (a connect to every resolved address refused) holds the causes in `errors`.
    if (Array.isArray(e.errors) && e.errors.some((x) => storageUnavailable(x) !== null)) return 5
    e = e.cause as typeof e
  }
  return null
}
