/**
 * The data dir through the compiled binary: a new instance is announced, never silent; a start refused
 * for a busy port leaves nothing behind; everything in the data dir is owner-only even under umask 022.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { chmodSync, chownSync, existsSync, lchownSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { BINARY, call, freePort, runBinary, tempDir } from './harness'
import { ensureBinary } from './helpers-lifecycle'
import { submitWithScreenshot } from './ops-helpers'

const dirs: string[] = []
function fresh(): string {
  const d = tempDir('fixloop-datadir-')
  dirs.push(d)
  return d
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** Runs the binary through sh with umask 022, the usual default that made the database 0644. */
async function withUmask022(args: string[], env: Record<string, string> = {}, cwd?: string) {
  const quoted = args.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')
  const proc = Bun.spawn(['sh', '-c', `umask 022; exec '${BINARY}' ${quoted}`], { env: { PATH: process.env.PATH ?? '', ...env }, stdout: 'pipe', stderr: 'pipe', cwd })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, stdout, stderr }
}

/** Every path under `root` (itself included) with its permission bits. */
function modes(root: string): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (p: string) => {
    const st = statSync(p)
    out[relative(root, p) || '.'] = (st.mode & 0o777).toString(8)
    if (st.isDirectory()) for (const e of readdirSync(p)) walk(join(p, e))
  }
  walk(root)
  return out
}

