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
  test('the test command builds only through the staleness check of scripts/test-setup.sh, runs every pass and ends with one total', () => {
    expect(pkg.scripts.test).toBe('bash scripts/test.sh')
    const script = readFileSync(join(ROOT, 'scripts/test.sh'), 'utf8')
    const steps = script.split('\n').filter((l) => /^(bash scripts\/test-setup\.sh|run )/.test(l))
    // The files that time what they check (write turns by the wall clock; compiled nodes with wake-up lags,
    // take-over bounds, keyed submissions that must not wait out a deadlock) run alone, one after another, after the parallel pass: write turns first, in a run of
    // its own (after the nodes in one run, their stopping processes still used the CPU it times).
    expect(steps).toEqual([
      'bash scripts/test-setup.sh || exit 1',
      'run bun test --timeout 60000 --parallel=3 --no-isolate "${timings[@]}" "--path-ignore-patterns=$ALONE"',
      'run bun test --timeout 60000 test/write-turns.test.ts',
      'run bun test --timeout 60000 test/cluster-mode.test.ts test/cluster-clock.test.ts test/pg-intake-deadlock.test.ts',
      'run env FIXLOOP_TEST_UPDATE_TIMINGS="$update_timings" bash scripts/test-pg.sh',
    ])
    expect(script).toContain("ALONE='test/{write-turns,cluster-mode,cluster-clock,pg-intake-deadlock}.test.ts'")
    expect(script).toContain('echo "total: ${pass} passed, ${fail} failed, ${skip} skipped"')
  })

  test('the total counts every run, and a run that failed without a count still fails it', async () => {
    // scripts/test.sh's summing, run on four summaries as bun prints them (the last run crashed: exit 1, no count).
    const dir = tempDir('fixloop-total-')
    const fakeBin = join(dir, 'bin')
    mkdirSync(fakeBin)
    const fake = (name: string, body: string) => Bun.write(join(fakeBin, name), `#!/usr/bin/env bash\n${body}\n`).then(() => Bun.spawnSync(['chmod', '+x', join(fakeBin, name)]))
    await fake('bun', 'case "$*" in *--parallel*) printf " 10 pass\\n 1 skip\\n 1 fail\\n";; *) printf " 2 pass\\n 0 fail\\n";; esac; exit 0')
    mkdirSync(join(dir, 'scripts'))
    cpSync(join(ROOT, 'scripts/test.sh'), join(dir, 'scripts/test.sh'))
    await Bun.write(join(dir, 'scripts/test-setup.sh'), 'true\n')
    await Bun.write(join(dir, 'scripts/test-pg.sh'), 'echo " 5 pass"; exit 1\n')
    const proc = Bun.spawn(['bash', 'scripts/test.sh'], { cwd: dir, env: { PATH: `${fakeBin}:${process.env.PATH}` }, stdout: 'pipe', stderr: 'pipe' })
    const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited])
    expect(code).toBe(1)
    expect(out.trim().split('\n').at(-1)).toBe('total: 19 passed, 1 failed, 1 skipped')
  })
  test('FIXLOOP_TEST_UPDATE_TIMINGS=1 reaches bun as --update-timings and test-pg.sh, never the tests (the binary warns about FIXLOOP_* settings it does not know)', async () => {
    const dir = tempDir('fixloop-timings-')
    const fakeBin = join(dir, 'bin')
    mkdirSync(fakeBin)
    const seen = join(dir, 'seen')
    // The fake bun records its arguments and whether the variable reached it; test-pg.sh records what it got.
    await Bun.write(join(fakeBin, 'bun'), `#!/usr/bin/env bash\necho "bun $* env=\${FIXLOOP_TEST_UPDATE_TIMINGS-unset}" >> '${seen}'\nprintf " 1 pass\\n 0 fail\\n"\n`)
    Bun.spawnSync(['chmod', '+x', join(fakeBin, 'bun')])
    mkdirSync(join(dir, 'scripts'))
    cpSync(join(ROOT, 'scripts/test.sh'), join(dir, 'scripts/test.sh'))
    await Bun.write(join(dir, 'scripts/test-setup.sh'), 'true\n')
    await Bun.write(join(dir, 'scripts/test-pg.sh'), `echo "pg env=$FIXLOOP_TEST_UPDATE_TIMINGS" >> '${seen}'; echo " 1 pass"\n`)
    const proc = Bun.spawn(['bash', 'scripts/test.sh'], { cwd: dir, env: { PATH: `${fakeBin}:${process.env.PATH}`, FIXLOOP_TEST_UPDATE_TIMINGS: '1' }, stdout: 'pipe', stderr: 'pipe' })
    expect(await proc.exited).toBe(0)
    const lines = readFileSync(seen, 'utf8').trim().split('\n')
    expect(lines).toHaveLength(4)
    expect(lines[0]).toContain('--update-timings')
    for (const l of lines.slice(0, 3)) expect(l).toEndWith('env=unset')
    expect(lines[3]).toBe('pg env=1')
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
