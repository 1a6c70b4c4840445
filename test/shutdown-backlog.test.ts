/**
 * SIGTERM with a large job backlog (issue 28 item 15): the compiled binary stops claiming at once and
 * exits well within Docker's 10 s stop timeout, and nothing it acknowledged is lost: after a restart
 * every report is there and is eventually processed.
 *
 * "At once" is seen while a request is still in flight (its body arrives after the signal): the HTTP
 * drain waits for it, and the workers, which took no part in that wait, went on claiming. Without a
 * request in flight the drain took 0 ms and the workers were told to stop a few ms after the signal
 * anyway, so the test passed with the stop's stopClaiming calls removed.
 *
 * A reader holding a snapshot at that moment used to add 10 s (the last checkpoint waited 5 s for it
 * on the checkpointer thread, then 5 s more on the main thread). The last checkpoint is given what is left
 * of the stop's budget (STOP_BUDGET_MS): with a reader it gives up after 1 s whatever it was given, so the
 * exit time alone did not show a last checkpoint given 10 s; the `fixloop stopped` line says what it was
 * given.
 *
 * The backlog is built through the real intake path (HTTP POST /v1/feedback on an in-process server
 * whose worker is not started), so the binary starts with ten thousand due `process` jobs.
 */
import { expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { loadConfig } from '../src/config'
import { Logger } from '../src/core/logger'
import { startServer, STOP_BUDGET_MS } from '../src/runtime/server'
import { createTenantsService } from '../src/modules/tenants/service'
import { BINARY, freePort, tempDir } from './harness'
import { ensureBinary } from './helpers-lifecycle'

/**
 * 10,000: the binary processes a few hundred a second, so draining them before exiting would take tens of
 * seconds, far past the bound, and the test checks the backlog is still mostly queued at the signal. It was
 * 30,000: submitting and then processing them all after the restart took ~60 CPU-s, a minute of the suite.
 */
const REPORTS = Number(process.env.SHUTDOWN_TEST_REPORTS ?? 10_000)
/** Well under Docker's default 10 s stop timeout (counted from the last request's answer). */
const EXIT_BOUND_MS = 4000
/** The in-flight request is answered once the backlog has stood still this long, unleased (at most HOLD_MAX_MS). */
const STILL_MS = 1000
/**
 * Well below the stop's 4 s HTTP grace, after which it closes connections: the held body's second half
 * still has to arrive and be answered within it (at 3.5 s a CI run under load saw the connection closed
 * unanswered).
 */
const HOLD_MAX_MS = 2500

/**
 * A submission whose body is still arriving: its headers and half its body are sent now, the rest by
 * `finish`, which resolves to the response's status.
 */
async function submissionInFlight(port: number, pub: string): Promise<{ finish(): Promise<number> }> {
  const body = JSON.stringify({ text: 'Sent while the server was stopping: answered and kept', url: 'https://shop.example/stop' })
  const half = Math.floor(body.length / 2)
  let received = ''
  let answered: (status: number) => void = () => {}
  const status = new Promise<number>((resolve) => (answered = resolve))
  const socket = await Bun.connect({
    hostname: '127.0.0.1',
    port,
    socket: {
      data(_s, chunk) {
        received += chunk.toString()
        const line = /^HTTP\/1\.1 (\d{3})/.exec(received)
        if (line) answered(Number(line[1]))
      },
      close: () => answered(0),
      error: () => answered(0),
    },
  })
  socket.write(
    `POST /v1/feedback HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${pub}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body.slice(0, half)}`,
  )
  socket.flush()
  return {
    finish() {
      socket.write(body.slice(half))
      socket.flush()
      return status.finally(() => socket.end())
    },
  }
}

async function submitAll(url: string, pub: string, n: number): Promise<string[]> {
  const ids: string[] = []
  let next = 0
  const body = (i: number) => JSON.stringify({ text: `Checkout button does nothing, case ${i}; tried twice on Firefox`, url: 'https://shop.example/p' })
  const lane = async () => {
    while (next < n) {
      const i = next++
      const r = await fetch(url + '/v1/feedback', { method: 'POST', headers: { authorization: `Bearer ${pub}`, 'content-type': 'application/json' }, body: body(i) })
      if (r.status !== 201) throw new Error(`submit ${i}: ${r.status} ${await r.text()}`)
      ids.push(((await r.json()) as { id: string }).id)
    }
  }
  await Promise.all(Array.from({ length: 32 }, lane))
  return ids
}

function spawnBinary(dataDir: string, port: number) {
  return Bun.spawn([BINARY, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir], {
    env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'info', FIXLOOP_RATE_LIMIT_MULTIPLIER: '100000' },
    stdout: 'pipe',
    stderr: 'pipe',
  })
}

async function waitHealthy(url: string): Promise<void> {
  const deadline = Date.now() + 20_000
  while (!(await fetch(url + '/healthz').then((r) => r.ok, () => false))) {
    if (Date.now() > deadline) throw new Error('not healthy in 20 s')
    await Bun.sleep(50)
  }
}

