/**
 * kill -9 while reports are submitted, processed and moved: a status change and its event commit
 * together or not at all. After each kill the database (read directly, before any restart) must tell
 * one story: every report has its feedback.received event and every such event its report; each report's
 * status_changed chain starts at `received`, links up (from = previous to) and ends at the stored
 * status; seq has no gap. The compiled binary is killed three times on one data dir, at different points.
 */
import { expect, test } from 'bun:test'
import type { Database } from 'bun:sqlite'
import { spawnServer } from './harness'
import { cliTenant, crashTestDataDir, openDataDb } from './helpers-lifecycle'

const CLIENTS = 6
const ENV = { FIXLOOP_RATE_LIMIT_MULTIPLIER: '10000' }
/** Each round kills the server once this many of its submissions are acknowledged. */
const KILL_AFTER = [150, 60, 250]
const ROUND_DEADLINE_MS = 10_000

const { dir, stops } = crashTestDataDir('fixloop-lifecycle-crash-')

/** Every inconsistency between stored reports and their events (empty when they tell one story). */
function inconsistencies(db: Database, orgId: string): string[] {
  const problems: string[] = []
  const rows = db.query('SELECT id, status FROM feedback WHERE org_id = ?').all(orgId) as { id: string; status: string }[]
  const events = db.query('SELECT seq, type, data FROM events WHERE org_id = ? ORDER BY seq').all(orgId) as { seq: number; type: string; data: string }[]
  events.forEach((e, i) => e.seq !== i + 1 && problems.push(`seq ${e.seq} at position ${i + 1}`))
  const received = new Map<string, number>()
  const chains = new Map<string, { from: string; to: string }[]>()
  for (const e of events) {
    const data = JSON.parse(e.data) as { feedbackId: string; from: string; to: string }
    if (e.type === 'feedback.received') received.set(data.feedbackId, (received.get(data.feedbackId) ?? 0) + 1)
    if (e.type === 'feedback.status_changed') chains.set(data.feedbackId, [...(chains.get(data.feedbackId) ?? []), data])
  }
  const stored = new Set(rows.map((r) => r.id))
  for (const id of received.keys()) if (!stored.has(id)) problems.push(`${id}: an event without its report`)
  for (const id of chains.keys()) if (!stored.has(id)) problems.push(`${id}: a move without its report`)
  for (const r of rows) {
    if (received.get(r.id) !== 1) problems.push(`${r.id}: ${received.get(r.id) ?? 0} feedback.received events`)
    let at = 'received'
    for (const m of chains.get(r.id) ?? []) {
      if (m.from !== at) problems.push(`${r.id}: move ${m.from}→${m.to} after reaching ${at}`)
      at = m.to
    }
    if (at !== r.status) problems.push(`${r.id}: stored ${r.status}, events end at ${at}`)
  }
  return problems
}

test('status and events survive kill -9 together or not at all', async () => {
  const dataDir = dir()
  const t = await cliTenant(dataDir)
  let total = 0
  for (const [round, killAfter] of KILL_AFTER.entries()) {
    const server = await spawnServer(dataDir, ENV)
    stops.push(server.stop)
    const acked: string[] = []
    let killed = false
    const started = Date.now()
    const post = (path: string, method: string, auth: string, body: unknown) =>
      fetch(`${server.url}${path}`, { method, headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
    const client = async (c: number) => {
      for (let n = 0; !killed && Date.now() - started < ROUND_DEADLINE_MS; n++) {
        try {
          const res = await post('/v1/feedback', 'POST', t.pub, { text: `round ${round} client ${c} report ${n}: the export of order ${n * 7 + c} hangs` })
          if (res.status !== 201) throw new Error(`unexpected ${res.status}`)
          acked.push(((await res.json()) as { id: string }).id)
          // Customer moves race the worker's moves on the same rows.
          if (n % 5 === 4) await post(`/v1/feedback/${acked[acked.length - 3]}`, 'PATCH', t.key, { status: n % 10 === 4 ? 'archived' : 'queued' })
          if (acked.length >= killAfter) {
            killed = true
            server.proc.kill(9)
          }
        } catch (e) {
          if (!killed) throw e
        }
      }
    }
    await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)))
    expect(killed).toBe(true)
    await server.proc.exited
    expect(server.proc.signalCode).toBe('SIGKILL')

    const db = openDataDb(dataDir)
    try {
      expect(inconsistencies(db, t.orgId)).toEqual([])
      const statuses = db.query('SELECT status, COUNT(*) AS n FROM feedback GROUP BY status').all() as { status: string; n: number }[]
      total = statuses.reduce((n, s) => n + s.n, 0)
      // The kill landed while the lifecycle was busy: some reports had moved on, some had not.
      expect(statuses.some((s) => s.status !== 'received')).toBe(true)
    } finally {
      db.close()
    }
  }
  expect(total).toBeGreaterThanOrEqual(KILL_AFTER.reduce((a, b) => a + b, 0))
}, 60_000)

test('the checker itself catches a status written without its event, and an event without its report', () => {
  const db = openDataDb(dir())
  try {
    const orgId = (db.query('SELECT id FROM orgs LIMIT 1').get() as { id: string }).id
    const row = db.query('SELECT id, status FROM feedback WHERE org_id = ? LIMIT 1').get(orgId) as { id: string; status: string }
    const other = row.status === 'archived' ? 'failed' : 'archived'
    const ghost = 'f'.repeat(24)
    expect(inconsistencies(db, orgId)).toEqual([])
    db.run('BEGIN')
    try {
      db.query('UPDATE feedback SET status = ? WHERE id = ?').run(other, row.id)
      const seq = (db.query('SELECT MAX(seq) AS s FROM events WHERE org_id = ?').get(orgId) as { s: number }).s + 1
      db.query("INSERT INTO events (id, org_id, app_id, seq, type, data, created_at) VALUES (?, ?, NULL, ?, 'feedback.received', ?, 0)").run('e'.repeat(24), orgId, seq, JSON.stringify({ feedbackId: ghost, status: 'received' }))
      expect(inconsistencies(db, orgId)).toEqual([`${ghost}: an event without its report`, `${row.id}: stored ${other}, events end at ${row.status}`])
    } finally {
      db.run('ROLLBACK')
    }
    expect(inconsistencies(db, orgId)).toEqual([])
  } finally {
    db.close()
  }
})
