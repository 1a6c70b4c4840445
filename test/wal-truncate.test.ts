/**
 * A scrubbed value is gone from disk within the documented time (issue 10.3, docs/security.md): the
 * compiled binary keeps running, and WAL_TRUNCATE_MS plus a second after the worker overwrote the raw
 * reports neither fixloop.db nor fixloop.db-wal holds any of their secrets. No checkpoint is forced by
 * the test: the schedule does it.
 */
import { expect, test } from 'bun:test'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { call, eventually, spawnServer } from './harness'
import { cliTenant, crashTestDataDir } from './helpers-lifecycle'
import { B64URL, prng, randomString } from './sanitize-fixtures'
import { WAL_TRUNCATE_MS } from '../src/db/sqlite/checkpointer'

const { dir, stops } = crashTestDataDir('fixloop-wal-')
const rng = prng(0x3a1)

test('the raw values of scrubbed reports leave fixloop.db and fixloop.db-wal within the documented time', async () => {
  const dataDir = dir()
  const t = await cliTenant(dataDir)
  const server = await spawnServer(dataDir, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
  stops.push(server.stop)
  const secrets: string[] = []
  const ids: string[] = []
  for (let i = 0; i < 30; i++) {
    const secret = 'Zq' + randomString(rng, B64URL, 30)
    secrets.push(secret)
    const r = await call(server.url, 'POST', '/v1/feedback', {
      auth: t.pub,
      body: { text: `Login fails, password: ${secret} and more text ${'padding '.repeat(50)}`, metadata: { apiKey: secret } },
    })
    expect(r.status).toBe(201)
    ids.push(r.body.id)
  }
  await eventually(async () => {
    for (const id of ids) if (['received', 'sanitizing'].includes((await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body.status)) return false
    return true
  }, 15_000)
  const scrubbedAt = Date.now()
  await Bun.sleep(WAL_TRUNCATE_MS + 1000)
  expect(server.proc.exitCode).toBeNull() // still running: nothing was flushed by a shutdown
  const files = ['fixloop.db', 'fixloop.db-wal'].map((f) => join(dataDir, f)).filter(existsSync)
  const found: string[] = []
  for (const file of files) {
    const bytes = readFileSync(file).toString('latin1')
    for (const s of secrets) if (bytes.includes(s)) found.push(`${file.split('/').pop()}: ${s}`)
  }
  console.log(`${Date.now() - scrubbedAt} ms after the last scrub: WAL ${existsSync(files[1] ?? '') ? statSync(files[1]).size : 0} bytes, ${found.length} raw values on disk`)
  expect(found).toEqual([])
}, 60_000)
