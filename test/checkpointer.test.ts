/**
 * WAL checkpoints run on their own thread, in the compiled binary too: while the server runs, committed
 * pages reach the database file (the request thread has automatic checkpoints turned off).
 */
import { expect, test } from 'bun:test'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { BINARY, call, eventually, freePort, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'

test('the compiled binary checkpoints the WAL from its checkpointer thread', async () => {
  ensureBinary()
  const dataDir = tempDir()
  const t = await cliTenant(dataDir)
  const port = await freePort()
  const proc = Bun.spawn([BINARY, 'serve', '--port', String(port), '--data-dir', dataDir], {
    env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn', FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  try {
    const url = `http://127.0.0.1:${port}`
    await eventually(async () => (await fetch(url + '/healthz').catch(() => null))?.status === 200, 15_000)
    const db = join(dataDir, 'fixloop.db')
    const before = statSync(db).size
    for (let i = 0; i < 40; i++) {
      await Promise.all(
        Array.from({ length: 10 }, (_, j) => call(url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: `Checkpoint report ${i * 10 + j}: ${'details '.repeat(40)}` } })),
      )
    }
    // The pages reach the main database file while the server keeps running.
    await eventually(() => statSync(db).size > before + 100_000, 10_000)
  } finally {
    proc.kill('SIGTERM')
    await proc.exited
  }
  const out = (await new Response(proc.stdout).text()) + (await new Response(proc.stderr).text())
  expect(out).not.toContain('checkpointer thread failed')
  expect(proc.exitCode).toBe(0)
}, 60_000)
