#!/usr/bin/env bun
/**
 * Events benchmark, on loopback, against the compiled binary:
 *   1. intake p99 (wrk, POST /v1/feedback, bench/post.lua) with 0 event streams open, then with 1,000
 *      idle streams open (on another Org, so intake's own events do not wake them), and the ratio;
 *   2. events/s delivered: N events appended to the outbox, timed until (a) a loopback webhook
 *      receiver has every one and (b) 1,000 open streams of the same Org have every one.
 * Every load step is bounded in count and time. Knobs (env): BENCH_STREAMS=1000 BENCH_DURATION=8
 * BENCH_CONNECTIONS=32 BENCH_EVENTS=2000 BENCH_SSE_EVENTS=200 BENCH_ROUNDS=2 FIXLOOP_BIN=dist/fixloop.
 * Usage: bun bench/events.ts
 */
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BIN, cliJson, ensureBinary, ROOT, waitFor } from './kit'
import { createOutbox } from '../src/db/sqlite/outbox'
import { systemClock } from '../src/core/clock'
import { newId } from '../src/core/ids'

const STREAMS = Number(process.env.BENCH_STREAMS ?? 1000)
const DURATION = Number(process.env.BENCH_DURATION ?? 8)
const CONNS = Number(process.env.BENCH_CONNECTIONS ?? 32)
const EVENTS = Number(process.env.BENCH_EVENTS ?? 2000)
const SSE_EVENTS = Number(process.env.BENCH_SSE_EVENTS ?? 200)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2)
const ENV = { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn', FIXLOOP_RATE_LIMIT_MULTIPLIER: '100000', FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1' }

ensureBinary()
const dir = mkdtempSync(join(tmpdir(), 'fixloop-bench-events-'))
const log = (m: string) => process.stderr.write(`[bench events] ${m}\n`)

const cli = (...args: string[]) => cliJson(dir, ENV, ...args)


/**
 * One open stream over a raw TCP socket (fetch caps concurrent requests per process), counting the
 * events it receives. Its socket is closed at the end.
 */
async function openStream(port: number, key: string, counter: { n: number }, sockets: { end(): void }[]): Promise<void> {
  let opened: () => void
  const ready = new Promise<void>((r) => (opened = r))
  let carry = ''
  const socket = await Bun.connect({
    hostname: '127.0.0.1',
    port,
    socket: {
      data(_s, chunk) {
        const text = carry + chunk.toString()
        if (text.includes('HTTP/1.1 200')) opened()
        const parts = text.split('\nid: ')
        counter.n += parts.length - 1
        carry = parts[parts.length - 1].slice(-8)
      },
    },
  })
  socket.write(`GET /v1/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nAccept: text/event-stream\r\n\r\n`)
  sockets.push(socket)
  await Promise.race([ready, Bun.sleep(10_000).then(() => Promise.reject(new Error('stream did not open in 10 s')))])
}

function intakeP99(base: string, pub: string): { rps: number; p99ms: number } {
  const r = Bun.spawnSync(['wrk', '-t1', `-c${CONNS}`, `-d${DURATION}s`, '--latency', '-s', join(ROOT, 'bench', 'post.lua'), base, '--', pub], { env: ENV })
  const out = r.stdout.toString()
  const p99 = /\n\s+99%\s+([\d.]+)(us|ms|s)/.exec(out)
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out)
  if (!p99 || !rps) throw new Error('wrk output not understood:\n' + out + r.stderr.toString())
  const unit = { us: 0.001, ms: 1, s: 1000 }[p99[2] as 'us' | 'ms' | 's']
  return { rps: Number(rps[1]), p99ms: Number(p99[1]) * unit }
}

const a = { org: cli('org', 'create', '--name', 'Intake').id } as Record<string, string>
a.key = cli('key', 'create', '--org', a.org).key
const appA = cli('app', 'create', '--org', a.org, '--name', 'Web')
a.app = appA.id
a.pub = appA.publicKey
const b = { org: cli('org', 'create', '--name', 'Watchers').id } as Record<string, string>
b.key = cli('key', 'create', '--org', b.org).key
b.app = cli('app', 'create', '--org', b.org, '--name', 'Web').id

// Webhook deliveries are measured on a third Org with no stream open, so the two figures stay apart.
const c = { org: cli('org', 'create', '--name', 'Hooks').id } as Record<string, string>
c.app = cli('app', 'create', '--org', c.org, '--name', 'Web').id
let received = 0
const receiver = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => (received++, new Response('ok')) })
cli('webhook', 'create', '--org', c.org, '--url', `http://127.0.0.1:${receiver.port}/hook`)

