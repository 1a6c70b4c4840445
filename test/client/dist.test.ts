/**
 * The published shape of @fixloop/client: the ESM and CJS builds run the same calls against the
 * compiled server under Node, Bun, Deno and an edge VM; publint and arethetypeswrong accept the
 * package; the core stays within its size budget; the generated types match the server's /openapi.json.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from '../harness'
import { seededServer, type Seeded } from './fixtures'

const PKG = join(ROOT, 'packages', 'client')
const SMOKE = join(ROOT, 'test', 'client', 'smoke')
let s: Seeded

function run(cmd: string[], env: Record<string, string> = {}, cwd = ROOT) {
  const p = Bun.spawnSync(cmd, { cwd, env: { ...process.env, ...env }, stdout: 'pipe', stderr: 'pipe' })
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() }
}

let buildOutput = ''
beforeAll(async () => {
  // `bun run build:client` (part of `bun run test`) builds it; build here too so the file runs alone.
  const built = run(['bun', join(PKG, 'scripts', 'build.ts')])
  if (built.code !== 0) throw new Error(`client build failed: ${built.stderr}`)
  buildOutput = built.stdout
  s = await seededServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
}, 120_000)
afterAll(() => s?.stop())

const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name)
const RUNTIMES: [string, string[]][] = [
  ['node ESM', ['node', join(SMOKE, 'run.mjs')]],
  ['node CJS', ['node', join(SMOKE, 'run.cjs')]],
  ['bun ESM', ['bun', join(SMOKE, 'run.mjs')]],
  ['bun CJS', ['bun', join(SMOKE, 'run.cjs')]],
  ['deno ESM', [bin('deno'), 'run', '--allow-net=127.0.0.1', '--allow-env', '--allow-read', join(SMOKE, 'run.mjs')]],
  ['edge VM (CJS bundle)', ['node', join(SMOKE, 'run-edge.mjs')]],
]

describe('@fixloop/client builds run everywhere', () => {
  for (const [name, cmd] of RUNTIMES) {
    test(name, () => {
      const tag = name.replace(/\W+/g, '-')
      const r = run(cmd, { FIXLOOP_URL: s.url, FIXLOOP_KEY: s.key, FIXLOOP_PUB: s.pub, FIXLOOP_APP: s.appId, FIXLOOP_SECRET: s.secret, FIXLOOP_TAG: tag })
      expect(r.stderr).not.toContain('Error')
      expect(r.code).toBe(0)
      const out = JSON.parse(r.stdout.trim().split('\n').pop()!)
      expect(out.apps).toBe(1)
      expect(out.pagedInOrder).toBe(true)
      expect(out.error).toEqual({ isFixloopError: true, isInvalid: true, code: 'invalid_id', status: 400, requestId: 'string' })
      expect(out.mode).toBe('private')
      if (name.startsWith('edge')) expect(out.nodeGlobals).toBe(false)
    }, 60_000)
  }
})

describe('@fixloop/client package checks', () => {
  test('dist has index.js, index.cjs, index.d.ts and index.d.cts', () => {
    for (const f of ['index.js', 'index.cjs', 'index.d.ts', 'index.d.cts']) expect(existsSync(join(PKG, 'dist', f))).toBe(true)
  })

  test('the core is within its 6 KB min+gzip budget (printed by the build)', () => {
    const m = buildOutput.match(/core (\d+) B of (\d+) B budget/)
    expect(m).not.toBeNull()
    expect(Number(m![1])).toBeLessThanOrEqual(6 * 1024)
  })

  test('publint finds nothing', () => {
    const r = run([bin('publint'), 'run', PKG])
    expect(r.stdout + r.stderr).toContain('All good')
    expect(r.code).toBe(0)
  }, 60_000)

  test('arethetypeswrong: ESM, CJS and bundler resolutions all typed correctly', () => {
    const r = run([bin('attw'), '--pack', PKG, '--format', 'ascii'])
    expect(r.stdout).toContain('No problems found')
    expect(r.code).toBe(0)
  }, 60_000)

  test('the generated types are up to date with /openapi.json', () => {
    const r = run(['bun', join(PKG, 'scripts', 'gen-types.ts'), '--check'])
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
  }, 60_000)
})
