/**
 * The PostgreSQL driver choice, proven where it will run: postgres.js inside a `bun build --compile`
 * binary, against a real PostgreSQL, under concurrency (Bun's built-in SQL client was passed over after
 * wrong-rows and hung-transaction reports; this is the check any replacement must pass too).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { pgMissingReason, startPostgres, type PgServer } from './pg-server'

const skip = pgMissingReason()
if (skip) console.warn(`pg-driver: skipped: ${skip}`)

describe.skipIf(Boolean(skip))('postgres.js in a compiled binary', () => {
  let server: PgServer
  let dir: string
  let probe: string

  beforeAll(async () => {
    server = await startPostgres()
    dir = mkdtempSync(join(tmpdir(), 'fixloop-pgprobe-'))
    probe = join(dir, 'probe')
    const build = Bun.spawnSync(['bun', 'build', '--compile', join(import.meta.dir, 'fixtures', 'pg-driver-probe.ts'), '--outfile', probe], { stderr: 'pipe' })
    if (build.exitCode !== 0) throw new Error(build.stderr.toString())
  })
  afterAll(async () => {
    await server?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  test('concurrent queries, transactions, SKIP LOCKED claims and killed connections behave', async () => {
    const url = await server.createDatabase('probe')
    const proc = Bun.spawn([probe, url], { stdout: 'pipe', stderr: 'pipe' })
    const timer = setTimeout(() => proc.kill('SIGKILL'), 50_000) // a hung transaction fails the test, not CI
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    clearTimeout(timer)
    expect({ code, err: code === 0 ? '' : err }).toEqual({ code: 0, err: '' })
    const result = JSON.parse(out.trim().split('\n').at(-1)!)
    expect(result.wrongRows).toBe(0)
    expect(result.claims).toEqual({ claimed: 600, distinct: 600, jobs: 600 })
    expect(result.rollbacks.committed).toBe(result.rollbacks.expected)
    expect(result.rollbacks.expected).toBeGreaterThan(200)
  })

  // Known gap, found by this probe (issue 22, "a database restarted under a running server"): when the
  // server terminates a pool's backends while queries are in flight, postgres.js under Bun can leave
  // later queries waiting far past its reconnect backoff (observed: a batch of 50 unanswered for 27 s
  // and more; the same script under Node answers within 6 s). Run it with
  // `bun test/fixtures/pg-driver-probe.ts <url> kill`. To settle before any repository runs on PostgreSQL.
  test.todo('a pool whose backends are terminated mid-load answers again within 2 s')
})
