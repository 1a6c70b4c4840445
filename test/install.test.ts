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
  test('install.sh installs the Bun the Dockerfile builds with, the one bun.lock was made with (not the newest 1.x)', () => {
    const pinned = /^BUN_VERSION=(\d+\.\d+\.\d+)$/m.exec(readFileSync(join(ROOT, 'install.sh'), 'utf8'))?.[1]
    const built = /^FROM oven\/bun:(\d+\.\d+\.\d+)-/m.exec(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))?.[1]
    expect(pinned).toBeDefined()
    expect(pinned).toBe(built!)
    expect(readFileSync(join(ROOT, 'install.sh'), 'utf8')).not.toContain('bun@1 ')
  })

  test('the test command builds only through the staleness check of scripts/test-setup.sh, runs every pass and ends with one total', () => {
    expect(pkg.scripts.test).toBe('bash scripts/test.sh')
    const script = readFileSync(join(ROOT, 'scripts/test.sh'), 'utf8')
    const steps = script.split('\n').filter((l) => /^(bash scripts\/test-setup\.sh|run )/.test(l))
    // The files that time what they check (write turns by the wall clock; compiled nodes with wake-up lags,
    // take-over bounds, keyed submissions that must not wait out a deadlock) run alone, one after another, after the parallel pass: write turns first, in a run of
    // its own (after the nodes in one run, their stopping processes still used the CPU it times), each after
    // the CPUs have gone quiet.
    expect(script.split('\n').filter((l) => /^(wait_quiet$|run )/.test(l)).slice(0, 5)).toEqual(['run bun test --timeout 60000 --parallel=4 --no-isolate "${timings[@]}" "--path-ignore-patterns=$ALONE"', 'wait_quiet', 'run bun test --timeout 60000 test/write-turns.test.ts', 'wait_quiet', 'run bun test --timeout 60000 test/cluster-mode.test.ts test/cluster-clock.test.ts test/cluster-stall.test.ts test/pg-intake-deadlock.test.ts'])
    expect(steps).toEqual([
      'bash scripts/test-setup.sh || exit 1',
      'run bun test --timeout 60000 --parallel=4 --no-isolate "${timings[@]}" "--path-ignore-patterns=$ALONE"',
      'run bun test --timeout 60000 test/write-turns.test.ts',
      'run bun test --timeout 60000 test/cluster-mode.test.ts test/cluster-clock.test.ts test/cluster-stall.test.ts test/pg-intake-deadlock.test.ts',
      'run env FIXLOOP_TEST_UPDATE_TIMINGS="$update_timings" bash scripts/test-pg.sh',
    ])
    expect(script).toContain("ALONE='test/{write-turns,cluster-mode,cluster-clock,cluster-stall,pg-intake-deadlock}.test.ts'")
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
    const proc = Bun.spawn(['bash', 'scripts/test.sh'], { cwd: dir, env: { PATH: `${fakeBin}:${process.env.PATH}`, TEST_QUIET_WAIT_SECONDS: '0' }, stdout: 'pipe', stderr: 'pipe' })
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
    const proc = Bun.spawn(['bash', 'scripts/test.sh'], { cwd: dir, env: { PATH: `${fakeBin}:${process.env.PATH}`, TEST_QUIET_WAIT_SECONDS: '0', FIXLOOP_TEST_UPDATE_TIMINGS: '1' }, stdout: 'pipe', stderr: 'pipe' })
    expect(await proc.exited).toBe(0)
    const lines = readFileSync(seen, 'utf8').trim().split('\n')
    expect(lines).toHaveLength(4)
    expect(lines[0]).toContain('--update-timings')
    for (const l of lines.slice(0, 3)) expect(l).toEndWith('env=unset')
    expect(lines[3]).toBe('pg env=1')
  })
  test('the failed-tests summary at the end carries what bun printed of each failure: its diff and where it failed', async () => {
    const dir = tempDir('fixloop-failures-')
    const fakeBin = join(dir, 'bin')
    mkdirSync(fakeBin)
    // A parallel run printing one failure the way bun does, then passes buried under it.
    const failure = [
      'test/a.test.ts:',
      '12 |   expect(run).toMatchObject({ status: "failed" })',
      'error: expect(received).toMatchObject(expected)',
      '',
      '-   "status": "failed",',
      '+   "error": { "code": "rate_limited" },',
      '',
      '      at <anonymous> (/repo/test/a.test.ts:12:17)',
      '(fail) reads the run [7.00ms]',
      'test/b.test.ts:',
      '(pass) something else',
      ' 1 pass',
      ' 1 fail',
    ].join('\\n')
    await Bun.write(join(fakeBin, 'bun'), `#!/usr/bin/env bash\ncase "$*" in *--parallel*) printf '${failure}\\n'; exit 1;; *) printf " 1 pass\\n 0 fail\\n";; esac\n`)
    Bun.spawnSync(['chmod', '+x', join(fakeBin, 'bun')])
    mkdirSync(join(dir, 'scripts'))
    cpSync(join(ROOT, 'scripts/test.sh'), join(dir, 'scripts/test.sh'))
    await Bun.write(join(dir, 'scripts/test-setup.sh'), 'true\n')
    await Bun.write(join(dir, 'scripts/test-pg.sh'), 'echo " 1 pass"\n')
    const proc = Bun.spawn(['bash', 'scripts/test.sh'], { cwd: dir, env: { PATH: `${fakeBin}:${process.env.PATH}`, TEST_QUIET_WAIT_SECONDS: '0' }, stdout: 'pipe', stderr: 'pipe' })
    const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited])
    expect(code).toBe(1)
    const summary = out.slice(out.indexOf('failed tests:'))
    expect(summary).toContain('(fail) reads the run [7.00ms]  [test/a.test.ts]')
    expect(summary).toContain('    -   "status": "failed",')
    expect(summary).toContain('    +   "error": { "code": "rate_limited" },')
    expect(summary).toContain('    at <anonymous> (/repo/test/a.test.ts:12:17)'.replace('    at', '          at'))
    expect(summary).not.toContain('something else')
  })
  test('no unused load generator (autocannon); the widget build dependency (esbuild) is a dependency', () => {
    expect(pkg.devDependencies.autocannon).toBeUndefined()
    expect(pkg.dependencies.autocannon).toBeUndefined()
    expect(pkg.dependencies.esbuild).toBeDefined()
  })
})

