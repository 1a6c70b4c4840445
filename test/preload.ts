/**
 * Loaded before the test files (bunfig.toml [test] preload). Its afterAll runs after each test file, once
 * the file's own hooks have run (also under --no-isolate, where this module is loaded once per worker):
 * the helpers' per-file servers are stopped (test/file-end.ts), then the file's temp dirs removed.
 */
import { afterAll } from 'bun:test'
import { runFileEnd } from './file-end'
import { removeTempDirs } from './temp-dirs'

afterAll(async () => {
  try {
    await runFileEnd()
  } finally {
    removeTempDirs()
  }
})
