/**
 * The database away (PostgreSQL stopped under a running server): requests answer 503 with Retry-After and
 * the spec's internal_error envelope (a requestId), never a 500, and the server answers again once the
 * database is back, without a restart. The classifier's table covers both dialects' errors.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { clusterEnv } from './cluster-env'
import { startPostgres, type PgServer } from './pg-server'
import { openPool } from '../src/db/pg/client-options'
import { storageUnavailable } from '../src/db/unavailable'

describe('storageUnavailable tells the database being away from other errors', () => {
  const cases: [string, unknown, number | null][] = [
    ['PostgreSQL shutting down (57P01)', Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }), 5],
    ['connection exception class 08 (08006)', Object.assign(new Error('connection failure'), { code: '08006' }), 5],
    ['too many connections (53300)', Object.assign(new Error('sorry, too many clients already'), { code: '53300' }), 5],
    ['the database read-only (25006: a failover onto a standby)', Object.assign(new Error('cannot execute INSERT in a read-only transaction'), { code: '25006' }), 5],
    ['a lock another session holds past lock_timeout (55P03)', Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' }), 5],
    ['a statement past statement_timeout (57014)', Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }), 5],
    ['the transaction PostgreSQL rolled back to end a deadlock (40P01)', Object.assign(new Error('deadlock detected'), { code: '40P01' }), 1],
    ['a serialization failure (40001)', Object.assign(new Error('could not serialize access due to concurrent update'), { code: '40001' }), 1],
    ['socket refused', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }), 5],
    ["pg's pool gave up waiting", new Error('timeout exceeded when trying to connect'), 5],
    ['the backend gone mid-query', new Error('Connection terminated unexpectedly'), 5],
    ['wrapped by drizzle (cause)', Object.assign(new Error('Failed query: select 1'), { cause: Object.assign(new Error('x'), { code: '57P03' }) }), 5],
    ['every address refused (AggregateError)', new AggregateError([Object.assign(new Error('a'), { code: 'ECONNREFUSED' })], 'connect failed'), 5],
    ['SQLite busy past the retry window', Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }), 1],
    ['SQLite: the disk full', Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }), 60],
    ['SQLite: the filesystem remounted read-only', Object.assign(new Error('attempt to write a readonly database'), { code: 'SQLITE_READONLY' }), 60],
    ['SQLite: read-only, extended code', Object.assign(new Error('attempt to write a readonly database'), { code: 'SQLITE_READONLY_DBMOVED' }), 60],
    ['PostgreSQL disk_full (53100)', Object.assign(new Error('could not extend file'), { code: '53100' }), 60],
    ['PostgreSQL out_of_memory (53200)', Object.assign(new Error('out of memory'), { code: '53200' }), 60],
    ['a file write with no room (the embedded blob store)', Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }), 60],
    ['a file write over quota', Object.assign(new Error('EDQUOT: disk quota exceeded'), { code: 'EDQUOT' }), 60],
    ['out of file descriptors (a blob write under the open-files limit)', Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' }), 5],
    ['out of file descriptors system-wide', Object.assign(new Error('ENFILE: file table overflow'), { code: 'ENFILE' }), 5],
    ['SQLite cannot open a journal or WAL file (descriptors or inodes)', Object.assign(new Error('unable to open database file'), { code: 'SQLITE_CANTOPEN' }), 5],
    ['a file missing (a bug, not an outage)', Object.assign(new Error('ENOENT: no such file or directory'), { code: 'ENOENT' }), null],
    // What SQLite says when the filesystem is remounted read-only under it (ext4 errors=remount-ro): test/read-only-remount.test.ts.
    ['SQLite: a write to a filesystem remounted read-only', Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_WRITE' }), 60],
    ['SQLite: the checkpoint\'s fsync there', Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_FSYNC' }), 60],
    ['SQLite: the -shm file cannot grow on a full disk', Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_SHMSIZE' }), 60],
    ['a unique violation (our bug or a race, not an outage)', Object.assign(new Error('duplicate key'), { code: '23505' }), null],
    ['a syntax error', Object.assign(new Error('syntax error'), { code: '42601' }), null],
    ['SQLite constraint', Object.assign(new Error('UNIQUE constraint failed'), { code: 'SQLITE_CONSTRAINT_UNIQUE' }), null],
    ['a plain bug', new TypeError("Cannot read properties of undefined (reading 'id')"), null],
    ['not an error at all', 'boom', null],
  ]
  for (const [name, err, want] of cases) test(name, () => expect(storageUnavailable(err)).toBe(want))
})

describe('PostgreSQL stopped under a running server', () => {
  let pg: PgServer
  let server: TestServer
  let t: Tenant
  beforeAll(async () => {
    pg = await startPostgres()
    server = await startTestServer({ ...(await clusterEnv(await pg.createDatabase('away'))), FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
    t = await seedTenant(server.admin)
  }, 60_000)
  afterAll(async () => {
    await server?.close().catch(() => {})
    await pg?.stop()
  })

  test('503 with Retry-After and the internal_error envelope while it is away; 200 again once it is back', async () => {
    expect((await call(server.url, 'GET', '/v1/feedback', { auth: t.key })).status).toBe(200)
    await pg.halt()
    try {
      for (const [method, path, opts] of [
        ['GET', '/v1/feedback', { auth: t.key }],
        ['POST', '/v1/feedback', { auth: t.pub, body: { text: 'the export button does nothing' } }],
      ] as const) {
        const r = await call(server.url, method, path, opts)
        expect({ path, status: r.status, code: r.body?.error?.code, retry: r.headers.get('retry-after') }).toEqual({ path, status: 503, code: 'internal_error', retry: '5' })
        expect(r.body.error.details.requestId).toBe(r.headers.get('x-request-id'))
      }
      const ready = await call(server.url, 'GET', '/readyz')
      expect(ready.status).toBe(503)
      // The database fails readiness; the advisory trackers check does not fail a second time on it.
      expect(ready.body.error.details.checks.database.ok).toBe(false)
      expect(ready.body.error.details.checks.trackers).toMatchObject({ ok: true, advisory: true })
      // /metrics still answers with this node's own figures; the outage's answers are counted as the 503s they were.
      const scrape = await fetch(server.url + '/metrics')
      expect(scrape.status).toBe(200)
      const text = await scrape.text()
      expect(text).toMatch(/fixloop_http_requests_total\{method="GET",route="\/v1\/feedback",status="503"\} [1-9]/)
      expect(text).not.toContain('status="500"')
      expect(text).toMatch(/fixloop_metrics_collectors_failed [1-9]/)
      expect(text).toContain('fixloop_process_uptime_seconds')
    } finally {
      await pg.restart()
    }
    await eventually(async () => ((await call(server.url, 'GET', '/v1/feedback', { auth: t.key })).status === 200 ? true : undefined), 20_000)
    expect((await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'back again: the export works' } })).status).toBe(201)
  }, 60_000)
})

describe('a deadlock PostgreSQL breaks by rolling back a request', () => {
  let pg: PgServer
  let server: TestServer
  let t: Tenant
  let env: Record<string, string>
  beforeAll(async () => {
    pg = await startPostgres()
    env = await clusterEnv(await pg.createDatabase('deadlock'))
    server = await startTestServer({ ...env, FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
    t = await seedTenant(server.admin)
  }, 60_000)
  afterAll(async () => {
    await server?.close().catch(() => {})
    await pg?.stop()
  })

  test('503 with Retry-After: 1 and the internal_error envelope, not a 500; sent again, it succeeds', async () => {
    const made = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'the export button does nothing' } })
    expect(made.status).toBe(201)
    const id: string = made.body.id
    await eventually(async () => ((await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body.status === 'awaiting_manual' ? true : undefined), 20_000)
    const other = openPool(env.FIXLOOP_DATABASE_URL, 2)
    const c = await other.connect()
    try {
      // This session holds the Org's event counter, then waits for the report's row the PATCH has locked: a
      // cycle. Its own deadlock_timeout is long, so PostgreSQL (checking after 1 s on the PATCH's side) rolls
      // back the PATCH's statement, never this one.
      await c.query("SET deadlock_timeout = '20s'")
      await c.query('BEGIN')
      await c.query('UPDATE event_counters SET last_seq = last_seq WHERE org_id = $1', [t.orgId])
      const patch = call(server.url, 'PATCH', `/v1/feedback/${id}`, { auth: t.key, body: { status: 'archived' } })
      // The PATCH has its row and waits for the counter.
      await eventually(async () => ((await other.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%event_counters%' AND pid <> $1", [(c as unknown as { processID: number }).processID])).rows.length > 0 ? true : undefined), 10_000)
      const blocked = c.query('UPDATE feedback SET updated_at = updated_at WHERE id = $1', [id])
      const r = await patch
      await blocked
      await c.query('ROLLBACK')
      expect({ status: r.status, code: r.body?.error?.code, retry: r.headers.get('retry-after') }).toEqual({ status: 503, code: 'internal_error', retry: '1' })
      expect(r.body.error.details.requestId).toBe(r.headers.get('x-request-id'))
    } finally {
      await c.query('ROLLBACK').catch(() => {})
      c.release()
      await other.end()
    }
    const again = await call(server.url, 'PATCH', `/v1/feedback/${id}`, { auth: t.key, body: { status: 'archived' } })
    expect([again.status, again.body.status]).toEqual([200, 'archived'])
  }, 60_000)
})

/**
 * A statement that stalls without waiting for any lock (lock_timeout bounds only those): a slow plan, a
 * starved disk, a runaway trigger. Played here by a trigger that sleeps. Without statement_timeout the
 * request waited for as long as the statement ran, holding its pool connection.
 */
