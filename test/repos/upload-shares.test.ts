/**
 * An upload several reports list (src/db/sql/upload-shares.ts), on both dialects: the first report to
 * reference it owns it, the others share it; the migration that made the table (SQLite 0040, PostgreSQL
 * 0026) finds the sharers stored before it, in attachments and in the component target's screenshot.
 */
import { expect, test } from 'bun:test'
import { applyMigrations } from '../../src/db/sqlite/migrate'
import { applyPgMigrations } from '../../src/db/pg/migrate'
import { MIGRATIONS } from '../../src/db/migrations'
import { PG_MIGRATIONS } from '../../src/db/pg/migrations'
import { describeEachDialect, type FreshStore } from '../dialects'
import { insertReport, seedOrgApp, sql } from './store-fixtures'
import { markReferencedPg } from '../../src/db/pg/uploads'
import { UploadGoneError } from '../../src/modules/uploads/repo'

const KEY = 'a1/0123456789abcdef0123456789abcdef'
const OTHER = 'a1/fedcba9876543210fedcba9876543210'

async function issue(s: FreshStore, key: string) {
  await s.store.uploads.insert({ key, appId: 'a1', orgId: 'o1', kind: 'screenshot', contentType: 'image/png', byteSize: 10, filename: null, createdAt: 1, expiresAt: 2 })
}
const shares = (s: FreshStore) => sql<{ key: string; feedback_id: string }>(s, 'SELECT key, feedback_id FROM upload_shares ORDER BY key, feedback_id')

const draft = { orgId: 'o1', appId: 'a1', severity: null, text: 'text', url: null, userAgent: null, viewport: null, consoleLogs: null, attachments: null, componentTarget: null, metadata: null, submittedMode: 'public' as const, externalUserId: null, email: null, submitterName: null, userContext: null }
const idOf = (o: unknown) => (o as { result: { body: { id: string } } }).result.body.id

