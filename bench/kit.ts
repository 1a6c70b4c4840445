/**
 * Small pieces the loopback benchmarks against the compiled binary share: where the binary is (built when
 * missing), its CLI in JSON mode on a bench's data dir, and a bounded wait.
 */
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'

export const ROOT = resolve(import.meta.dir, '..')
export const BIN = process.env.FIXLOOP_BIN ?? join(ROOT, 'dist', 'fixloop')

/** Builds dist/fixloop when it is missing (FIXLOOP_BIN names another binary instead). */
export function ensureBinary(): void {
  if (!existsSync(BIN)) Bun.spawnSync(['bun', 'run', 'build'], { cwd: ROOT })
}

/** `fixloop <args> --data-dir <dir> --json` with `env`; its JSON answer, or an Error with its stderr. */
export function cliJson(dir: string, env: Record<string, string>, ...args: string[]): Record<string, string> {
  const r = Bun.spawnSync([BIN, ...args, '--data-dir', dir, '--json'], { env })
  if (r.exitCode !== 0) throw new Error(r.stderr.toString())
  return JSON.parse(r.stdout.toString())
}

/** Polls `check` every `everyMs` until it holds or `ms` pass; whether it held. */
export async function waitFor(check: () => boolean, ms: number, everyMs = 20): Promise<boolean> {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (check()) return true
    await Bun.sleep(everyMs)
  }
  return check()
}
