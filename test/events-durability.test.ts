/**
 * The compiled binary under kill -9: every event is delivered at least once with a stable webhook-id
 * and the pull feed stays exact; an SSE client resumes by Last-Event-ID across a restart. Plus the
 * `fixloop webhook …` CLI as CONTRACT.md fixes it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { rmSync } from 'node:fs'
import { call, eventually, runBinary, spawnServer, tempDir } from './harness'
import { ensureBinary } from './helpers-lifecycle'
import { appendEvents, SseClient } from './events-helpers'
import { LAST_SEQ_SQL } from '../src/db/sqlite/outbox'
import { Receiver } from './webhook-receiver'

const ENV = { FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1', FIXLOOP_WEBHOOK_RETRY_SCALE: '0.001', FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' }

let dataDir: string
let rx: Receiver
let orgId: string
let key: string
let appId: string

async function cli(args: string[], env: Record<string, string> = ENV) {
  return runBinary([...args, '--data-dir', dataDir], env)
}

beforeAll(async () => {
  ensureBinary()
  dataDir = tempDir()
  rx = new Receiver()
  orgId = JSON.parse((await cli(['org', 'create', '--name', 'Acme', '--json'])).stdout).id
  key = JSON.parse((await cli(['key', 'create', '--org', orgId, '--json'])).stdout).key
  appId = JSON.parse((await cli(['app', 'create', '--org', orgId, '--name', 'Web', '--json'])).stdout).id
})
afterAll(() => {
  rx.stop()
  rmSync(dataDir, { recursive: true, force: true })
})

describe('fixloop webhook CLI', () => {
  test('create prints exactly {id,url,events,secret}; list, deliveries, redeliver, delete', async () => {
    const made = await cli(['webhook', 'create', '--org', orgId, '--url', rx.url + '/ok/cli', '--events', 'webhook.test,feedback.received', '--json'])
    expect(made.code).toBe(0)
    const w = JSON.parse(made.stdout)
    expect(Object.keys(w)).toEqual(['id', 'url', 'events', 'secret'])
    expect(w.events).toEqual(['webhook.test', 'feedback.received'])
    expect(w.secret).toMatch(/^whsec_/)
    rx.secrets.set('/ok/cli', w.secret)
    const list = JSON.parse((await cli(['webhook', 'list', '--org', orgId, '--json'])).stdout)
    expect(list.data.map((x: { id: string }) => x.id)).toEqual([w.id])
    expect(JSON.stringify(list)).not.toContain(w.secret)
    const server = await spawnServer(dataDir, ENV)
    try {
      expect((await cli(['webhook', 'test', w.id, '--json'])).code).toBe(0)
      await eventually(() => rx.at('/ok/cli').length >= 1, 10_000)
      expect(rx.at('/ok/cli')[0].verified).toBe(true)
      const log = JSON.parse((await cli(['webhook', 'deliveries', w.id, '--json'])).stdout)
      expect(log.data[0]).toMatchObject({ status: 'succeeded', eventType: 'webhook.test' })
      expect((await cli(['webhook', 'redeliver', log.data[0].id, '--json'])).code).toBe(0)
      await eventually(() => rx.at('/ok/cli').length >= 2, 10_000)
      expect(rx.at('/ok/cli')[1].id).toBe(rx.at('/ok/cli')[0].id)
    } finally {
      await server.stop()
    }
    const del = await cli(['webhook', 'delete', w.id, '--json'])
    expect(del.code).toBe(0)
    expect(JSON.parse((await cli(['webhook', 'list', '--org', orgId, '--json'])).stdout).data).toEqual([])
  })

  test('errors go to stderr with a non-zero exit: loopback refused without the env, unknown ids, bad flags', async () => {
    const refused = await cli(['webhook', 'create', '--org', orgId, '--url', 'http://127.0.0.1:9/x', '--json'], {})
    expect(refused.code).not.toBe(0)
    expect(refused.stdout).toBe('')
    expect(refused.stderr).toContain('url_not_allowed')
    expect((await cli(['webhook', 'create', '--org', 'ffffffffffffffffffffffff', '--url', rx.url, '--json'])).code).not.toBe(0)
    expect((await cli(['webhook', 'delete', 'ffffffffffffffffffffffff'])).code).not.toBe(0)
    expect((await cli(['webhook', 'redeliver', 'ffffffffffffffffffffffff'])).code).not.toBe(0)
    expect((await cli(['webhook', 'list', '--org', orgId, '--url', 'x'])).code).toBe(2)
    expect((await cli(['webhook', 'create', '--org', orgId, '--url', rx.url, '--events', 'nope.nope', '--json'])).stderr).toContain('invalid_body')
  })
})

describe('kill -9', () => {
  test('during a burst: every event delivered at least once, same webhook-id, the pull feed exact', async () => {
    const w = JSON.parse((await cli(['webhook', 'create', '--org', orgId, '--url', rx.url + '/ok/burst', '--json'])).stdout)
    rx.secrets.set('/ok/burst', w.secret)
    const db = new Database(join(dataDir, 'fixloop.db'))
    db.run('PRAGMA busy_timeout = 5000')
    const first = await spawnServer(dataDir, ENV)
    const total = 400
    let written = 0
    // Events are written by another process than the server, as the CLI or a worker thread would.
    const writer = (async () => {
      while (written < total) {
        appendEvents(db, orgId, appId, 5)
        written += 5
        await Bun.sleep(2)
      }
    })()
    await eventually(() => rx.at('/ok/burst').length >= 60, 20_000)
    first.proc.kill('SIGKILL')
    await first.proc.exited
    await writer
    const second = await spawnServer(dataDir, ENV)
    try {
      const ids = await eventually(async () => {
        const seen = new Set(rx.at('/ok/burst').map((r) => r.id))
        return seen.size >= total ? seen : undefined
      }, 30_000)
      expect(rx.at('/ok/burst').every((r) => r.verified)).toBe(true)
      // The pull feed: seq 1..N without gaps or duplicates, and every one of its ids was delivered.
      const feed: { id: string; seq: number }[] = []
      let after = 0
      for (;;) {
        const r = await call(second.url, 'GET', `/v1/events?after=${after}&limit=500&types=feedback.status_changed`, { auth: key })
        feed.push(...r.body.data)
        if (r.body.data.length === 0) break
        after = r.body.nextAfter
      }
      expect(feed.length).toBe(total)
      const seqs = feed.map((e) => e.seq)
      expect(new Set(seqs).size).toBe(total)
      expect(seqs).toEqual([...seqs].sort((x, y) => x - y))
      for (const e of feed) expect(ids.has(e.id)).toBe(true)
    } finally {
      await second.stop()
      db.close()
    }
  }, 90_000)

  test('SSE resumes exactly by Last-Event-ID across a restart', async () => {
    const db = new Database(join(dataDir, 'fixloop.db'))
    db.run('PRAGMA busy_timeout = 5000')
    const start = (db.query(LAST_SEQ_SQL).get(orgId) as { last_seq: number }).last_seq
    const one = await spawnServer(dataDir, ENV)
    const s1 = await SseClient.open(`${one.url}/v1/events/stream?after=${start}`, key)
    appendEvents(db, orgId, appId, 10)
    await eventually(() => s1.messages.length >= 10, 10_000)
    one.proc.kill('SIGKILL')
    await one.proc.exited
    await s1.close()
    appendEvents(db, orgId, appId, 7) // written while no server runs
    const two = await spawnServer(dataDir, ENV)
    try {
      const s2 = await SseClient.open(`${two.url}/v1/events/stream?after=0`, key, { 'last-event-id': s1.lastEventId! })
      appendEvents(db, orgId, appId, 3)
      await eventually(() => s2.messages.length >= 10, 10_000)
      await Bun.sleep(200)
      const all = [...s1.seqs, ...s2.seqs]
      expect(all).toEqual(Array.from({ length: 20 }, (_, i) => start + 1 + i))
      await s2.close()
    } finally {
      await two.stop()
      db.close()
    }
  }, 60_000)
})
