/**
 * drizzle is given no schema on either dialect (src/db/sqlite/client.ts and storage.ts, src/db/pg/storage.ts):
 * with one it built a relational table map from the whole schema at each drizzle() (~1 ms CPU warm, ~4 ms
 * cold), at every open (each CLI command, server start and thread) and, on PostgreSQL, in every
 * transaction, for a `db.query` API fixloop never calls. Checked on real databases: no relational tables,
 * and the query builder reads what was written.
 */
import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { describeEachDialect } from './dialects'
import { orgs } from '../src/db/schema'
import { orgs as pgOrgs } from '../src/db/pg/schema'

const relationalTables = (db: unknown) => Object.keys((db as { query?: object }).query ?? {})

describeEachDialect('a connection without a relational schema', (fresh, dialect) => {
  test('no relational table map, at open and (PostgreSQL) in a transaction; the query builder works', async () => {
    const { storage } = await fresh()
    expect(relationalTables(storage.db)).toEqual([])
    if (storage.dialect === 'sqlite') {
      storage.db.insert(orgs).values({ id: 'org_1', name: 'One', createdAt: 1 }).run()
      expect(storage.db.select({ name: orgs.name }).from(orgs).where(eq(orgs.id, 'org_1')).all()).toEqual([{ name: 'One' }])
    } else {
      const names = await storage.tx(async (_client, db) => {
        expect(relationalTables(db)).toEqual([])
        await db.insert(pgOrgs).values({ id: 'org_1', name: 'One', createdAt: 1 })
        return db.select({ name: pgOrgs.name }).from(pgOrgs).where(eq(pgOrgs.id, 'org_1'))
      })
      expect(names).toEqual([{ name: 'One' }])
    }
    expect(dialect).toBe(storage.dialect)
  })
})
