/**
 * The README's two commands on a fresh copy of the repository: `./install.sh` is a production install
 * (what building and serving need, no test tooling), and the test path (scripts/test-setup.sh, run by
 * `bun run test`) adds the tooling without building the binary install.sh has just built.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { ROOT, tempDir } from './harness'

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
const TEST_TOOLING = ['deno', 'playwright-core', 's3rver', 'standardwebhooks', 'edge-runtime']

describe('package.json', () => {
  test('the test command builds only through the staleness check of scripts/test-setup.sh', () => {
    // write-turns.test.ts measures thread scheduling by the wall clock: it runs alone, after the parallel pass.
    expect(pkg.scripts.test).toBe('bash scripts/test-setup.sh && bun test --timeout 60000 --parallel=3 --path-ignore-patterns=test/write-turns.test.ts && bun test --timeout 60000 test/write-turns.test.ts && bash scripts/test-pg.sh')
  })
  test('no unused load generator (autocannon); the widget build dependency (esbuild) is a dependency', () => {
    expect(pkg.devDependencies.autocannon).toBeUndefined()
    expect(pkg.dependencies.autocannon).toBeUndefined()
    expect(pkg.dependencies.esbuild).toBeDefined()
  })
})

describe('a fresh copy', () => {
  const copy = tempDir('fixloop-install-')
  afterAll(() => rmSync(copy, { recursive: true, force: true }))

  test('install.sh installs no test tooling and builds; the test setup adds the tooling and does not rebuild', async () => {
    // The tracked files, as a fresh clone has them.
    const files = Bun.spawnSync(['git', 'ls-files', '-z'], { cwd: ROOT }).stdout.toString().split('\0').filter(Boolean)
    for (const f of files) {
      if (!existsSync(join(ROOT, f))) continue
      mkdirSync(dirname(join(copy, f)), { recursive: true })
      cpSync(join(ROOT, f), join(copy, f))
    }
    const run = async (cmd: string[]) => {
      const proc = Bun.spawn(cmd, { cwd: copy, env: { ...process.env, CI: 'true' }, stdout: 'pipe', stderr: 'pipe' })
      const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
      return { code, out: stdout + stderr }
    }
    const install = await run(['bash', './install.sh'])
    expect(install.code).toBe(0)
    expect(install.out).not.toContain('chromium')
    const installed = (name: string) => existsSync(join(copy, 'node_modules', name, 'package.json'))
    expect(TEST_TOOLING.filter(installed)).toEqual([])
    expect(installed('elysia')).toBe(true)
    const binary = join(copy, 'dist', 'fixloop')
    expect((await run([binary, '-v'])).out.trim()).toBe(pkg.version)
    const builtAt = statSync(binary).mtimeMs

    const setup = await run(['bash', 'scripts/test-setup.sh'])
    expect(setup.code).toBe(0)
    expect(setup.out).toContain('dist/fixloop is up to date')
    expect(statSync(binary).mtimeMs).toBe(builtAt)
    expect(TEST_TOOLING.filter((n) => !installed(n))).toEqual([])
    expect(existsSync(join(copy, 'packages', 'client', 'dist', 'index.js'))).toBe(true)
  }, 240_000)
})
