/**
 * FIXLOOP_DATABASE_URL through the compiled binary against a real PostgreSQL, as an operator would use it
 * while PostgreSQL storage is being built: `fixloop migrate` applies the schema (once, also from three
 * processes at once), refuses a newer schema, and says clearly what is wrong with a bad URL, a refused
 * connection or wrong credentials, never printing the password; every command that would use the data
 * dir's SQLite refuses (exit 2) and leaves no data dir behind; serve names what cluster mode lacks.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { writeFileSync, existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Pool } from 'pg'
import { openPool } from '../src/db/pg/client-options'
import { PG_MIGRATIONS } from '../src/db/pg/migrations'
import { runBinary, tempDir } from './harness'
import { pgMissingReason, startPostgres, type PgServer } from './pg-server'
import { clusterEnv } from './cluster-env'
import { VERSION } from '../src/version'

const skip = pgMissingReason()
if (skip) console.warn(`pg-mode-cli: skipped: ${skip}`)

describe.skipIf(Boolean(skip))('FIXLOOP_DATABASE_URL on the CLI (compiled binary, real PostgreSQL)', () => {
  let server: PgServer
  let url: string
  let pool: Pool
  let work: string
  const ALL = PG_MIGRATIONS.map((m) => m.name)

  beforeAll(async () => {
    server = await startPostgres()
    url = await server.createDatabase('cli')
    pool = openPool(url, 2)
    work = tempDir('fixloop-pgcli-')
  })
  afterAll(async () => {
    await pool?.end()
    await server?.stop()
    if (work) rmSync(work, { recursive: true, force: true })
  })

  const dataDir = () => join(work, 'never-created')

  test('three migrate processes at once apply every migration exactly once; a second run applies nothing', async () => {
    const runs = await Promise.all([0, 1, 2].map(() => runBinary(['migrate', '--json', '--data-dir', dataDir()], { FIXLOOP_DATABASE_URL: url })))
    for (const r of runs) expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' })
    const applied = runs.flatMap((r) => JSON.parse(r.stdout).applied as string[])
    expect(applied.sort()).toEqual([...ALL].sort())
    const again = await runBinary(['migrate', '--json'], { FIXLOOP_DATABASE_URL: url })
    // It names the database it migrated (an operator without the settings loaded would see SQLite here).
    expect(JSON.parse(again.stdout)).toEqual({ database: `PostgreSQL ${new URL(url).username}@127.0.0.1:${server.port}/${new URL(url).pathname.slice(1)}`, applied: [] })
    const plain = await runBinary(['migrate'], { FIXLOOP_DATABASE_URL: url })
    expect(plain.stdout.split('\n')[0]).toMatch(/^database: PostgreSQL \S+@127\.0\.0\.1:\d+\/\S+$/)
    const { rows } = await pool.query('SELECT name FROM __migrations ORDER BY name')
    expect(rows.map((r) => r.name)).toEqual(ALL)
    // The data dir was never touched: PostgreSQL holds everything.
    expect(existsSync(dataDir())).toBe(false)
  })

  test('a database migrated by a newer fixloop is refused, naming the migration', async () => {
    await pool.query("INSERT INTO __migrations (name, applied_at) VALUES ('9999_from_the_future', 1)")
    try {
      const r = await runBinary(['migrate'], { FIXLOOP_DATABASE_URL: url })
      expect(r.code).toBe(2)
      expect(r.stderr).toContain('migrated by a newer fixloop')
      expect(r.stderr).toContain('9999_from_the_future')
      // The version that migrated it, when it is another one.
      await pool.query("UPDATE instance_meta SET value = '9.9.0' WHERE key = 'migrated_by_version'")
      expect((await runBinary(['migrate'], { FIXLOOP_DATABASE_URL: url })).stderr).toContain('migrated by a newer fixloop (9.9.0), but this is fixloop')
    } finally {
      await pool.query("DELETE FROM __migrations WHERE name = '9999_from_the_future'")
      await pool.query("UPDATE instance_meta SET value = $1 WHERE key = 'migrated_by_version'", [VERSION])
    }
  })

  test('a database of another application (FIXLOOP_DATABASE_URL pointed at the wrong one): migrate and serve refuse it, exit 2, and create nothing in it', async () => {
    for (const [prefix, table] of [['otherapp', 'users'], ['clash', 'events']] as const) {
      const other = await server.createDatabase(prefix)
      const otherPool = openPool(other, 1)
      try {
        await otherPool.query(`CREATE TABLE ${table} (id int PRIMARY KEY, payload text)`)
        await otherPool.query(`INSERT INTO ${table} VALUES (1, 'theirs')`)
        // Before: fixloop's tables were created among theirs and serve started (or, a table named like one of
        // fixloop's, exit 1 with the driver's "relation already exists" and a stack).
        for (const args of [['migrate'], ['serve', '--port', '0', '--data-dir', join(work, `serve-${prefix}`)]]) {
          // serve with the rest of cluster mode's settings (Redis, S3, master key), so the database is what it judges.
          const r = await runBinary(args, args[0] === 'serve' ? await clusterEnv(other) : { FIXLOOP_DATABASE_URL: other })
          expect({ table, args: args[0], code: r.code }).toEqual({ table, args: args[0], code: 2 })
          expect(r.stderr).toContain(`holds tables that are not fixloop's (${table}) and no fixloop schema`)
          expect(r.stderr).not.toMatch(/\n\s+at /)
          expect(r.stderr).not.toContain(server.password)
        }
        const { rows } = await otherPool.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name")
        expect(rows.map((r) => r.table_name)).toEqual([table])
      } finally {
        await otherPool.end()
      }
    }
  })

  test('a fresh database holding only extensions (pg_stat_statements, pg_buffercache: their views in public) is no other application: migrate applies the schema', async () => {
    const fresh = await server.createDatabase('extonly')
    const freshPool = openPool(fresh, 1)
    try {
      // What an operator or a managed PostgreSQL adds to every database; their views sit in public.
      await freshPool.query('CREATE EXTENSION pg_stat_statements')
      await freshPool.query('CREATE EXTENSION pg_buffercache')
      // Before: refused as another application's database ("holds tables that are not fixloop's (pg_buffercache, ...)").
      const r = await runBinary(['migrate', '--json'], { FIXLOOP_DATABASE_URL: fresh })
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' })
      expect((JSON.parse(r.stdout).applied as string[]).sort()).toEqual([...ALL].sort())
      // An application's table beside the extensions is still refused.
      const other = await server.createDatabase('extother')
      const otherPool = openPool(other, 1)
      try {
        await otherPool.query('CREATE EXTENSION pg_stat_statements')
        await otherPool.query('CREATE TABLE invoices (id int PRIMARY KEY)')
        const refused = await runBinary(['migrate'], { FIXLOOP_DATABASE_URL: other })
        expect(refused.code).toBe(2)
        expect(refused.stderr).toContain("holds tables that are not fixloop's (invoices) and no fixloop schema")
      } finally {
        await otherPool.end()
      }
    } finally {
      await freshPool.end()
    }
  })

  const faults: [string, () => string, RegExp][] = [
    ['a URL of another scheme', () => 'mysql://root:pw@127.0.0.1/db', /FIXLOOP_DATABASE_URL: the scheme must be postgres: or postgresql:/],
    ['not a URL', () => 'not a url at all', /FIXLOOP_DATABASE_URL: not a URL/],
    ['a refused connection', () => `postgres://postgres:${server.password}@127.0.0.1:1/postgres`, /cannot reach PostgreSQL at postgres@127\.0\.0\.1:1\/postgres: connection refused/],
    // A stray % (URL parsing takes it; decodeURIComponent did not): was a URIError crash, exit 1, with a stack.
    ['a stray % in the database name', () => `postgres://postgres:${server.password}@127.0.0.1:1/fix%zzloop`, /cannot reach PostgreSQL at postgres@127\.0\.0\.1:1\/fix%zzloop: connection refused/],
    ['wrong credentials', () => `postgres://postgres:wrong-secret-pw@127.0.0.1:${server.port}/postgres`, /refused the credentials/],
    ['a database that does not exist', () => `postgres://postgres:${server.password}@127.0.0.1:${server.port}/nope_db`, /the database does not exist/],
  ]
  for (const [name, makeUrl, message] of faults) {
    test(`migrate with ${name}: exit 2, a clear sentence, no password, no stack`, async () => {
      const r = await runBinary(['migrate'], { FIXLOOP_DATABASE_URL: makeUrl() })
      expect(r.code).toBe(2)
      expect(r.stderr).toMatch(message)
      expect(r.stderr).not.toContain(server.password)
      expect(r.stderr).not.toContain('wrong-secret-pw')
      expect(r.stderr).not.toMatch(/\n\s+at /)
    })
  }

  test('a role that may not create tables (a database it does not own, PostgreSQL 15): exit 2 saying what to grant, no stack', async () => {
    const weakUrl = new URL(await server.createDatabase('notowned'))
    await pool.query("CREATE ROLE weak_role LOGIN PASSWORD 'weak-pw-123'")
    try {
      weakUrl.username = 'weak_role'
      weakUrl.password = 'weak-pw-123'
      const r = await runBinary(['migrate'], { FIXLOOP_DATABASE_URL: weakUrl.toString() })
      expect(r.code).toBe(2)
      expect(r.stderr).toMatch(/the database role may not create or change fixloop's tables \(permission denied for schema public\): make it the database's owner/)
      expect(r.stderr).not.toMatch(/\n\s+at /)
      expect(r.stderr).not.toContain('weak-pw-123')
    } finally {
      await pool.query('DROP OWNED BY weak_role').catch(() => {})
      await pool.query('DROP ROLE weak_role').catch(() => {})
    }
  })

  test('every CLI command runs on PostgreSQL (not on a data dir it would create); backup points to pg_dump', async () => {
    const env = { FIXLOOP_DATABASE_URL: url, FIXLOOP_MASTER_KEY: 'ab'.repeat(32) }
    // The key seals secrets on PostgreSQL as on SQLite; there is no data dir to keep a generated one in.
    const keyless = await runBinary(['org', 'create', '--name', 'No key', '--data-dir', dataDir()], { FIXLOOP_DATABASE_URL: url })
    expect([keyless.code, keyless.stderr]).toEqual([2, expect.stringContaining('FIXLOOP_MASTER_KEY is required')])
    const org = await runBinary(['org', 'create', '--name', 'On PostgreSQL', '--json', '--data-dir', dataDir()], env)
    expect(org.code).toBe(0)
    const orgId = JSON.parse(org.stdout).id
    const pw = join(work, 'admin.pw')
    writeFileSync(pw, 'a long enough password\n')
    for (const args of [['org', 'list'], ['webhook', 'list', '--org', orgId], ['chatops', 'slack', 'list', '--org', orgId], ['admin', 'create', '--email', 'ops@example.com', '--password-file', pw], ['admin', 'create', '--email', 'dev@example.com', '--password-file', pw, '--org', orgId, '--role', 'member'], ['admin', 'role', '--email', 'dev@example.com', '--org', orgId, '--role', 'owner']]) {
      const r = await runBinary([...args, '--json', '--data-dir', dataDir()], env)
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: '' })
    }
    expect(JSON.parse((await runBinary(['org', 'list', '--json', '--data-dir', dataDir()], env)).stdout).data.map((o: { id: string }) => o.id)).toContain(orgId)
    const admins = JSON.parse((await runBinary(['admin', 'list', '--json', '--data-dir', dataDir()], env)).stdout).data
    expect(admins.map((a: { email: string; owner: boolean; orgs: unknown[] }) => [a.email, a.owner, a.orgs])).toEqual([['dev@example.com', false, [{ orgId, role: 'owner' }]], ['ops@example.com', true, []]])
    const backup = await runBinary(['backup', '--out', join(work, 'b.tar'), '--data-dir', dataDir()], { FIXLOOP_DATABASE_URL: url })
    expect(backup.code).toBe(2)
    expect(backup.stderr).toContain('pg_dump')
    expect(existsSync(dataDir())).toBe(false)
    expect(existsSync(join(work, 'b.tar'))).toBe(false)
  })

  test('rekey on PostgreSQL: every sealed secret moves to the new key in one transaction; the old key is refused after', async () => {
    const url = await server.createDatabase('rekey')
    const oldKey = 'ab'.repeat(32)
    const env = { FIXLOOP_DATABASE_URL: url, FIXLOOP_MASTER_KEY: oldKey }
    const org = JSON.parse((await runBinary(['org', 'create', '--name', 'Keys', '--json', '--data-dir', dataDir()], env)).stdout)
    const app = JSON.parse((await runBinary(['app', 'create', '--org', org.id, '--name', 'Sealed', '--json', '--data-dir', dataDir()], env)).stdout)
    const oldFile = join(work, 'old.key')
    const newFile = join(work, 'new.key')
    writeFileSync(oldFile, oldKey + '\n')
    writeFileSync(newFile, 'cd'.repeat(32) + '\n')
    const wrong = await runBinary(['rekey', '--old-key-file', newFile, '--new-key-file', oldFile, '--data-dir', dataDir()], env)
    expect(wrong.code).toBe(2)
    const r = await runBinary(['rekey', '--old-key-file', oldFile, '--new-key-file', newFile, '--json', '--data-dir', dataDir()], env)
    expect(r.code).toBe(0)
    expect(JSON.parse(r.stdout).resealed['apps.signing_secret_enc']).toBe(1)
    expect(r.stderr).toContain('FIXLOOP_MASTER_KEY')
    const stale = await runBinary(['app', 'list', '--org', org.id, '--data-dir', dataDir()], env)
    expect([stale.code, stale.stderr]).toEqual([2, expect.stringContaining('FIXLOOP_MASTER_KEY is not the key')])
    const fresh = await runBinary(['app', 'rotate-secret', app.id, '--json', '--data-dir', dataDir()], { ...env, FIXLOOP_MASTER_KEY: 'cd'.repeat(32) })
    expect(fresh.code).toBe(0)
    const pool = openPool(url, 1)
    try {
      const { rows } = await pool.query('SELECT signing_secret_enc AS v FROM apps WHERE id = $1', [app.id])
      expect(rows[0].v).toMatch(/^v1:/)
    } finally {
      await pool.end()
    }
  })

  test('serve names what cluster mode lacks; a bucket or Redis it cannot reach is exit 2 too', async () => {
    const bare = await runBinary(['serve', '--port', '0', '--data-dir', dataDir()], { FIXLOOP_DATABASE_URL: url })
    expect(bare.code).toBe(2)
    for (const name of ['FIXLOOP_REDIS_URL', 'FIXLOOP_MASTER_KEY', 'FIXLOOP_S3_ENDPOINT']) expect(bare.stderr).toContain(name)
    const full = await runBinary(['serve', '--port', '0', '--data-dir', dataDir()], {
      FIXLOOP_DATABASE_URL: url,
      FIXLOOP_REDIS_URL: 'redis://127.0.0.1:6379',
      FIXLOOP_MASTER_KEY: 'ab'.repeat(32),
      FIXLOOP_S3_ENDPOINT: 'http://127.0.0.1:9000',
      FIXLOOP_S3_BUCKET: 'b',
      FIXLOOP_S3_ACCESS_KEY: 'k',
      FIXLOOP_S3_SECRET_KEY: 's',
    })
    expect(full.code).toBe(2)
    expect(full.stderr).toMatch(/bucket|S3|Redis/)
    expect(full.stderr).not.toContain('ab'.repeat(32))
    expect(existsSync(dataDir())).toBe(false)
  })
})
