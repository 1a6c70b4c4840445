/** The credential generation counter: the PostgreSQL twin of src/db/schema/credentials.ts. */
import { integer, pgTable } from 'drizzle-orm/pg-core'
import { counter } from './columns'

export const credentialGeneration = pgTable('credential_generation', {
  id: integer('id').primaryKey(),
  generation: counter('generation').notNull(),
})