describe('a new instance is never silent', () => {
  const cases: [string, (base: string) => string, RegExp][] = [
    ['a missing dir (parents too)', (base) => join(base, 'typo', 'data'), /creating a new instance in .*typo\/data \(the directory did not exist/],
    ['an existing empty dir', (base) => base, /creating a new instance in .* \(it holds no fixloop\.db yet/],
    [
      'a dir holding only other files',
      (base) => {
        writeFileSync(join(base, 'admin-password'), 'x')
        return base
      },
      /creating a new instance in .* \(it holds no fixloop\.db yet/,
    ],
  ]
  for (const [name, make, message] of cases) {
    for (const command of [['org', 'create', '--name', 'A'], ['migrate']]) {
      test(`${command[0]} on ${name}: one notice with the absolute path, none the second time`, async () => {
        ensureBinary()
        const dir = make(fresh())
        const first = await runBinary([...command, '--data-dir', dir, '--json'])
        expect(first.code).toBe(0)
        expect(first.stderr).toMatch(message)
        expect(first.stderr).toContain(dir)
        const again = await runBinary([...command, '--data-dir', dir, '--json'])
        expect(again.code).toBe(0)
        expect(again.stderr).not.toContain('new instance')
      })
    }
  }

  test('a relative --data-dir is announced as its absolute path; serve announces it too', async () => {
    ensureBinary()
    const cwd = fresh()
    const port = await freePort()
    const proc = Bun.spawn([BINARY, 'serve', '--port', String(port), '--data-dir', 'rel/data'], { cwd, env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn', FIXLOOP_AGENT_SANDBOX: 'off' }, stdout: 'ignore', stderr: 'pipe' })
    try {
      for (let i = 0; i < 300; i++) {
        if ((await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.status === 200) break
        await Bun.sleep(50)
      }
    } finally {
      proc.kill('SIGTERM')
    }
    await proc.exited
    expect(await new Response(proc.stderr).text()).toContain(`creating a new instance in ${join(cwd, 'rel', 'data')} `)
  })
})

describe('a start refused for a busy port leaves nothing behind', () => {
  test.each([
    ['a data dir that does not exist', false],
    ['an existing instance', true],
  ])('%s', async (_name, existing) => {
    ensureBinary()
    const base = fresh()
    const dir = join(base, 'data')
    if (existing) expect((await runBinary(['org', 'create', '--name', 'A', '--data-dir', dir])).code).toBe(0)
    const before = existsSync(dir) ? readdirSync(dir).sort() : null
    const busy = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('taken') })
    try {
      const r = await runBinary(['serve', '--host', '127.0.0.1', '--port', String(busy.port), '--data-dir', dir])
      expect(r.code).toBe(2)
      expect(r.stderr).toContain('already in use')
      expect(r.stderr).not.toContain('new instance')
    } finally {
      busy.stop(true)
    }
    // No new dir, no key, no -wal/-shm or lock file.
    expect(existsSync(dir) ? readdirSync(dir).sort() : null).toEqual(before)
  })
})

describe('a start that fails after creating its data dir', () => {
  test('removes what it created, missing parents included', async () => {
    ensureBinary()
    const base = fresh()
    const r = await runBinary(['serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', join(base, 'a', 'data')], { FIXLOOP_MASTER_KEY: 'too-short' })
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('FIXLOOP_MASTER_KEY must hold 32 bytes')
    expect(r.stderr).not.toMatch(/\n\s+at /)
    expect(readdirSync(base)).toEqual([])
  })
  test('a missing FIXLOOP_ADMIN_PASSWORD_FILE is refused (exit 2) before anything is created', async () => {
    ensureBinary()
    const base = fresh()
    const r = await runBinary(['serve', '--port', '0', '--data-dir', join(base, 'data')], { FIXLOOP_ADMIN_EMAIL: 'a@example.com', FIXLOOP_ADMIN_PASSWORD_FILE: join(base, 'nope') })
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('FIXLOOP_ADMIN_PASSWORD_FILE')
    expect(r.stderr).not.toContain('new instance')
    expect(readdirSync(base)).toEqual([])
  })
})

describe('owner-only files under umask 022', () => {
  test('serve + uploads + backup: the dir and its subdirs 0700, every file 0600 (WAL and SHM included)', async () => {
    ensureBinary()
    const base = fresh()
    const dir = join(base, 'data')
    const cli = async (...args: string[]) => {
      const r = await withUmask022([...args, '--data-dir', dir, '--json'])
      expect(r.code).toBe(0)
      return JSON.parse(r.stdout)
    }
    const org = await cli('org', 'create', '--name', 'Perms')
    const app = await cli('app', 'create', '--org', org.id, '--name', 'Web')
    const port = await freePort()
    const proc = Bun.spawn(['sh', '-c', `umask 022; exec '${BINARY}' serve --host 127.0.0.1 --port ${port} --data-dir '${dir}'`], {
      env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn', FIXLOOP_AGENT_SANDBOX: 'off' },
      stdout: 'ignore',
      stderr: 'ignore',
    })
    const url = `http://127.0.0.1:${port}`
    try {
      for (let i = 0; i < 300; i++) {
        if ((await fetch(url + '/healthz').catch(() => undefined))?.status === 200) break
        await Bun.sleep(50)
      }
      await submitWithScreenshot(url, app.publicKey)
      expect((await call(url, 'POST', '/v1/feedback', { auth: app.publicKey, body: { text: 'one more' } })).status).toBe(201)
      // While it runs: the WAL and shared-memory files exist and are private too.
      const running = modes(dir)
      expect(Object.keys(running)).toEqual(expect.arrayContaining(['fixloop.db-wal', 'fixloop.db-shm', 'master.key', 'serve.lock']))
      expect(Object.keys(running).some((p) => p.startsWith('blobs/') && !statSync(join(dir, p)).isDirectory())).toBe(true)
      const loose = Object.entries(running).filter(([p, m]) => m !== (statSync(join(dir, p)).isDirectory() ? '700' : '600'))
      expect(loose).toEqual([])
    } finally {
      proc.kill('SIGTERM')
      await proc.exited
    }
    const out = join(base, 'backup.tar')
    const b = await withUmask022(['backup', '--out', out, '--data-dir', dir])
    expect(b.code).toBe(0)
    expect((statSync(out).mode & 0o777).toString(8)).toBe('600')
    expect(readdirSync(base).sort()).toEqual(['backup.tar', 'data'])
  }, 60_000)

  test('an existing data dir others can read is made owner-only at open, with a notice', async () => {
    ensureBinary()
    const dir = join(fresh(), 'data')
    expect((await runBinary(['org', 'create', '--name', 'A', '--data-dir', dir])).code).toBe(0)
    chmodSync(dir, 0o755)
    chmodSync(join(dir, 'fixloop.db'), 0o644)
    const r = await runBinary(['org', 'create', '--name', 'B', '--data-dir', dir])
    expect(r.code).toBe(0)
    expect(r.stderr).toContain('owner-only')
    expect((statSync(dir).mode & 0o777).toString(8)).toBe('700')
    expect((statSync(join(dir, 'fixloop.db')).mode & 0o777).toString(8)).toBe('600')
    // Nothing to say the next time.
    expect((await runBinary(['org', 'list', '--data-dir', dir])).stderr).toBe('')
  })

  test('in-process (no umask from main.ts): the database and uploaded blobs are created 0600', async () => {
    const { startTestServer, seedTenant } = await import('./harness')
    const old = process.umask(0o022)
    const server = await startTestServer()
    try {
      const t = await seedTenant(server.admin)
      await submitWithScreenshot(server.url, t.pub)
      const loose = Object.entries(modes(server.dataDir)).filter(([p, m]) => m !== (statSync(join(server.dataDir, p)).isDirectory() ? '700' : '600'))
      expect(JSON.stringify(loose)).toBe('[]')
    } finally {
      await server.close()
      process.umask(old)
    }
  })
})

// `--data-dir "$DIR"` with DIR unset: resolved, '' was the current directory, which became an instance
// (chmod 0700, fixloop.db and master.key dropped in; as root from / that is the whole file system's root).
describe('an empty data dir setting', () => {
  test('--data-dir "" and FIXLOOP_DATA_DIR= are refused (exit 2); the current directory is left alone', async () => {
    ensureBinary()
    const cwd = fresh()
    chmodSync(cwd, 0o755)
    for (const [args, env] of [
      [['org', 'create', '--name', 'A', '--data-dir', ''], {}],
      [['org', 'create', '--name', 'A', '--data-dir', ' ']],
      [['org', 'create', '--name', 'A'], { FIXLOOP_DATA_DIR: '' }],
      [['serve', '--port', '0'], { FIXLOOP_DATA_DIR: '' }],
    ] as [string[], Record<string, string>?][]) {
      const proc = Bun.spawn([BINARY, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, cwd, stdout: 'pipe', stderr: 'pipe' })
      const timer = setTimeout(() => proc.kill(), 15_000)
      const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited])
      clearTimeout(timer)
      expect([code, stderr]).toEqual([2, expect.stringContaining('is empty (an unset shell variable?)')])
    }
    expect(readdirSync(cwd)).toEqual([])
    expect((statSync(cwd).mode & 0o777).toString(8)).toBe('755')
  }, 60_000)
})

describe('a data dir path that is a file', () => {
  test('is refused with exit 2', async () => {
    ensureBinary()
    const file = join(fresh(), 'not-a-dir')
    writeFileSync(file, 'x')
    const r = await runBinary(['org', 'create', '--name', 'A', '--data-dir', file])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('not a directory')
  })
})

// A data dir in a folder another local user could write to before the first start (mkdir -m 777, a shared
// group, a /tmp path they made first). Tightening modes cannot help there: the owner of a file keeps every
// right to it, and root's chmod follows a planted symlink anywhere. Needs root to hand files to another user.
describe('a data dir or key file another user owns or planted', () => {
  const NOBODY = 65534
  const asRoot = process.getuid?.() === 0
  test.skipIf(!asRoot)('is refused with exit 2, and nothing is adopted or chmod-ed through a link', async () => {
    ensureBinary()
    const base = fresh()
    chmodSync(base, 0o755)
    // Their master.key in a fresh instance: adopted as the instance's key (one they know) before.
    const planted = join(base, 'planted')
    mkdirSync(planted, { mode: 0o777 })
    chmodSync(planted, 0o777)
    const theirKey = '11'.repeat(32) + '\n'
    writeFileSync(join(planted, 'master.key'), theirKey, { mode: 0o644 })
    chownSync(join(planted, 'master.key'), NOBODY, NOBODY)
    const adopted = await runBinary(['org', 'create', '--name', 'A', '--data-dir', planted])
    expect(adopted.code).toBe(2)
    expect(adopted.stderr).toContain(`${join(planted, 'master.key')} belongs to another user (uid ${NOBODY})`)
    expect(existsSync(join(planted, 'fixloop.db'))).toBe(false)

    // Their symlink as fixloop.db: the open's chmod 0600 landed on the file it names (any file, as root).
    const victim = join(base, 'victim')
    writeFileSync(victim, 'not yours to chmod\n')
    chmodSync(victim, 0o644)
    const linked = join(base, 'linked')
    mkdirSync(linked, { mode: 0o777 })
    chmodSync(linked, 0o777)
    symlinkSync(victim, join(linked, 'fixloop.db'))
    lchownSync(join(linked, 'fixloop.db'), NOBODY, NOBODY)
    const port = await freePort()
    const serve = await runBinary(['serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', linked])
    expect(serve.code).toBe(2)
    expect(serve.stderr).toContain('through a symbolic link')
    expect((statSync(victim).mode & 0o777).toString(8)).toBe('644')
    expect(readFileSync(victim, 'utf8')).toBe('not yours to chmod\n')

    // Their master.key.new link (rekey wrote the new key through it, into their file, and renamed the link
    // over master.key) and their blobs link (every upload into their folder): refused at the first open.
    for (const [name, makeTarget] of [
      ['master.key.new', (p: string) => writeFileSync(p, '', { mode: 0o666 })],
      ['blobs', (p: string) => mkdirSync(p, { mode: 0o777 })],
    ] as [string, (p: string) => void][]) {
      const inst = join(base, `plant-${name}`)
      mkdirSync(inst, { mode: 0o777 })
      chmodSync(inst, 0o777)
      const loot = join(base, `loot-${name}`)
      makeTarget(loot)
      chownSync(loot, NOBODY, NOBODY)
      symlinkSync(loot, join(inst, name))
      lchownSync(join(inst, name), NOBODY, NOBODY)
      const r = await runBinary(['org', 'create', '--name', 'A', '--data-dir', inst])
      expect([r.code, r.stderr]).toEqual([2, expect.stringContaining(`${join(inst, name)} belongs to another user (uid ${NOBODY}, through a symbolic link)`)])
      expect(existsSync(join(inst, 'fixloop.db'))).toBe(false)
    }

    const setpriv = Bun.spawnSync(['which', 'setpriv']).exitCode === 0
    const asNobody = (args: string[]) => {
      const p = Bun.spawnSync(['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', BINARY, ...args], { env: { PATH: process.env.PATH ?? '' } })
      return { code: p.exitCode, stderr: p.stderr.toString() }
    }
    // A data dir a third user owns (made first under a shared folder): they keep full rights to it whatever
    // its mode. (A service user, nobody here, meeting a dir of uid 12345.)
    if (setpriv) {
      const theirs = join(base, 'theirs')
      mkdirSync(theirs, { mode: 0o777 })
      chmodSync(theirs, 0o777)
      chownSync(theirs, 12345, 12345)
      for (const args of [['org', 'create', '--name', 'A'], ['migrate']]) {
        const r = asNobody([...args, '--data-dir', theirs])
        expect(r.code).toBe(2)
        expect(r.stderr).toContain(`the data dir ${theirs} belongs to another user (uid 12345`)
      }
      expect(readdirSync(theirs)).toEqual([])
    }
    // Root on a service user's data dir (packaging/fixloop.service documents the CLI run so) still works.
    const service = join(base, 'service')
    expect((await runBinary(['org', 'create', '--name', 'A', '--data-dir', service])).code).toBe(0)
    Bun.spawnSync(['chown', '-R', `${NOBODY}:${NOBODY}`, service])
    expect((await runBinary(['org', 'list', '--data-dir', service])).code).toBe(0)

    // An existing instance whose master.key was swapped for another user's: read-only commands refuse too.
    const mine = join(base, 'mine')
    expect((await runBinary(['org', 'create', '--name', 'A', '--data-dir', mine])).code).toBe(0)
    chownSync(join(mine, 'master.key'), NOBODY, NOBODY)
    const list = await runBinary(['org', 'list', '--data-dir', mine])
    expect(list.code).toBe(2)
    expect(list.stderr).toContain('belongs to another user')
    chownSync(join(mine, 'master.key'), 0, 0)
    // A symlinked data dir of one's own (and root's, as systemd's DynamicUser makes it) is fine.
    symlinkSync(mine, join(base, 'mine-link'))
    expect((await runBinary(['org', 'list', '--data-dir', join(base, 'mine-link')])).code).toBe(0)

    // Root counts as one's own: a root-owned volume a group may write to (Kubernetes' fsGroup) still works
    // for a service user (nobody here).
    if (setpriv) {
      const volume = join(base, 'volume')
      mkdirSync(volume)
      chmodSync(volume, 0o777)
      const r = asNobody(['org', 'create', '--name', 'A', '--data-dir', volume])
      expect([r.code, r.stderr]).toEqual([0, expect.stringContaining('creating a new instance')])
      expect(statSync(join(volume, 'master.key')).uid).toBe(NOBODY)
    }
  }, 60_000)
})