test(`SIGTERM with ${REPORTS} queued reports and a reader on the database: exits within ${EXIT_BOUND_MS} ms, and after a restart every report is there and processed`, async () => {
  ensureBinary()
  const dataDir = tempDir()
  // 1. The backlog, through the real intake path; the worker is not started, so every job stays queued.
  const config = loadConfig({ host: '127.0.0.1', port: '0', dataDir }, { FIXLOOP_LOG_LEVEL: 'silent', FIXLOOP_RATE_LIMIT_MULTIPLIER: '100000' })
  const running = await startServer(config, { log: new Logger('silent'), worker: { autoStart: false } })
  const tenants = createTenantsService(running.ctx)
  const org = await tenants.createOrg('Backlog')
  const app = await tenants.createApp(org.id, { name: 'Shop' })
  const ids = await submitAll(running.url, app.publicKey, REPORTS)
  await running.stop()
  expect(new Set(ids).size).toBe(REPORTS)

  // 2. The binary starts on it, gets going on the backlog, and is asked to stop.
  let port = await freePort()
  let proc = spawnBinary(dataDir, port)
  await waitHealthy(`http://127.0.0.1:${port}`)
  await Bun.sleep(1500)
  // A reader holds a snapshot (a CLI command, a backup, a monitoring query): the last WAL checkpoint
  // cannot finish while it does, and must not hold the exit for it.
  const reader = new Database(join(dataDir, 'fixloop.db'), { readonly: true })
  reader.run('BEGIN')
  reader.query('SELECT COUNT(*) FROM feedback').get()
  // The premise: the binary is at work on the backlog when the signal comes, most of it still queued.
  const queued = (reader.query("SELECT COUNT(*) AS n FROM jobs WHERE kind = 'process'").get() as { n: number }).n
  expect(queued).toBeGreaterThan(REPORTS / 2)
  const inFlight = await submissionInFlight(port, app.publicKey)
  const t0 = performance.now()
  proc.kill('SIGTERM')
  // While the request drains, the workers finish the batch in hand, hand back its leases and claim no more:
  // the backlog stands still, nothing leased. (Claiming on, it shrinks by a batch every second or so.)
  const probe = new Database(join(dataDir, 'fixloop.db'), { readonly: true })
  const sample = () => {
    const leased = (probe.query("SELECT id FROM jobs WHERE kind = 'process' AND lease_owner IS NOT NULL").all() as { id: number }[]).map((r) => r.id)
    return { at: performance.now(), queued: (probe.query("SELECT COUNT(*) AS n FROM jobs WHERE kind = 'process'").get() as { n: number }).n, leased: new Set(leased) }
  }
  const samples = [sample()]
  const still = () => {
    const last = samples[samples.length - 1]
    const since = samples.findLast((x) => last.at - x.at >= STILL_MS)
    return last.leased.size === 0 && since !== undefined && samples.filter((x) => x.at >= since.at).every((x) => x.queued === last.queued)
  }
  while (!still() && performance.now() - t0 < HOLD_MAX_MS) {
    await Bun.sleep(100)
    samples.push(sample())
  }
  probe.close()
  const last = samples[samples.length - 1]
  // On a loaded machine the batch in hand may outlast the hold: then nothing beyond it may have been claimed
  // or done since the drain was surely asked for (300 ms after the signal).
  const asked = samples.find((x) => x.at - t0 >= 300) ?? last
  const onlyInHand = [...last.leased].every((id) => asked.leased.has(id)) && asked.queued - last.queued <= asked.leased.size
  const drained = still() ? 'stood still, nothing leased' : onlyInHand ? 'only the batch in hand went on' : 'claimed on'
  const t1 = performance.now()
  expect(await inFlight.finish()).toBe(201)
  const code = await proc.exited
  const exitMs = performance.now() - t1
  reader.run('COMMIT')
  reader.close()
  const out = await new Response(proc.stdout).text()
  expect(code).toBe(0)
  expect(out).toContain('SIGTERM received')
  expect(out).toContain('fixloop stopped')
  console.log(
    `exit ${Math.round(exitMs)} ms after the last answer (${Math.round(t1 - t0)} ms after SIGTERM) with a backlog of ${REPORTS} reports (${queued} queued; ` +
      `${queued - last.queued} done after the signal, ${last.leased.size} leased at the end of the drain: ${drained})`,
  )
  expect(drained).not.toBe('claimed on')
  expect(exitMs).toBeLessThan(EXIT_BOUND_MS)
  // The reader held the WAL (the premise), and the last checkpoint was given no more than the budget left.
  expect(out).toContain('the WAL is left for the next start to checkpoint')
  const stopped = out.split('\n').filter((l) => l.includes('"fixloop stopped"')).map((l) => JSON.parse(l) as { ms: Record<string, number>; checkpointGivenMs: number })[0]
  expect(stopped.checkpointGivenMs).toBeLessThanOrEqual(STOP_BUDGET_MS - (stopped.ms.total - stopped.ms.checkpoint) + 500)

  // 3. Nothing acknowledged is lost: every report is there, and a restart processes all of them.
  port = await freePort()
  proc = spawnBinary(dataDir, port)
  try {
    await waitHealthy(`http://127.0.0.1:${port}`)
    const db = new Database(join(dataDir, 'fixloop.db'), { readonly: true })
    try {
      const stored = db.query('SELECT id FROM feedback').all() as { id: string }[]
      expect(stored.length).toBe(REPORTS + 1) // the one in flight at the signal too
      const storedIds = new Set(stored.map((r) => r.id))
      expect(ids.every((id) => storedIds.has(id))).toBe(true)
      const left = () => (db.query("SELECT COUNT(*) AS n FROM jobs WHERE kind = 'process'").get() as { n: number }).n
      const deadline = Date.now() + 150_000
      while (left() > 0 && Date.now() < deadline) await Bun.sleep(500)
      expect(left()).toBe(0)
      const unprocessed = (db.query("SELECT COUNT(*) AS n FROM feedback WHERE status IN ('received', 'sanitizing')").get() as { n: number }).n
      expect(unprocessed).toBe(0)
    } finally {
      db.close()
    }
  } finally {
    proc.kill('SIGTERM')
    await proc.exited
  }
}, 300_000)
