/**
 * The temp dirs tests make (`tempDir`), removed after the test file that made them (the preload's afterAll,
 * test/preload.ts, which runs after each file): a failed or interrupted test must not leave its data dirs,
 * keys and repositories in /tmp run after run. bun test emits no 'exit' event, hence the preload.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const made = new Set<string>()

/** A new temp dir under the system's, removed after the current test file. */
export function tempDir(prefix = 'fixloop-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  made.add(dir)
  return dir
}

export function removeTempDirs(): void {
  for (const dir of made) rmSync(dir, { recursive: true, force: true, maxRetries: 2 })
  made.clear()
}
