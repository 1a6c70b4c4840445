/**
 * The data dirs of a multi-node test and the CLI on them: every node and every CLI call gets a data dir of
 * its own (in cluster mode they share only PostgreSQL and Redis, as separate machines would), all removed
 * by `removeDirs` after the file.
 */
import { rmSync } from 'node:fs'
import { runBinary, tempDir } from './harness'

export function clusterDirs(prefix: string, env: () => Record<string, string>) {
  const dirs: string[] = []
  const dataDir = () => {
    const d = tempDir(prefix)
    dirs.push(d)
    return d
  }
  /** `fixloop …args --json` on a fresh data dir; its parsed output, or an error with its stderr. */
  const cli = async (args: string[]): Promise<any> => {
    const r = await runBinary([...args, '--json', '--data-dir', dataDir()], env())
    if (r.code !== 0) throw new Error(`fixloop ${args.join(' ')}: exit ${r.code}: ${r.stderr}`)
    return JSON.parse(r.stdout)
  }
  const removeDirs = () => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  }
  return { dataDir, cli, removeDirs }
}
