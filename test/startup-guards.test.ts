/**
 * `fixloop serve` refuses (exit 2, a clear message) to share a port or a data dir, and to run over a
 * database a newer fixloop migrated. Read-only CLI commands create nothing.
 */
import { expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, runBinary, spawnServer, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { serveExpectingExit } from './ops-helpers'
import { lockDataDir } from '../src/db/data-dir-lock'
import { MIGRATIONS } from '../src/db/migrations'
import { applyMigrations } from '../src/db/sqlite/migrate'

/** A complete S3 setting (a bucket, keys), with `overrides` on top. */
const s3Settings = (overrides: Record<string, string>): Record<string, string> => ({
  FIXLOOP_S3_BUCKET: 'fixloop',
  FIXLOOP_S3_ACCESS_KEY: 'minio',
  FIXLOOP_S3_SECRET_KEY: 'minio-secret',
  ...overrides,
})

test('a second serve on a busy port exits 2 and the first keeps its traffic', async () => {
  ensureBinary()
  const first = await spawnServer(tempDir())
  try {
    const port = new URL(first.url).port
    const second = await serveExpectingExit(tempDir(), ['--port', port])
    expect(second.code).toBe(2)
    expect(second.stderr).toContain('already in use')
    expect((await call(first.url, 'GET', '/healthz')).status).toBe(200)
  } finally {
    await first.stop()
  }
}, 30_000)

test('serve on a data dir a restore or rekey holds says so, not only "another server"', async () => {
  ensureBinary()
  const dir = tempDir()
  await cliTenant(dir)
  // What restore, rekey and migrate-db hold while they replace the data dir's files (data-dir-lock.ts).
  const lock = lockDataDir(dir, 'the test')
  try {
    const serve = await serveExpectingExit(dir)
    expect(serve.code).toBe(2)
    expect(serve.stderr).toContain('or by a restore, rekey or migrate-db under way')
    expect(serve.stderr).toContain('let the command finish')
  } finally {
    lock.release()
  }
}, 30_000)

test('a second serve on a data dir another server holds exits 2; the CLI still writes meanwhile', async () => {
  ensureBinary()
  const dir = tempDir()
  const t = await cliTenant(dir)
  const first = await spawnServer(dir)
  try {
    const second = await serveExpectingExit(dir)
    expect(second.code).toBe(2)
    expect(second.stderr).toContain('in use by another fixloop server')
    const org = await runBinary(['org', 'create', '--name', 'While running', '--data-dir', dir, '--json'])
    expect(org.code).toBe(0)
    expect((await call(first.url, 'GET', '/v1/apps', { auth: t.key })).status).toBe(200)
  } finally {
    await first.stop()
  }
  // Released on stop: the next start takes it.
  const again = await spawnServer(dir)
  await again.stop()
}, 30_000)

test('a database with a migration this binary does not know is refused, naming both versions', async () => {
  ensureBinary()
  const dir = tempDir()
  await cliTenant(dir)
  const db = new Database(join(dir, 'fixloop.db'))
  db.run("INSERT INTO __migrations (name, applied_at) VALUES ('0042_future', 1)")
  db.run("UPDATE instance_meta SET value = '9.9.0' WHERE key = 'migrated_by_version'")
  db.close()
  const r = await serveExpectingExit(dir)
  expect(r.code).toBe(2)
  expect(r.stderr).toContain('fixloop 9.9.0')
  expect(r.stderr).toMatch(/this is fixloop \d+\.\d+\.\d+/)
  expect(r.stderr).toContain('0042_future')
  // The CLI refuses it too, rather than writing with an older schema in mind.
  const cli = await runBinary(['org', 'create', '--name', 'x', '--data-dir', dir])
  expect(cli.code).toBe(2)
  expect(cli.stderr).toContain('0042_future')
}, 30_000)

test('a database of a newer build of the same version is refused as such, not as "0.1.0, but this is 0.1.0"', async () => {
  ensureBinary()
  const dir = tempDir()
  await cliTenant(dir)
  const db = new Database(join(dir, 'fixloop.db'))
  db.run("INSERT INTO __migrations (name, applied_at) VALUES ('9999_future', 1)")
  db.close()
  const r = await runBinary(['org', 'create', '--name', 'x', '--data-dir', dir])
  expect(r.code).toBe(2)
  expect(r.stderr).toContain('was migrated by a newer build of fixloop, but this is fixloop')
  expect(r.stderr).toContain('9999_future')
}, 30_000)

test('an upgrade says so: the migrations a start applied to an existing database, once; a new one is announced as new', async () => {
  ensureBinary()
  const fresh = await runBinary(['org', 'create', '--name', 'first', '--data-dir', join(tempDir(), 'new')])
  expect(fresh.code).toBe(0)
  expect(fresh.stderr).toContain('creating a new instance')
  expect(fresh.stderr).not.toContain('upgraded')
  // A database as an older build left it: its two newest migrations not applied yet.
  const dir = tempDir()
  const file = join(dir, 'fixloop.db')
  const db = new Database(file)
  applyMigrations(db, MIGRATIONS.slice(0, -2))
  db.close()
  chmodSync(file, 0o600)
  const upgrade = await runBinary(['org', 'create', '--name', 'second', '--data-dir', dir])
  expect(upgrade.code).toBe(0)
  expect(upgrade.stderr).toBe(`fixloop: upgraded the database ${file}: 2 migrations applied (${MIGRATIONS.at(-2)!.name} … ${MIGRATIONS.at(-1)!.name})\n`)
  const again = await runBinary(['org', 'create', '--name', 'third', '--data-dir', dir])
  expect([again.code, again.stderr]).toEqual([0, ''])
}, 30_000)

test('read-only commands on a missing data dir say so and create nothing', async () => {
  ensureBinary()
  const parent = tempDir()
  const ghost = join(parent, 'typo')
  for (const args of [['org', 'list'], ['key', 'list', '--org', 'a'.repeat(24)], ['app', 'list', '--org', 'a'.repeat(24)], ['backup', '--out', join(parent, 'b.tar')], ['webhook', 'list', '--org', 'a'.repeat(24)], ['chatops', 'slack', 'list', '--org', 'a'.repeat(24)], ['admin', 'list'], ['app', 'smtp', 'a'.repeat(24)]]) {
    const r = await runBinary([...args, '--data-dir', ghost])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('does not exist')
    expect(r.stdout).toBe('')
  }
  expect(readdirSync(parent)).toEqual([])
  const r = await runBinary(['org', 'list', '--data-dir', '/nonexistent-fixloop-data'])
  expect(r.code).toBe(2)
  expect(existsSync('/nonexistent-fixloop-data')).toBe(false)
})

test('CLI ergonomics: version --json, did-you-mean, global flags first, tables, per-command help, key rotate', async () => {
  ensureBinary()
  const v = await runBinary(['version', '--json'])
  expect(JSON.parse(v.stdout)).toEqual({ version: expect.stringMatching(/^\d+\.\d+\.\d+/) })
  const typo = await runBinary(['bakup'])
  expect(typo.code).toBe(2)
  expect(typo.stderr).toContain('Did you mean "backup"?')
  const sub = await runBinary(['org', 'lst'])
  expect(sub.stderr).toContain('Did you mean "org list"?')
  const flag = await runBinary(['org', 'create', '--nmae', 'x'])
  expect(flag.code).toBe(2)
  expect(flag.stderr).toContain('Did you mean "--name"?')

  const dir = tempDir()
  const t = await cliTenant(dir)
  // Global flags before the command; a readable table without --json.
  const list = await runBinary(['--data-dir', dir, 'org', 'list'])
  expect(list.code).toBe(0)
  const lines = list.stdout.trim().split('\n')
  expect(lines[0]).toMatch(/^ID\s+NAME\s+CREATEDAT$/)
  expect(lines[1]).toContain(t.orgId)
  expect(lines[1]).toContain('Crash Co')

  const help = await runBinary(['key', 'create', '--help'])
  expect(help.code).toBe(0)
  expect(help.stdout).toContain('fixloop key create')
  expect(help.stdout).not.toContain('fixloop key revoke')

  const created = await runBinary(['key', 'create', '--org', t.orgId, '--data-dir', dir])
  expect(created.stderr).toContain('shown once')
  const rotated = await runBinary(['key', 'rotate', t.keyId, '--data-dir', dir, '--json'])
  expect(rotated.code).toBe(0)
  const r = JSON.parse(rotated.stdout)
  expect(r.key).toStartWith('sk_')
  expect(r.revoked).toBe(t.keyId)
  const server = await spawnServer(dir)
  try {
    expect((await call(server.url, 'GET', '/v1/apps', { auth: t.key })).status).toBe(401)
    expect((await call(server.url, 'GET', '/v1/apps', { auth: r.key })).status).toBe(200)
    // GET / points to the docs and the dashboard.
    const root = await call(server.url, 'GET', '/')
    expect(root.body.links).toMatchObject({ docs: '/docs', admin: '/admin' })
    const page = await fetch(server.url + '/', { headers: { accept: 'text/html' } })
    expect(await page.text()).toContain('href="/docs"')
  } finally {
    await server.stop()
  }
}, 60_000)

// Issue 36 item 10: settings that passed silently. An unknown FIXLOOP_* variable gets one warning line
// naming the closest known setting (serve and CLI alike); an out-of-range value is refused (exit 2).
test('a mistyped FIXLOOP_* variable is named on stderr with the closest known setting, by the CLI and by serve', async () => {
  ensureBinary()
  const dir = tempDir()
  await cliTenant(dir)
  const typos = { FIXLOOP_DATABASE_URI: 'postgres://u:p@127.0.0.1:1/db', FIXLOOP_DATA_DIRR: '/tmp/elsewhere', FIXLOOP_PROT: '9999' }
  const cli = await runBinary(['org', 'list', '--data-dir', dir], typos)
  expect(cli.code).toBe(0)
  const lines = cli.stderr.split('\n').filter((l) => l.includes('unknown setting'))
  expect(lines.length).toBe(3)
  expect(lines.find((l) => l.includes('FIXLOOP_DATABASE_URI'))).toContain('FIXLOOP_DATABASE_URL')
  expect(lines.find((l) => l.includes('FIXLOOP_DATA_DIRR'))).toContain('FIXLOOP_DATA_DIR')
  expect(lines.find((l) => l.includes('FIXLOOP_PROT'))).toContain('FIXLOOP_PORT')
  // The value is never echoed (FIXLOOP_DATABASE_URI holds a password).
  expect(cli.stderr).not.toContain('u:p@')
  // serve says it too (here before it refuses an out-of-range lease, so it exits at once).
  const serve = await serveExpectingExit(dir, [], { FIXLOOP_PROT: '9999', FIXLOOP_NODE_LEASE_SECONDS: '500' })
  expect(serve.code).toBe(2)
  expect(serve.stderr).toContain('unknown setting FIXLOOP_PROT')
  expect(serve.stderr).toContain('FIXLOOP_PORT')
  // Known names, the tracker token included, are never warned about.
  const known = await runBinary(['org', 'list', '--data-dir', dir], { FIXLOOP_TRACKER_TOKEN: 'x', FIXLOOP_LOG_LEVEL: 'warn' })
  expect(known.stderr).not.toContain('unknown setting')
}, 30_000)

test.each([
  ['FIXLOOP_NODE_LEASE_SECONDS', '500', '1 and 60'],
  ['FIXLOOP_NODE_LEASE_SECONDS', '0.5', '1 and 60'],
  ['FIXLOOP_WEBHOOK_TIMEOUT_SECONDS', '60', '15'],
  ['FIXLOOP_SSE_HEARTBEAT_SECONDS', '60', '15'],
  ['FIXLOOP_AGENT_CONCURRENCY', '0.5', 'whole number'],
  ['FIXLOOP_PG_STATEMENT_TIMEOUT_SECONDS', '2.5', 'whole number from 0 (off) to 86400'],
  ['FIXLOOP_PG_STATEMENT_TIMEOUT_SECONDS', '-1', 'whole number from 0 (off) to 86400'],
  // A base URL without a scheme became "example.com/admin/setup#token=…" and relative upload URLs.
  ['FIXLOOP_PUBLIC_URL', 'fixloop.example.com', 'absolute http(s) URL'],
  ['FIXLOOP_PUBLIC_URL', 'ftp://fixloop.example.com', 'http(s) URL'],
  ['FIXLOOP_PUBLIC_URL', 'https://fixloop.example.com/?x=1', 'no query or fragment'],
  // Names separated by spaces, or not names at all, were dropped without a word: the agent lacked them.
  ['FIXLOOP_AGENT_ENV', 'HTTPS_PROXY HTTP_PROXY', 'comma-separated'],
  ['FIXLOOP_AGENT_ENV', 'HTTPS_PROXY,MY-TOKEN', 'not a variable name'],
  ['FIXLOOP_AGENT_ENV', 'HTTPS_PROXY,FIXLOOP_MASTER_KEY', 'never passed to agents'],
])('%s=%s is refused with exit 2 and a clear sentence, not clamped', async (name, value, says) => {
  ensureBinary()
  const r = await runBinary(['org', 'list', '--data-dir', tempDir()], { [name]: value })
  expect(r.code).toBe(2)
  expect(r.stderr).toContain(name)
  expect(r.stderr).toContain(says)
  expect(r.stderr).toContain(value)
})

test.each([['127.0.0.1:9000'], ['minio:9000'], ['ftp://minio.internal:9000']])(
  'FIXLOOP_S3_ENDPOINT=%s (no http(s) scheme) is refused with exit 2 naming it, not a stack trace (serve) or a connection to nothing',
  async (endpoint) => {
    ensureBinary()
    const s3 = s3Settings({ FIXLOOP_S3_ENDPOINT: endpoint })
    const root = tempDir()
    const serve = await serveExpectingExit(join(root, 'data'), [], s3)
    expect(serve.code).toBe(2)
    expect(serve.stderr).toContain(`FIXLOOP_S3_ENDPOINT: must be an`)
    expect(serve.stderr).toContain(endpoint)
    expect(serve.stderr).not.toMatch(/\n\s+at |TypeError/)
    expect(readdirSync(root)).toEqual([])
  },
)

test.each([
  // The S3 client takes the endpoint's host and port only: a path (a proxy prefix, or the bucket written into
  // it), a query or a user's name and password were dropped without a word and every request went elsewhere.
  ['http://127.0.0.1:9000/s3', 'scheme, host and port only'],
  ['http://127.0.0.1:9000/fixloop', 'scheme, host and port only'],
  ['http://127.0.0.1:9000/?region=eu', 'scheme, host and port only'],
  ['http://minio:minio-secret@127.0.0.1:9000', 'FIXLOOP_S3_ACCESS_KEY and FIXLOOP_S3_SECRET_KEY'],
])('FIXLOOP_S3_ENDPOINT=%s (more than scheme, host and port) is refused with exit 2, not dropped in part', async (endpoint, says) => {
  ensureBinary()
  const s3 = s3Settings({ FIXLOOP_S3_ENDPOINT: endpoint })
  const root = tempDir()
  const serve = await serveExpectingExit(join(root, 'data'), [], s3)
  expect(serve.code).toBe(2)
  expect(serve.stderr).toContain('FIXLOOP_S3_ENDPOINT: ')
  expect(serve.stderr).toContain(says)
  expect(serve.stderr).not.toContain('cannot reach')
  expect(serve.stderr).not.toContain('minio-secret@')
  expect(readdirSync(root)).toEqual([])
})

test('FIXLOOP_PUBLIC_URL with a user name and password is refused with exit 2 (browsers refuse such links), the password not echoed', async () => {
  ensureBinary()
  // Every upload, download, setup and mail link was built on it: the widget's fetch() of such an upload URL
  // throws in every browser ("Request cannot be constructed from a URL that includes credentials"), and
  // each link handed the password out.
  for (const value of ['https://ops:hunter22pw@fixloop.example.com', 'https://ops@fixloop.example.com']) {
    const r = await runBinary(['org', 'list', '--data-dir', tempDir()], { FIXLOOP_PUBLIC_URL: value })
    expect([value, r.code]).toEqual([value, 2])
    expect(r.stderr).toContain('FIXLOOP_PUBLIC_URL: a base URL carries no user name or password')
    expect(r.stderr).not.toContain('hunter22pw')
  }
})

test('a FIXLOOP_S3_BUCKET that is no bucket name is named as such, not as a bucket that cannot be reached', async () => {
  ensureBinary()
  const root = tempDir()
  const s3 = s3Settings({ FIXLOOP_S3_ENDPOINT: 'http://127.0.0.1:1', FIXLOOP_S3_BUCKET: 'My_Bucket' })
  const serve = await serveExpectingExit(join(root, 'data'), [], s3)
  expect(serve.code).toBe(2)
  expect(serve.stderr).toContain('FIXLOOP_S3_BUCKET: "My_Bucket" is not a bucket name (3 to 63 lowercase letters, digits, dots and hyphens')
  expect(serve.stderr).not.toContain('cannot reach')
  expect(readdirSync(root)).toEqual([])
})

test('an http(s) FIXLOOP_S3_ENDPOINT the S3 client refuses to be built on (an IPv6 literal) exits 2 naming the variable, not 1 with a stack', async () => {
  ensureBinary()
  const root = tempDir()
  const s3 = s3Settings({ FIXLOOP_S3_ENDPOINT: 'http://[::1]:9000' })
  const serve = await serveExpectingExit(join(root, 'data'), [], s3)
  expect(serve.code).toBe(2)
  expect(serve.stderr).toContain('FIXLOOP_S3_ENDPOINT')
  expect(serve.stderr).not.toMatch(/\n\s+at /)
  expect(readdirSync(root)).toEqual([])
})

test("an operator's mistake at start exits 2 with what to fix, no stack trace, and leaves nothing behind", async () => {
  ensureBinary()
  const { writeFileSync } = await import('node:fs')
  const root = tempDir()
  writeFileSync(join(root, 'a-file'), 'x')
  const cases: [string[], RegExp][] = [
    // An address this machine cannot listen on.
    [['serve', '--host', '999.1.1.1', '--port', '0', '--data-dir', join(root, 'd1')], /cannot listen on 999\.1\.1\.1:0: the host \(--host or FIXLOOP_HOST\) must be an address of this machine/],
    // A data dir under a file: the cleanup of the half-made start used to throw its own error over this one.
    [['serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', join(root, 'a-file', 'data')], /cannot use .*a-file\/data: a part of the path is a file, not a folder \(ENOTDIR, mkdir\)/],
    [['org', 'create', '--name', 'x', '--data-dir', join(root, 'a-file', 'data')], /cannot use .*a-file\/data: a part of the path is a file, not a folder/],
    // A folder that cannot be made there.
    [['serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', '/proc/fixloop-nowhere'], /cannot use \/proc\/fixloop-nowhere: the folder cannot be made there \(ENOENT, mkdir\)/],
  ]
  for (const [args, message] of cases) {
    const r = await runBinary(args)
    expect({ args, code: r.code }).toEqual({ args, code: 2 })
    expect(r.stderr).toMatch(message)
    expect(r.stderr).not.toMatch(/\n\s+at /)
  }
  expect(readdirSync(root)).toEqual(['a-file'])
  // `fixloop help serve` is serve's own help.
  const help = await runBinary(['help', 'serve'])
  expect(help.code).toBe(0)
  expect(help.stdout).toStartWith('Usage: fixloop serve')
}, 60_000)

test('a write command that fails on a data dir it had to create removes what it made: a typo leaves no new instance', async () => {
  ensureBinary()
  const root = tempDir()
  const typo = join(root, 'no-such', 'data')
  const revoke = await runBinary(['key', 'revoke', 'a'.repeat(24), '--data-dir', typo])
  expect(revoke.code).toBe(2)
  expect(revoke.stderr).toContain('unknown key')
  expect(revoke.stderr).toContain(`removed ${join(root, 'no-such')} again`)
  expect(readdirSync(root)).toEqual([])
  // A command that succeeds keeps the instance it made; one that fails on an existing instance removes nothing.
  const made = join(root, 'fresh')
  expect((await runBinary(['org', 'create', '--name', 'Kept', '--data-dir', made, '--json'])).code).toBe(0)
  const again = await runBinary(['key', 'revoke', 'a'.repeat(24), '--data-dir', made])
  expect(again.code).toBe(2)
  expect(again.stderr).not.toContain('removed')
  expect(existsSync(join(made, 'fixloop.db'))).toBe(true)
}, 60_000)

test('a FIXLOOP_WORK_DIR others may read, or that is a file: serve exits 2 naming it, without a stack', async () => {
  ensureBinary()
  const shared = join(tempDir(), 'work')
  mkdirSync(shared, { mode: 0o755 })
  chmodSync(shared, 0o755)
  const open = await serveExpectingExit(tempDir(), [], { FIXLOOP_WORK_DIR: shared })
  expect(open.stderr).toContain(`work dir ${shared} is readable by others (mode 755)`)
  expect(open.stderr).not.toMatch(/\n\s+at /)
  expect(open.code).toBe(2)
  const file = join(tempDir(), 'work')
  writeFileSync(file, '')
  const notDir = await serveExpectingExit(tempDir(), [], { FIXLOOP_WORK_DIR: file })
  expect(notDir.stderr).toContain(`work dir ${file} is not a plain directory`)
  expect(notDir.stderr).not.toMatch(/\n\s+at /)
  expect(notDir.code).toBe(2)
}, 30_000)

test('FIXLOOP_ADMIN_EMAIL / FIXLOOP_ADMIN_PASSWORD_FILE that the admin rules refuse: serve names the variable, not only the rule', async () => {
  ensureBinary()
  const root = tempDir()
  const short = join(root, 'short')
  const good = join(root, 'good')
  writeFileSync(short, 'short\n')
  writeFileSync(good, 'a long enough password\n')
  const cases: [Record<string, string>, string, string][] = [
    [{ FIXLOOP_ADMIN_EMAIL: 'ops@shop.example', FIXLOOP_ADMIN_PASSWORD_FILE: short }, `FIXLOOP_ADMIN_PASSWORD_FILE (${short})`, 'the password must be 10 to 1024 characters'],
    [{ FIXLOOP_ADMIN_EMAIL: 'ops-at-shop', FIXLOOP_ADMIN_PASSWORD_FILE: good }, 'FIXLOOP_ADMIN_EMAIL ("ops-at-shop")', 'the email is not an email address'],
  ]
  for (const [env, names, rule] of cases) {
    const r = await serveExpectingExit(join(root, 'data'), [], env)
    expect(r.code).toBe(2)
    expect(r.stderr).toContain(`fixloop: ${names}: ${rule}`)
    expect(r.stderr).not.toMatch(/\n\s+at /)
  }
}, 60_000)

test.each([
  [['serve', '18999'], 'unexpected argument "18999" for "fixloop serve": it takes flags only (did you mean --port 18999?)'],
  [['serve', './my-data'], '(did you mean --data-dir ./my-data?)'],
  [['migrate', './my-data'], '(did you mean --data-dir ./my-data?)'],
  [['backup', 'nightly.tar'], '(did you mean --out nightly.tar?)'],
  [['restore', 'nightly.tar'], '(did you mean --from nightly.tar?)'],
  [['rekey', 'old.key'], 'unexpected argument "old.key" for "fixloop rekey": it takes flags only'],
  // Not echoed: such a URL may hold the password.
  [['migrate-db', 'postgres://u:secret@127.0.0.1:1/db'], 'the PostgreSQL URL goes as --to postgres://… (or in FIXLOOP_DATABASE_URL), not as an argument'],
])('an argument that is no flag is refused, not ignored: fixloop %p (serve 18999 served on 8080, serve ./my-data on ./data)', async (args, message) => {
  ensureBinary()
  const root = tempDir()
  // serve through the helper that kills it after 10 s: before the fix it served (on a free port here).
  const r = args[0] === 'serve' ? await serveExpectingExit(join(root, 'data'), args.slice(1)) : await runBinary([...args, '--data-dir', join(root, 'data')])
  expect([r.code, r.stdout]).toEqual([2, ''])
  expect(r.stderr).toContain(message)
  expect(readdirSync(root)).toEqual([])
})
