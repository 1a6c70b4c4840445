/**
 * The temp dirs tests make (harness.ts `tempDir`), removed once every test file of this process has run
 * (test/preload.ts): a failed or interrupted test must not leave its data dirs, keys and repositories in
 * /tmp run after run. bun test emits no 'exit' event, hence the preload's afterAll.
 */
import { rmSync } from 'node:fs'

const made = new Set<string>()

export function rememberTempDir(dir: string): void {
  made.add(dir)
}

export function removeTempDirs(): void {
  for (const dir of made) rmSync(dir, { recursive: true, force: true, maxRetries: 2 })
  made.clear()
}