describeEachDialect('upload shares', (fresh, dialect) => {
  test('the migration records, for reports stored before it, every report that lists an upload another owns', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await issue(s, KEY)
    await issue(s, OTHER)
    for (const id of ['f1', 'f2', 'f3', 'f4']) await insertReport(s, id)
    const listing = (keys: string[]) => JSON.stringify(keys.map((key) => ({ key, kind: 'screenshot', contentType: 'image/png', byteSize: 10 })))
    await sql(s, 'UPDATE feedback SET attachments = ? WHERE id = ?', [listing([KEY, OTHER]), 'f1'])
    await sql(s, 'UPDATE feedback SET attachments = ? WHERE id = ?', [listing([KEY]), 'f2'])
    await sql(s, 'UPDATE feedback SET component_target = ? WHERE id = ?', [JSON.stringify({ name: 'Button', screenshotKey: KEY }), 'f3'])
    await sql(s, 'UPDATE feedback SET attachments = ? WHERE id = ?', ['not json', 'f4'])
    await sql(s, "UPDATE uploads SET feedback_id = 'f1'")
    // The table as before the migration: gone, and the migration not recorded as applied.
    const name = s.dialect === 'sqlite' ? '0040_upload_shares' : '0026_upload_shares'
    await sql(s, 'DROP TABLE upload_shares')
    await sql(s, 'DELETE FROM __migrations WHERE name = ?', [name])
    if (s.storage.dialect === 'sqlite') expect(applyMigrations(s.storage.sqlite, MIGRATIONS)).toEqual([name])
    else expect(await applyPgMigrations(s.storage.pool, PG_MIGRATIONS)).toEqual([name])
    expect(await shares(s)).toEqual([
      { key: KEY, feedback_id: 'f2' },
      { key: KEY, feedback_id: 'f3' },
    ])
  })

  test('a submission owns what nobody owned and shares the rest; the same key twice in one report is its own', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await issue(s, KEY)
    await issue(s, OTHER)
    const submit = (keys: string[]) =>
      s.store.feedback.submit(
        { orgId: 'o1', appId: 'a1', severity: null, text: 'text', url: null, userAgent: null, viewport: null, consoleLogs: null, attachments: null, componentTarget: null, metadata: null, submittedMode: 'public', externalUserId: null, email: null, submitterName: null, userContext: null },
        keys,
        null,
      )
    const first = await submit([KEY, KEY])
    const second = await submit([KEY, OTHER])
    const idOf = (o: Awaited<ReturnType<typeof submit>>) => (o as { result: { body: { id: string } } }).result.body.id
    const owners = await sql<{ key: string; feedback_id: string }>(s, 'SELECT key, feedback_id FROM uploads ORDER BY key')
    expect(owners).toEqual([
      { key: KEY, feedback_id: idOf(first) },
      { key: OTHER, feedback_id: idOf(second) },
    ])
    expect(await shares(s)).toEqual([{ key: KEY, feedback_id: idOf(second) }])
  })

  test('an upload removed after the submission checked it (its report erased, or collected unreferenced) fails that submission, which stores nothing', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await issue(s, KEY)
    await issue(s, OTHER)
    const owner = idOf(await s.store.feedback.submit(draft, [KEY], null))
    // The owner is erased: its upload is detached, on its way out.
    expect(await s.store.reporters.removeReports('o1', [owner])).toEqual({ removed: 1, uploadKeys: [KEY] })
    const reports = async () => (await sql<{ n: number }>(s, 'SELECT COUNT(*) AS n FROM feedback'))[0].n
    const gone = await s.store.feedback.submit(draft, [KEY], null).catch((e) => e)
    expect(gone).toBeInstanceOf(UploadGoneError)
    expect(gone.keys).toEqual([KEY])
    expect(Number(await reports())).toBe(0)
    // The collection retires a never-referenced upload before removing its object.
    expect(await s.store.uploads.retireUnreferenced(OTHER)).toBe(true)
    expect(await s.store.feedback.submit(draft, [OTHER], null).catch((e) => e)).toBeInstanceOf(UploadGoneError)
    expect(Number(await reports())).toBe(0)
    // A key a report took meanwhile is not retired (the collection leaves its object).
    const third = 'a1/00000000000000000000000000000003'
    await issue(s, third)
    const taker = idOf(await s.store.feedback.submit(draft, [third], null))
    expect(await s.store.uploads.retireUnreferenced(third)).toBe(false)
    expect((await sql<{ feedback_id: string }>(s, 'SELECT feedback_id FROM uploads WHERE key = ?', [third]))[0].feedback_id).toBe(taker)
  })

  // SQLite has one writer: the submission's transaction and the erasure's never interleave.
  test.skipIf(dialect !== 'pg')('PostgreSQL: an erasure deciding over an upload waits for a submission attaching it, then hands the upload to that report', async () => {
    const s = await fresh()
    if (s.storage.dialect !== 'pg') throw new Error('PostgreSQL only')
    await seedOrgApp(s)
    await issue(s, KEY)
    const owner = idOf(await s.store.feedback.submit(draft, [KEY], null))
    await insertReport(s, 'f-late')
    // The late submission's transaction has marked the key (shared) and not committed yet.
    const client = await s.storage.pool.connect()
    try {
      await client.query('BEGIN')
      await markReferencedPg(client, 'f-late', [KEY])
      let done = false
      const removal = s.store.reporters.removeReports('o1', [owner]).finally(() => (done = true))
      await Bun.sleep(400)
      expect(done).toBe(false) // it waits for the submission's lock on the key
      await client.query('COMMIT')
      expect(await removal).toEqual({ removed: 1, uploadKeys: [] }) // nothing to delete: the object is the late report's now
    } finally {
      client.release()
    }
    expect((await sql<{ feedback_id: string }>(s, 'SELECT feedback_id FROM uploads WHERE key = ?', [KEY]))[0].feedback_id).toBe('f-late')
  })
})
