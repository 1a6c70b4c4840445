/**
 * The graceful stop's last TRUNCATE checkpoint (src/db/sqlite/checkpointer-worker.ts) empties the WAL, so
 * values scrubbed since the last one leave the disk at the stop. Another connection's checkpoint can hold
 * SQLite's checkpoint lock at that moment; SQLite then answers busy at once, without the busy handler, and
 * the stop used to give up in a millisecond ("the WAL is left for the next start to checkpoint", 3 stops
 * of 4 within seconds of a start). The compiled binary, a fresh data dir, a stop a second after /healthz.
 */
import { describe, expect, test } from 'bun:test'
import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { spawnLoggedServer, tempDir } from './harness'

describe('the last checkpoint at a stop', () => {
  test('empties the WAL at every one of 4 stops soon after a start, and says nothing about leaving it', async () => {
    for (let round = 0; round < 4; round++) {
      const dataDir = tempDir('fixloop-stop-ckpt-')
      const server = await spawnLoggedServer(dataDir, { FIXLOOP_LOG_LEVEL: 'info' })
      await Bun.sleep(round * 400)
      const log = await server.stop()
      expect(server.proc.exitCode).toBe(0)
      const stopped = log.split('\n').find((l) => l.includes('"fixloop stopped"'))
      expect(stopped).toBeDefined()
      expect(log).not.toContain('the WAL is left for the next start')
      const wal = join(dataDir, 'fixloop.db-wal')
      // TRUNCATE leaves an empty file (or none once the last connection closed it).
      expect(existsSync(wal) ? statSync(wal).size : 0).toBe(0)
    }
  }, 60_000)
})
