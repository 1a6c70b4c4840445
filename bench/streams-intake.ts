#!/usr/bin/env bun
/**
 * Intake while event streams are open and events flow, on loopback, against the compiled binary
 * (issue 28 item 5: ~500 streams of one key cut intake for every Org 5–8×).
 *
 * Org A takes the intake load (wrk, POST /v1/feedback, bench/post.lua). Org B has BENCH_STREAMS streams
 * open, all on ONE sk_ key, and a writer appends bursts of BENCH_BURST events to Org B's outbox every
 * BENCH_EVERY_MS (a burst above 256 is what used to make every stream read on its own). Phases:
 *   1. intake with 0 streams open, events flowing;
 *   2. intake with BENCH_STREAMS caught-up streams open, events flowing;
 *   3. intake with BENCH_STREAMS streams opened BENCH_BACKLOG events behind (all catching up at once).
 * During each phase /healthz is probed every 100 ms (its worst latency is the event loop's worst stall).
 * After phase 2 every stream must have every event (counted per stream).
 * Bounded: each wrk run lasts BENCH_DURATION s; waits are capped; all sockets are closed at the end.
 * Knobs (env): BENCH_STREAMS=1000 BENCH_DURATION=6 BENCH_CONNECTIONS=32 BENCH_BURST=300 BENCH_EVERY_MS=500
 * BENCH_BACKLOG=1000 FIXLOOP_BIN=dist/fixloop. Usage: bun bench/streams-intake.ts
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
const DURATION = Number(process.env.BENCH_DURATION ?? 6)
const CONNS = Number(process.env.BENCH_CONNECTIONS ?? 32)
const BURST = Number(process.env.BENCH_BURST ?? 300)
const EVERY_MS = Number(process.env.BENCH_EVERY_MS ?? 500)
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 1000)
const ENV = {
  PATH: process.env.PATH ?? '',
  FIXLOOP_LOG_LEVEL: 'warn',
  FIXLOOP_RATE_LIMIT_MULTIPLIER: '100000',
  // One key opens every stream: the cap per credential is raised to the number the bench opens.
  FIXLOOP_SSE_STREAMS_PER_KEY: String(STREAMS),
}

ensureBinary()
const dir = mkdtempSync(join(tmpdir(), 'fixloop-bench-streams-'))
const log = (m: string) => process.stderr.write(`[bench streams-intake] ${m}\n`)
const uptime = () => Bun.spawnSync(['uptime']).stdout.toString().trim()

const cli = (...args: string[]) => cliJson(dir, ENV, ...args)


interface Stream {
  events: number
  end(): void
}

/** One stream over a raw socket (fetch caps concurrent requests per process), counting its events. */
async function openStream(port: number, key: string, after: number): Promise<Stream> {
  let opened: () => void
  const ready = new Promise<void>((r) => (opened = r))
  let carry = ''
  const s = { events: 0, end: () => {} }
  const socket = await Bun.connect({
    hostname: '127.0.0.1',
    port,
    socket: {
      data(_sock, chunk) {
        const text = carry + chunk.toString()
        if (text.includes('HTTP/1.1 ')) opened()
        const parts = text.split('\nid: ')
        s.events += parts.length - 1
        carry = parts[parts.length - 1].slice(-8)
      },
    },
  })
  s.end = () => socket.end()
  socket.write(`GET /v1/events/stream?after=${after} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nAccept: text/event-stream\r\n\r\n`)
  await Promise.race([ready, Bun.sleep(20_000).then(() => Promise.reject(new Error('stream did not open in 20 s')))])
  return s
}

async function openMany(port: number, key: string, after: number): Promise<Stream[]> {
  const out: Stream[] = []
  for (let i = 0; i < STREAMS; i += 50) out.push(...(await Promise.all(Array.from({ length: Math.min(50, STREAMS - i) }, () => openStream(port, key, after)))))
  return out
}

async function wrk(base: string, pub: string): Promise<{ rps: number; p99ms: number }> {
  const proc = Bun.spawn(['wrk', '-t1', `-c${CONNS}`, `-d${DURATION}s`, '--latency', '-s', join(ROOT, 'bench', 'post.lua'), base, '--', pub], { env: ENV, stdout: 'pipe', stderr: 'pipe' })
  const out = await new Response(proc.stdout).text()
  await proc.exited
  const p99 = /\n\s+99%\s+([\d.]+)(us|ms|s)/.exec(out)
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out)
  if (!p99 || !rps) throw new Error('wrk output not understood:\n' + out)
  return { rps: Math.round(Number(rps[1])), p99ms: Number(p99[1]) * { us: 0.001, ms: 1, s: 1000 }[p99[2] as 'us' | 'ms' | 's'] }
}

