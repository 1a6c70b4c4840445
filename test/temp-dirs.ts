/**
 * The temp dirs tests make (`tempDir`), removed once every test file of this process has run
 * (test/preload.ts): a failed or interrupted test must not leave its data dirs, keys and repositories in
 * /tmp run after run. bun test emits no 'exit' event, hence the preload's afterAll.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const made = new Set<string>()

/** A new temp dir under the system's, removed when this test process ends. */
export function tempDir(prefix = 'fixloop-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  made.add(dir)
  return dir
}

export function removeTempDirs(): void {
  for (const dir of made) rmSync(dir, { recursive: true, force: true, maxRetries: 2 })
  made.clear()
}
