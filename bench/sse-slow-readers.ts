#!/usr/bin/env bun
/**
 * Memory of event streams whose clients stop reading: opens BENCH_SLOW_STREAMS (20) streams on a
 * server in this process, pauses their sockets, appends BENCH_SLOW_EVENTS (50,000) events (~300 bytes
 * each) and prints the process RSS growth next to what buffering every event per stream would cost.
 * Bounded: one fixed batch of events, a 3 s settle. Usage: bun bench/sse-slow-readers.ts
 */
import net from 'node:net'
import { seedTenant, startTestServer } from '../test/harness'
import { appendEvents } from '../test/events-helpers'
import { sqliteOf } from '../test/sqlite-of'

const STREAMS = Number(process.env.BENCH_SLOW_STREAMS ?? 20)
const EVENTS = Number(process.env.BENCH_SLOW_EVENTS ?? 50_000)
const server = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
const t = await seedTenant(server.admin)
const port = Number(new URL(server.url).port)
const sockets: net.Socket[] = []
try {
  for (let i = 0; i < STREAMS; i++) {
    const s = net.connect(port, '127.0.0.1')
    await new Promise<void>((r) => s.once('connect', () => r()))
    s.write(`GET /v1/events/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.key}\r\n\r\n`)
    await Bun.sleep(20)
    s.pause()
    sockets.push(s)
  }
  Bun.gc(true)
  const before = process.memoryUsage().rss
  appendEvents(sqliteOf(server.ctx), t.orgId, t.appId, EVENTS)
  await server.hub.check()
  await Bun.sleep(3000)
  Bun.gc(true)
  const grown = (process.memoryUsage().rss - before) / 1048576
  const bytes = (sqliteOf(server.ctx).query('SELECT SUM(LENGTH(data)) + COUNT(*) * 150 AS b FROM events').get() as { b: number }).b / 1048576
  console.log(
    `${STREAMS} paused streams, ${EVENTS} events: RSS +${grown.toFixed(1)} MiB in all (includes writing the events); ` +
      `buffering every event would hold ~${bytes.toFixed(0)} MiB per stream, ${(bytes * STREAMS).toFixed(0)} MiB in all`,
  )
} finally {
  for (const s of sockets) s.destroy()
  await server.close()
}
