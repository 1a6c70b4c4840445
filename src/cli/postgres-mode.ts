/**
 * FIXLOOP_DATABASE_URL on the CLI: `fixloop migrate` applies the PostgreSQL schema. What `serve`, `backup`
 * and `restore` check first is in postgres-guards.ts. Every other command runs on PostgreSQL.
 */
import type { Pool } from 'pg'
import { connectPg } from '../db/pg/connect'
import { applyPgMigrations } from '../db/pg/migrate'
import { refuseForeignPgDatabase, refuseNewerPgSchema } from '../runtime/open-pg'

/** Applies pending PostgreSQL migrations; refuses a database a newer fixloop migrated, or another application's. */
export async function migratePostgres(url: string): Promise<string[]> {
  const pool = await connectPg(url, 2)
  try {
    return await migratePostgresPool(pool, url)
  } finally {
    await pool.end()
  }
}

/** migratePostgres on an open pool (`url` only names the database in the refusal). */
export async function migratePostgresPool(pool: Pool, url: string): Promise<string[]> {
  await refuseNewerPgSchema(pool, url)
  await refuseForeignPgDatabase(pool, url)
  return applyPgMigrations(pool)
}