// A newcomer who is not root: npm's global folder (Debian's /usr or /usr/local) is not theirs, and
// `npm install -g` fails with EACCES. install.sh puts Bun in ~/.local/bin then. A fake npm and bun stand in
// for the registry (the real ones are exercised by the fresh copy below); needs root to become another user.
describe('install.sh as a user who does not own npm\'s global folder', () => {
  const asRoot = process.getuid?.() === 0
  test.skipIf(!asRoot)('installs Bun into ~/.local/bin with npm --prefix, uses it, and says to add the folder to PATH', async () => {
    const dir = tempDir('fixloop-install-user-')
    Bun.spawnSync(['chmod', '755', dir])
    const home = join(dir, 'home')
    const repo = join(dir, 'repo')
    const bin = join(dir, 'bin')
    for (const d of [home, repo, bin]) mkdirSync(d)
    cpSync(join(ROOT, 'install.sh'), join(repo, 'install.sh'))
    const log = join(dir, 'calls')
    // npm: its global prefix is /usr (root's); `install --prefix P` lays a fake bun in P/bin that logs its calls.
    const fakeBun = `#!/bin/bash\\necho "bun $*" >> ${log}\\n[ "$1" = --version ] && echo 1.9.9\\nexit 0\\n`
    await Bun.write(
      join(bin, 'npm'),
      `#!/bin/bash\necho "npm $*" >> ${log}\n[ "$1 $2" = "prefix -g" ] && { echo /usr; exit 0; }\nif [ "$1 $2 $3" = "install -g --prefix" ]; then mkdir -p "$4/bin" && printf '${fakeBun}' > "$4/bin/bun" && chmod +x "$4/bin/bun"; exit 0; fi\nexit 1\n`,
    )
    Bun.spawnSync(['chmod', '755', join(bin, 'npm')])
    for (const tool of ['bash', 'dirname', 'id', 'mkdir', 'chmod']) Bun.spawnSync(['ln', '-s', Bun.which(tool)!, join(bin, tool)])
    Bun.spawnSync(['chmod', '-R', 'a+rwX', dir])
    const proc = Bun.spawn([Bun.which('setpriv')!, '--reuid=65534', '--regid=65534', '--clear-groups', 'bash', join(repo, 'install.sh')], {
      cwd: repo,
      // No bun on PATH: only the fake npm and a few tools.
      env: { HOME: home, PATH: bin },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    expect(code).toBe(0)
    const calls = readFileSync(log, 'utf8').trim().split('\n')
    expect(calls).toEqual(['npm prefix -g', `npm install -g --prefix ${home}/.local bun@1.4.5`, 'bun --version', 'bun install --production --frozen-lockfile', 'bun run build'])
    expect(stderr).toContain(`Bun is in ${home}/.local/bin`)
    expect(stderr).toContain('add that folder to your PATH')
    expect(stderr).toContain('install.sh: bun 1.9.9')

    // Run again: the Bun in ~/.local/bin is found, nothing is installed twice.
    await Bun.write(log, '')
    const again = Bun.spawnSync([Bun.which('setpriv')!, '--reuid=65534', '--regid=65534', '--clear-groups', 'bash', join(repo, 'install.sh')], { cwd: repo, env: { HOME: home, PATH: bin } })
    expect(again.exitCode).toBe(0)
    expect(readFileSync(log, 'utf8').trim().split('\n')).toEqual(['bun --version', 'bun install --production --frozen-lockfile', 'bun run build'])
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
