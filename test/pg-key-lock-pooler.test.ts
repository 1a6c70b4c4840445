/**
 * The master key's lock on PostgreSQL behind pgbouncer in transaction mode, which docs/operations.md calls
 * safe ("session-level advisory locks are not used"). An admin command's SESSION lock stayed on pgbouncer's
 * server connection after the command closed its own, and every rekey after it waited its 10 s and refused
 * ("another fixloop command has been using the master key") until pgbouncer recycled that connection (an
 * hour by default). Real PostgreSQL and a real pgbouncer (skipped where it is not installed).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { openPool } from '../src/db/pg/client-options'
import { holdKeySharedPg, lockKeyExclusivePg } from '../src/db/pg/key-lock'
import { withTransaction } from '../src/db/pg/transaction'
import { freePort } from './free-port'
import { tempDir } from './harness'
import { pgMissingReason, startPostgres, type PgServer } from './pg-server'

const PGBOUNCER = Bun.which('pgbouncer') ?? (Bun.spawnSync(['test', '-x', '/usr/sbin/pgbouncer']).exitCode === 0 ? '/usr/sbin/pgbouncer' : null)
const skip = pgMissingReason() ?? (PGBOUNCER ? null : 'pgbouncer is not installed (apt-get install pgbouncer)')
if (skip) console.warn(`pg-key-lock-pooler: skipped: ${skip}`)

describe.skipIf(Boolean(skip))('the master key lock behind pgbouncer in transaction mode', () => {
  let server: PgServer
  let bouncer: Subprocess
  let url: string
  let directUrl: string

  beforeAll(async () => {
    server = await startPostgres()
    directUrl = await server.createDatabase('pooled')
    const direct = new URL(directUrl)
    const dir = tempDir('fixloop-pgbouncer-')
    chmodSync(dir, 0o755)
    const port = await freePort()
    const ini = join(dir, 'pgbouncer.ini')
    writeFileSync(
      ini,
      [
        '[databases]',
        `pooled = host=127.0.0.1 port=${server.port} dbname=${direct.pathname.slice(1)} user=postgres password=${server.password}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        "unix_socket_dir = ''",
        'auth_type = any',
        'pool_mode = transaction',
        'default_pool_size = 4',
        'server_lifetime = 3600',
        'server_check_delay = 0',
      ].join('\n') + '\n',
    )
    chmodSync(ini, 0o644)
    // pgbouncer refuses to run as root: -u drops to nobody.
    const asRoot = process.getuid?.() === 0
    bouncer = Bun.spawn([PGBOUNCER!, ...(asRoot ? ['-u', 'nobody'] : []), ini], { stdout: 'ignore', stderr: 'pipe' })
    url = `postgres://fixloop@127.0.0.1:${port}/pooled`
    const deadline = Date.now() + 10_000
    for (;;) {
      const probe = openPool(url, 1)
      try {
        await probe.query('SELECT 1')
        break
      } catch (e) {
        if (Date.now() > deadline) throw e
        await Bun.sleep(100)
      } finally {
        await probe.end()
      }
    }
  }, 60_000)

  afterAll(async () => {
    bouncer?.kill()
    await bouncer?.exited
    await server?.stop()
  })

  test("an admin command's lock ends with the command: a rekey after it takes the key at once", async () => {
    const command = openPool(url, 2)
    const lock = await holdKeySharedPg(command)
    lock.release()
    await command.end()
    // rekey connects to PostgreSQL itself (as an operator may, with every node stopped): another session.
    const rekey = openPool(directUrl, 2)
    try {
      const started = Date.now()
      // Before: 55P03 after the 10 s lock_timeout, "another fixloop command has been using the master key".
      await withTransaction(rekey, (tx) => lockKeyExclusivePg(tx))
      expect(Date.now() - started).toBeLessThan(5_000)
    } finally {
      await rekey.end()
    }
  }, 30_000)

  test('while the command runs, a rekey still waits for it and refuses', async () => {
    const command = openPool(url, 2)
    const lock = await holdKeySharedPg(command)
    const rekey = openPool(directUrl, 2)
    try {
      await expect(withTransaction(rekey, (tx) => lockKeyExclusivePg(tx))).rejects.toThrow(/another fixloop command has been using the master key/)
    } finally {
      lock.release()
      await command.end()
      await rekey.end()
    }
  }, 60_000)
})
