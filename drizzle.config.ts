import { defineConfig } from 'drizzle-kit'

/** drizzle-kit reads this to generate SQL migrations from src/db/schema into migrations/. */
export default defineConfig({
  dialect: 'sqlite',
  schema: './src/db/schema/index.ts',
  out: './migrations',
})
