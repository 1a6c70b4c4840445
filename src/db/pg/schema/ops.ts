/** Facts about the instance (master key check, schema version): the PostgreSQL twin of src/db/schema/ops.ts. */
import { pgTable, text } from 'drizzle-orm/pg-core'
import { epochMs } from './columns'

export const instanceMeta = pgTable('instance_meta', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  updatedAt: epochMs('updated_at').notNull(),
})
