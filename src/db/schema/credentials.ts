/**
 * One number that rises with every write to `apps` or `api_keys`, from any connection or process (the
 * triggers of migration 0013_intake bump it; triggers are SQL only, drizzle does not model them). The
 * credential cache (src/auth/directory.ts) reads it before each use: one primary-key read tells it
 * whether a key was revoked, an App deleted or a secret rotated since it last looked, while the
 * worker's and the CLI's other commits leave the cache alone.
 */
import { integer, sqliteTable } from 'drizzle-orm/sqlite-core'

export const credentialGeneration = sqliteTable('credential_generation', {
  /** Always 1: the table has one row. */
  id: integer('id').primaryKey(),
  generation: integer('generation').notNull(),
})