describe('a statement that stalls on PostgreSQL', () => {
  let pg: PgServer
  let server: TestServer
  let t: Tenant
  let env: Record<string, string>
  beforeAll(async () => {
    pg = await startPostgres()
    env = await clusterEnv(await pg.createDatabase('stall'))
    server = await startTestServer({ ...env, FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000', FIXLOOP_PG_STATEMENT_TIMEOUT_SECONDS: '2' })
    t = await seedTenant(server.admin)
  }, 60_000)
  afterAll(async () => {
    await server?.close().catch(() => {})
    await pg?.stop()
  })

  test('ends within FIXLOOP_PG_STATEMENT_TIMEOUT_SECONDS with 503 and Retry-After, PostgreSQL frees the statement, and the server serves again', async () => {
    const made = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'the export button does nothing' } })
    expect(made.status).toBe(201)
    const id: string = made.body.id
    await eventually(async () => ((await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body.status === 'awaiting_manual' ? true : undefined), 20_000)
    const other = openPool(env.FIXLOOP_DATABASE_URL, 1)
    try {
      await other.query(`CREATE FUNCTION test_stall() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.status = 'archived' THEN PERFORM pg_sleep(40); END IF; RETURN NEW; END $$`)
      await other.query('CREATE TRIGGER test_stall BEFORE UPDATE ON feedback FOR EACH ROW EXECUTE FUNCTION test_stall()')
      const started = Date.now()
      const r = await call(server.url, 'PATCH', `/v1/feedback/${id}`, { auth: t.key, body: { status: 'archived' } })
      const took = Date.now() - started
      expect({ status: r.status, code: r.body?.error?.code, retry: r.headers.get('retry-after') }).toEqual({ status: 503, code: 'internal_error', retry: '5' })
      expect(r.body.error.details.requestId).toBe(r.headers.get('x-request-id'))
      expect(took).toBeGreaterThanOrEqual(1_900)
      expect(took).toBeLessThan(8_000)
      // Ended by PostgreSQL, not abandoned by the client: no statement of the server still sleeps there.
      const sleeping = await other.query("SELECT 1 FROM pg_stat_activity WHERE wait_event = 'PgSleep'")
      expect(sleeping.rows).toEqual([])
      await other.query('DROP TRIGGER test_stall ON feedback')
    } finally {
      await other.query('DROP TRIGGER IF EXISTS test_stall ON feedback').catch(() => {})
      await other.end()
    }
    const again = await call(server.url, 'PATCH', `/v1/feedback/${id}`, { auth: t.key, body: { status: 'archived' } })
    expect([again.status, again.body.status]).toEqual([200, 'archived'])
    expect((await call(server.url, 'GET', '/v1/feedback', { auth: t.key })).status).toBe(200)
  }, 60_000)
})
