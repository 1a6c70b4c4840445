import { defineConfig } from 'drizzle-kit'

/**
 * drizzle-kit reads this to generate the PostgreSQL migrations from src/db/pg/schema into migrations-pg/
 * (`bun run db:generate:pg`). The SQLite migrations have their own config (drizzle.config.ts).
 */
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/pg/schema/index.ts',
  out: './migrations-pg',
})