/** Probes /healthz every 100 ms until stopped; returns the worst and the median latency (ms). */
function probeHealth(base: string): { stop: () => Promise<{ worstMs: number; medianMs: number }> } {
  const times: number[] = []
  let running = true
  const loop = (async () => {
    while (running) {
      const t0 = performance.now()
      await fetch(base + '/healthz').then((r) => r.arrayBuffer(), () => undefined)
      times.push(performance.now() - t0)
      await Bun.sleep(100)
    }
  })()
  return {
    async stop() {
      running = false
      await loop
      const sorted = [...times].sort((a, b) => a - b)
      return { worstMs: Math.round(sorted.at(-1) ?? 0), medianMs: Math.round((sorted[sorted.length >> 1] ?? 0) * 10) / 10 }
    },
  }
}

const a = { org: cli('org', 'create', '--name', 'Intake').id } as Record<string, string>
a.pub = cli('app', 'create', '--org', a.org, '--name', 'Web').publicKey
const b = { org: cli('org', 'create', '--name', 'Watchers').id } as Record<string, string>
b.key = cli('key', 'create', '--org', b.org).key
b.app = cli('app', 'create', '--org', b.org, '--name', 'Web').id

const port = (() => {
  const s = Bun.serve({ port: 0, fetch: () => new Response() })
  const p = s.port!
  s.stop(true)
  return p
})()
const server = Bun.spawn([BIN, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dir], { env: ENV, stdout: 'ignore', stderr: 'inherit' })
const base = `http://127.0.0.1:${port}`
let streams: Stream[] = []
let writer: ReturnType<typeof setInterval> | undefined
try {
  let up = false
  for (let i = 0; i < 300 && !up; i++) {
    up = await fetch(base + '/healthz').then((r) => r.ok, () => false)
    if (!up) await Bun.sleep(50)
  }
  if (!up) throw new Error('server did not start in 15 s')

  // The writer: another connection, as the worker thread or the CLI would write.
  const db = new Database(join(dir, 'fixloop.db'))
  db.run('PRAGMA busy_timeout = 5000')
  const outbox = createOutbox(db, systemClock)
  const lastSeq = () => (db.query('SELECT COALESCE(MAX(seq), 0) AS s FROM events WHERE org_id = ?').get(b.org) as { s: number }).s
  const append = (n: number) =>
    db.transaction(() => {
      for (let i = 0; i < n; i++) outbox.append({ orgId: b.org, appId: b.app, type: 'feedback.status_changed', data: { feedbackId: newId(), from: 'sanitized', to: 'queued' } })
    }).immediate()
  const flow = (on: boolean) => {
    clearInterval(writer)
    writer = on ? setInterval(() => append(BURST), EVERY_MS) : undefined
  }

  log(`uptime before: ${uptime()}`)
  log('warm-up')
  await wrk(base, a.pub)

  const phase = async (name: string) => {
    const health = probeHealth(base)
    const intake = await wrk(base, a.pub)
    return { phase: name, ...intake, healthz: await health.stop() }
  }
  const results: Record<string, unknown>[] = []

  log(`phase 1: 0 streams, events flowing (${BURST} every ${EVERY_MS} ms), intake ${DURATION} s`)
  flow(true)
  results.push(await phase('0 streams'))

  log(`phase 2: opening ${STREAMS} caught-up streams on one key`)
  flow(false)
  const from = lastSeq()
  streams = await openMany(port, b.key, from)
  flow(true)
  results.push(await phase(`${STREAMS} caught-up streams`))
  flow(false)
  const sent = lastSeq() - from
  const complete = await waitFor(() => streams.every((s) => s.events >= sent), 60_000, 50)
  const short = streams.filter((s) => s.events < sent).length
  results.push({ phase: 'delivery after phase 2', eventsWritten: sent, everyStreamHasEvery: complete, streamsShort: short, streamsWithDuplicates: streams.filter((s) => s.events > sent).length })
  for (const s of streams) s.end()
  await Bun.sleep(500)

  log(`phase 3: ${STREAMS} streams opened ${BACKLOG} events behind, events flowing`)
  const behind = Math.max(0, lastSeq() - BACKLOG)
  const health = probeHealth(base)
  const t0 = performance.now()
  streams = await openMany(port, b.key, behind)
  const openMs = Math.round(performance.now() - t0)
  flow(true)
  const intake = await wrk(base, a.pub)
  results.push({ phase: `${STREAMS} streams ${BACKLOG} behind`, ...intake, healthz: await health.stop(), openAllMs: openMs })
  flow(false)
  db.close()

  log(`uptime after: ${uptime()}`)
  console.log(JSON.stringify({ streams: STREAMS, burst: BURST, everyMs: EVERY_MS, backlog: BACKLOG, results, uptime: uptime() }, null, 2))
} finally {
  clearInterval(writer)
  for (const s of streams) s.end()
  server.kill('SIGKILL')
  await server.exited
  rmSync(dir, { recursive: true, force: true })
}
