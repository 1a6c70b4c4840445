/**
 * Runs WAL checkpoints on a thread of their own (checkpointer-worker.ts) and turns off SQLite's
 * automatic checkpoints on the request thread. If the thread fails, automatic checkpoints come back
 * on, so the WAL can never grow without bound. Every `WAL_TRUNCATE_MS` the WAL file is emptied, so a
 * value the worker scrubbed is gone from disk within that time (docs/security.md).
 */
import type { Database } from 'bun:sqlite'
import type { Logger } from '../../core/logger'
import { failureLog, type FailureLog } from '../outage-log'
import type { WriteTurns } from './write-turns'

/**
 * Where the worker's module is. From source, next to this file. In the compiled binary every module is
 * bundled into the executable (import.meta.url is the binary itself) and the worker, built as a second
 * entry point (package.json "build"), sits at its path under src/: db/sqlite/checkpointer-worker.ts.
 */
function workerUrl(): string {
  const compiled = import.meta.url.includes('/$bunfs/')
  return new URL(compiled ? './db/sqlite/checkpointer-worker.ts' : './checkpointer-worker.ts', import.meta.url).href
}

/**
 * A value overwritten in the database is gone from fixloop.db-wal within this long (plus a second), or,
 * during a saturating intake burst, within a second after it (at most 60 s): see checkpointer-worker.ts.
 */
export const WAL_TRUNCATE_MS = 5000

/**
 * At shutdown, how long the last TRUNCATE waits for a reader (a CLI command, a backup) to let go of the
 * WAL. Waiting longer rarely helps and would hold the exit; the next start truncates it instead.
 */
const FINAL_READER_WAIT_MS = 1000

export class Checkpointer {
  private worker: Worker | undefined
  /** performance.now() of the thread's last report (a checkpoint or its start); readiness reads it. */
  private lastBeatAt = performance.now()
  private fellBack = false
  /** Checkpoints fail twice a second while the storage is full or read-only: logged once per 30 s with the count left out. */
  private readonly failed: FailureLog

  constructor(
    private readonly sqlite: Database,
    private readonly file: string,
    private readonly log: Logger,
    private readonly intervalMs = 1000,
    private readonly truncateMs = WAL_TRUNCATE_MS,
  ) {
    this.failed = failureLog(log)
  }

  /** `turns`: intake's commit times (write-turns.ts): the TRUNCATE waits out a saturating burst (at most 60 s). */
  start(turns?: WriteTurns): void {
    const worker = new Worker(workerUrl())
    worker.onmessage = (e: MessageEvent) => {
      this.lastBeatAt = performance.now()
      if (e.data?.type === 'error') this.failed('warn', 'wal checkpoint failed', Object.assign(new Error(String(e.data.message)), { code: e.data.code }))
    }
    worker.onerror = (e) => {
      this.log.error('checkpointer thread failed; checkpoints move back to the main thread', { error: e.message })
      this.fallBack()
    }
    worker.postMessage({ type: 'start', file: this.file, intervalMs: this.intervalMs, truncateMs: this.truncateMs, turns: turns?.buffer })
    this.sqlite.run('PRAGMA wal_autocheckpoint = 0')
    this.worker = worker
  }

  /**
   * For /readyz: the thread answered within 30 s (or it failed and the request thread checkpoints again,
   * which keeps the WAL bounded: reported ok with a note).
   */
  health(): { ok: boolean; reason?: string } {
    if (this.fellBack) return { ok: true, reason: 'checkpointer thread failed; SQLite auto-checkpoints on the main thread' }
    if (!this.worker) return { ok: false, reason: 'the WAL checkpointer is not running' }
    const silent = performance.now() - this.lastBeatAt
    if (silent > Math.max(30_000, this.intervalMs * 30)) return { ok: false, reason: `the WAL checkpointer has not reported for ${Math.round(silent / 1000)} s` }
    return { ok: true }
  }

  private fallBack(): void {
    this.fellBack = true
    this.worker = undefined
    try {
      this.sqlite.run('PRAGMA wal_autocheckpoint = 1000')
    } catch {
      // the database is closing
    }
  }

  /**
   * Ends the thread after a final TRUNCATE checkpoint, waiting at most `waitMs`. Returns whether the
   * checkpoint finished; if not (a reader held the WAL, or a WAL of gigabytes after a long burst took
   * longer to copy), the process may exit in the
   * middle of it: a checkpoint is crash-safe, every commit is still in the WAL, and the next start
   * finishes it (its first TRUNCATE comes within WAL_TRUNCATE_MS).
   */
  async stop(waitMs = 5000): Promise<boolean> {
    const worker = this.worker
    if (!worker) return true
    this.worker = undefined
    const finished = await Promise.race([
      new Promise<boolean>((resolve) => {
        worker.addEventListener('message', (e: MessageEvent) => e.data?.type === 'stopped' && resolve(e.data.truncated !== false))
        worker.postMessage({ type: 'stop', waitMs: Math.min(FINAL_READER_WAIT_MS, Math.max(0, waitMs - 300)) })
      }),
      Bun.sleep(Math.max(0, waitMs)).then(() => false),
    ])
    worker.terminate()
    return finished
  }
}