const port = (() => {
  const s = Bun.serve({ port: 0, fetch: () => new Response() })
  const p = s.port!
  s.stop(true)
  return p
})()
const server = Bun.spawn([BIN, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dir], { env: ENV, stdout: 'ignore', stderr: 'inherit' })
const base = `http://127.0.0.1:${port}`
const sockets: { end(): void }[] = []
try {
  let up = false
  for (let i = 0; i < 300 && !up; i++) {
    up = await fetch(base + '/healthz').then((r) => r.ok, () => false)
    if (!up) await Bun.sleep(50)
  }
  if (!up) throw new Error('server did not start in 15 s')

  log('warm-up')
  intakeP99(base, a.pub)
  // Rounds alternate 0 and STREAMS open streams, and the best round of each counts: other load on the
  // machine then hits both alike instead of deciding the ratio.
  const counter = { n: 0 }
  const openAll = async () => {
    for (let i = 0; i < STREAMS; i += 50) {
      await Promise.all(Array.from({ length: Math.min(50, STREAMS - i) }, () => openStream(port, b.key, counter, sockets)))
    }
  }
  const best = (xs: { rps: number; p99ms: number }[]) => xs.reduce((m, x) => (x.p99ms < m.p99ms ? x : m))
  const zeros: { rps: number; p99ms: number }[] = []
  const manys: { rps: number; p99ms: number }[] = []
  let rssBefore = 0
  for (let round = 1; round <= ROUNDS; round++) {
    log(`round ${round}: intake with 0 streams (${DURATION} s, ${CONNS} connections)`)
    zeros.push(intakeP99(base, a.pub))
    log(`round ${round}: opening ${STREAMS} idle streams (Org B), intake again`)
    await openAll()
    rssBefore = Number(/VmRSS:\s+(\d+)/.exec(await Bun.file(`/proc/${server.pid}/status`).text())?.[1] ?? 0)
    manys.push(intakeP99(base, a.pub))
    if (round < ROUNDS) {
      for (const s of sockets.splice(0)) s.end()
      await Bun.sleep(500)
    }
  }
  const zero = best(zeros)
  const many = best(manys)

  // Delivery: events appended to Org B's outbox by another process (as the worker or CLI would).
  const db = new Database(join(dir, 'fixloop.db'))
  db.run('PRAGMA busy_timeout = 5000')
  const outbox = createOutbox(db, systemClock)
  const append = (n: number, org = b) => {
    for (let i = 0; i < n; i++) {
      // IMMEDIATE, as outbox.append requires: a deferred one whose snapshot the server's writes outdated
      // cannot upgrade to write (SQLITE_BUSY_SNAPSHOT, which no busy_timeout waits out).
      db.transaction(() => outbox.append({ orgId: org.org, appId: org.app, type: 'feedback.status_changed', data: { feedbackId: newId(), from: 'sanitized', to: 'queued' } })).immediate()
    }
  }
  counter.n = 0
  const t0 = performance.now()
  append(SSE_EVENTS)
  const sseDone = await waitFor(() => counter.n >= SSE_EVENTS * STREAMS, 60_000)
  const sseSeconds = (performance.now() - t0) / 1000
  const sseDelivered = counter.n
  const w0 = performance.now()
  const before = received
  append(EVENTS, c)
  const hookDone = await waitFor(() => received >= EVENTS, 120_000)
  const hookSeconds = (performance.now() - w0) / 1000
  const rssAfter = Number(/VmRSS:\s+(\d+)/.exec(await Bun.file(`/proc/${server.pid}/status`).text())?.[1] ?? 0)
  db.close()

  const summary = {
    streams: STREAMS,
    intake: { rounds: { zeroStreams: zeros, withStreams: manys }, zeroStreams: zero, withStreams: many, p99Ratio: Math.round((many.p99ms / zero.p99ms) * 100) / 100, rpsRatio: Math.round((many.rps / zero.rps) * 100) / 100 },
    serverRssMiB: { withIdleStreams: Math.round(rssBefore / 1024), afterDelivery: Math.round(rssAfter / 1024) },
    sse: { events: SSE_EVENTS, messagesDelivered: sseDelivered, complete: sseDone, seconds: Math.round(sseSeconds * 100) / 100, messagesPerSecond: Math.round(sseDelivered / sseSeconds) },
    webhooks: { events: EVENTS, complete: hookDone, seconds: Math.round(hookSeconds * 100) / 100, eventsPerSecond: Math.round((received - before) / hookSeconds) },
  }
  console.log(JSON.stringify(summary, null, 2))
  console.log(
    `intake p99: ${zero.p99ms.toFixed(2)} ms with 0 streams, ${many.p99ms.toFixed(2)} ms with ${STREAMS} idle streams (x${summary.intake.p99Ratio}); ` +
      `req/s ${Math.round(zero.rps)} vs ${Math.round(many.rps)}; SSE ${summary.sse.messagesPerSecond} msg/s over ${STREAMS} streams; webhooks ${summary.webhooks.eventsPerSecond} events/s`,
  )
} finally {
  for (const s of sockets) s.end()
  server.kill('SIGKILL')
  await server.exited
  receiver.stop(true)
  rmSync(dir, { recursive: true, force: true })
}
