/** src/db/pg/outbox.ts on a real PostgreSQL: several events of one Org in one statement take the next seqs in order. */
import { expect, test } from 'bun:test'
import { freshStore } from './dialects'
import { appendEventPg, appendEventsPg } from '../src/db/pg/outbox'
import type { PgStorage } from '../src/db/storage'

test('appendEventsPg: the next seqs in the given order, after a single append; each Org its own counter; one Org per call', async () => {
  const s = await freshStore('pg')
  const { pool } = s.storage as PgStorage
  const ev = (orgId: string, i: number) => ({ orgId, appId: 'a1', type: 'feedback.status_changed' as const, data: { feedbackId: `f${i}`, from: 'received' as const, to: 'sanitizing' as const } })
  expect(await appendEventPg(pool, s.clock, ev('o1', 0))).toBe(1)
  await appendEventsPg(pool, s.clock, [ev('o1', 1), ev('o1', 2), ev('o1', 3)])
  await appendEventsPg(pool, s.clock, [ev('o2', 9), ev('o2', 8)])
  const rows = (await pool.query<{ org_id: string; seq: number; feedback_id: string; data: string }>('SELECT org_id, seq, feedback_id, data FROM events ORDER BY org_id, seq')).rows
  expect(rows.map((r) => [r.org_id, Number(r.seq), r.feedback_id])).toEqual([['o1', 1, 'f0'], ['o1', 2, 'f1'], ['o1', 3, 'f2'], ['o1', 4, 'f3'], ['o2', 1, 'f9'], ['o2', 2, 'f8']])
  expect(JSON.parse(rows[1].data)).toEqual({ feedbackId: 'f1', from: 'received', to: 'sanitizing' })
  expect(Number((await pool.query("SELECT last_seq FROM event_counters WHERE org_id = 'o1'")).rows[0].last_seq)).toBe(4)
  expect(await appendEventPg(pool, s.clock, ev('o1', 5))).toBe(5)
  await expect(appendEventsPg(pool, s.clock, [ev('o1', 6), ev('o2', 7)])).rejects.toThrow('one Org')
})
