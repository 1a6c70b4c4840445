/**
 * A newcomer's path through the compiled binary: the README's "First feedback, step by step" run as
 * written (its sh block, against a real `fixloop serve`).
 * SQLite only: what it checks is the same on both dialects, and the README's path is the data dir's.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { BINARY, call, ROOT, runBinary, spawnServer, tempDir } from './harness'

let dir: string
let server: Awaited<ReturnType<typeof spawnServer>>

async function cli(...args: string[]): Promise<any> {
  const r = await runBinary([...args, '--data-dir', dir, '--json'])
  if (r.code !== 0) throw new Error(`fixloop ${args.join(' ')}: exit ${r.code}: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

beforeAll(async () => {
  dir = join(tempDir('fixloop-newcomer-'), 'data')
  server = await spawnServer(dir)
}, 60_000)

afterAll(async () => {
  await server?.stop()
})

const HEX24 = '[0-9a-f]{24}'
/** The README's sample output line (`# → {...}`) as a pattern: each "…" stands for an id. */
const samplePattern = (line: string) => new RegExp('^' + line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/…/g, HEX24) + '$', 'm')

describe('the README, step by step', () => {
  const hasJq = Bun.which('jq') !== null && Bun.which('curl') !== null
  test.skipIf(!hasJq)('"First feedback, step by step" runs as written and prints what its comments show (skipped without jq and curl, which the README asks for)', async () => {
    const readme = await Bun.file(join(ROOT, 'README.md')).text()
    const section = readme.slice(readme.indexOf('## First feedback, step by step'))
    const script = /```sh\n([\s\S]*?)```/.exec(section)![1]
    expect(script).toContain('F=./dist/fixloop')
    expect(script).toContain('http://127.0.0.1:8080/')
    const run = script.replaceAll('F=./dist/fixloop', `F=${BINARY}`).replaceAll('http://127.0.0.1:8080', server.url)
    const proc = Bun.spawn(['bash', '-euo', 'pipefail', '-c', run], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', FIXLOOP_DATA_DIR: dir, FIXLOOP_PASSWORD_HASH_MIB: '19' },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    expect(code, stderr).toBe(0)
    // The signing secret step prints 64 hex characters.
    expect(stdout).toMatch(/^[0-9a-f]{64}$/m)
    // Every "# → …" sample line of the block is what the command above it printed.
    const samples = [...script.matchAll(/^# → (.*)$/gm)].map((m) => m[1])
    expect(samples.length).toBeGreaterThanOrEqual(2)
    for (const sample of samples) expect(stdout).toMatch(samplePattern(sample))
  }, 60_000)
})
