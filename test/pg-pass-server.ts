/**
 * One PostgreSQL for a whole test pass (scripts/test-pg.sh): `bun test/pg-pass-server.ts INFO_FILE` starts
 * a server (test/pg-server.ts), migrates a template database once, writes SharedPgInfo to INFO_FILE when
 * ready, and stops the server (its files removed) on SIGTERM or SIGINT. The pass's test files, given
 * FIXLOOP_TEST_PG_SHARED=INFO_FILE, make their databases there instead of starting a server each.
 */
import { writeFileSync, renameSync } from 'node:fs'
import { startOwnPostgres, type SharedPgInfo } from './pg-server'
import { removeTempDirs } from './temp-dirs'

const infoFile = process.argv[2]
if (!infoFile) {
  console.error('usage: bun test/pg-pass-server.ts INFO_FILE')
  process.exit(2)
}
// Two files at a time, each with its servers' pools: more room than one file's server needs.
const server = await startOwnPostgres({ maxConnections: 400 })
const info: SharedPgInfo = { port: server.port, password: server.password, template: await server.migratedTemplate() }
// Written whole, then renamed: the script waiting for it never reads half a file.
writeFileSync(`${infoFile}.tmp`, JSON.stringify(info))
renameSync(`${infoFile}.tmp`, infoFile)

let stopping = false
const stop = async () => {
  if (stopping) return
  stopping = true
  await server.stop()
  removeTempDirs()
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
// Keeps the process alive until a signal comes.
setInterval(() => {}, 1 << 30)
