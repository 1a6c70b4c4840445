/**
 * Facts about the instance itself, one row per key: the master key check value (so a wrong or missing
 * master.key is refused at start instead of failing every request) and the fixloop version that last
 * migrated the schema (so an older binary can name it when it refuses a newer database).
 */
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

export const instanceMeta = sqliteTable('instance_meta', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  updatedAt: integer('updated_at').notNull(),
})
