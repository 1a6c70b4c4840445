/**
 * Real small file systems for the tests of a full disk, no inodes or a read-only mount: a tmpfs mounted
 * on a temp dir. Where this machine cannot mount (not root, a container without the capability) the test
 * skips with a warning naming the check instead of failing. Each test file unmounts what it mounted:
 * `afterAll(unmountTmpfs)`.
 */
import { readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from './harness'

const mounted: string[] = []

/** A tmpfs mounted with `options` (`size=24m`, `nr_inodes=64`, …) at `dir` (a new temp dir by default); undefined where mount is refused. */
export function mountTmpfs(check: string, options: string, dir = tempDir('fixloop-tmpfs-')): string | undefined {
  const r = Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', options, 'tmpfs', dir])
  if (r.exitCode !== 0) {
    console.warn(`skipped ${check}: mount -t tmpfs failed: ${r.stderr.toString().trim() || `exit ${r.exitCode}`}`)
    return undefined
  }
  mounted.push(dir)
  return dir
}

/** Unmounts one (lazily: a server that still holds a file there lets go when it exits), or all of this file's. */
export function unmountTmpfs(dir?: string): void {
  for (const m of dir === undefined ? mounted.splice(0) : mounted.splice(mounted.indexOf(dir), mounted.includes(dir) ? 1 : 0)) Bun.spawnSync(['umount', '-l', m])
}

/**
 * Keeps the file system at `dir` full until `stop()`: fills every byte, again and again (each WAL
 * checkpoint frees pages that a write would otherwise find). `stop()` ends the filling and frees the room.
 */
export function keepFull(dir: string): { stop(): Promise<void> } {
  let filling = true
  let n = 0
  const filled = (async () => {
    while (filling) {
      Bun.spawnSync(['dd', 'if=/dev/zero', `of=${join(dir, `filler${n++}`)}`, 'bs=4k', 'count=100000'])
      Bun.spawnSync(['dd', 'if=/dev/zero', `of=${join(dir, `filler${n++}`)}`, 'bs=512', 'count=100000'])
      await Bun.sleep(100)
    }
  })()
  return {
    async stop() {
      if (!filling) return
      filling = false
      await filled
      for (const f of readdirSync(dir).filter((f) => f.startsWith('filler'))) rmSync(join(dir, f))
    },
  }
}
