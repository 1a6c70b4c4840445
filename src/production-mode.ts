/**
 * Imported first by main.ts, before Elysia loads: Elysia decides once, at import, whether it runs in
 * production from NODE_ENV, and outside production it pretty-prints the whole request body into every
 * validation error (a 40 KB body of nested arrays took ~10 s and ~4 GB). The executable always runs as
 * production, whatever the environment says.
 */
process.env.NODE_ENV = 'production'
Bun.env.NODE_ENV = 'production'
