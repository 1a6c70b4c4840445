/**
 * Drains to compare: the same reports submitted in the same order to two servers, drained two ways, must
 * end the same (test/sanitize-ahead.test.ts, test/batch-plans.test.ts). Report ids differ between the
 * servers, so rows are compared by submission order; a lead's version is left out (its summary is
 * rewritten once per batch that touched it, and where batches end depends on time).
 */
import type { Database } from 'bun:sqlite'
import { expect } from 'bun:test'
import { call, type Tenant, type TestServer } from './harness'
import { sqliteOf } from './sqlite-of'

export const TEMPLATES = [
  (i: number) => `The checkout button does nothing when I click it after adding ${(i % 3) + 2} items to the cart. Spinner keeps turning.`,
  (i: number) => `Login fails with "invalid session" right after the password reset mail (attempt ${i % 4}). password: hunter${i}secret`,
  (i: number) => `Dark mode makes the invoice table unreadable on the billing page, white text on white. Contact me at user${i}@example.com`,
  (i: number) => `Search for "lamp" returns shoes first; relevance looks broken since this morning. Token sk_live_4eC39HqLyjWDarjtT1zdp7dc${i}`,
  (i: number) => `Export to CSV drops every row after the ${100 * ((i % 5) + 1)}th one in the orders report.`,
  (i: number) => `App crashes on start: TypeError: Cannot read properties of undefined (reading 'total') in cart.js line ${i % 7}`,
]

export function body(i: number) {
  return {
    text: TEMPLATES[i % TEMPLATES.length](i),
    url: `https://shop.example/${['cart', 'login', 'billing', 'search', 'orders', 'app'][i % 6]}?session=abc${i}`,
    severity: ['low', 'medium', 'high'][i % 3],
    consoleLogs: [{ level: 'error', message: `failed with Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig${i}`, ts: 1_763_880_000_000 + i }],
    metadata: { plan: 'pro', apiKey: `k_${i}_secretvalue` },
  }
}

/** Submits `total` reports, in order (job order = submission order), 16 at a time; returns their ids in order. */
export async function submitAll(srv: TestServer, t: Tenant, total: number): Promise<string[]> {
  const ids: string[] = new Array(total)
  for (let i = 0; i < total; i += 16) {
    const batch = Array.from({ length: Math.min(16, total - i) }, (_, k) => i + k)
    // One at a time within the batch's order: ids must follow submission order for the comparison.
    for (const n of batch) {
      const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: body(n) })
      expect(r.status).toBe(201)
      ids[n] = r.body.id
    }
  }
  return ids
}

export async function drain(srv: TestServer): Promise<void> {
  const sqlite = sqliteOf(srv.ctx)
  const left = () => (sqlite.query("SELECT count(*) AS n FROM jobs WHERE kind = 'process'").get() as { n: number }).n
  for (let i = 0; i < 2000 && left() > 0; i++) await srv.worker.tick(500)
  expect(left()).toBe(0)
}

export type Row = Record<string, unknown>
export const rowOf = (db: Database, id: string) =>
  db.query('SELECT id, status, version, text, url, console_logs, metadata, redactions, duplicate_of_id, duplicate_count, theme, consolidated_text FROM feedback WHERE id = ?').get(id) as Row
export const eventsOf = (db: Database, id: string) =>
  (db.query('SELECT type, data FROM events WHERE feedback_id = ? ORDER BY seq').all(id) as { type: string; data: string }[]).map((e) => {
    const d = JSON.parse(e.data) as Record<string, unknown>
    return `${e.type}:${String(d.from ?? '')}>${String(d.to ?? d.status ?? '')}`
  })


/** Every report of A and of B, by submission order, compared column by column and event by event; returns how many are duplicates. */
export function expectSameEnd(a: Database, idsA: string[], b: Database, idsB: string[]): number {
  const index = (ids: string[]) => new Map(ids.map((id, n) => [id, n]))
  const posA = index(idsA)
  const posB = index(idsB)
  const comparable = (r: Row, pos: Map<string, number>) => ({
    ...r,
    id: pos.get(String(r.id)),
    duplicate_of_id: r.duplicate_of_id === null ? null : pos.get(String(r.duplicate_of_id)),
    version: Number(r.duplicate_count) > 0 ? 'a lead' : r.version,
  })
  let duplicates = 0
  for (let n = 0; n < idsA.length; n++) {
    const ra = comparable(rowOf(a, idsA[n]), posA)
    expect(ra).toEqual(comparable(rowOf(b, idsB[n]), posB))
    expect(eventsOf(a, idsA[n])).toEqual(eventsOf(b, idsB[n]))
    if (ra.duplicate_of_id !== null) duplicates++
  }
  return duplicates
}
