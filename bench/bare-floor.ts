/**
 * The barest floor of issue 10: what Bun + SQLite alone do for a widget report, so intake's figures
 * can be read against the machine rather than against another design.
 *
 * - Bun.serve, no framework; bun:sqlite in WAL with synchronous=NORMAL (fixloop's durability);
 * - POST /v1/feedback: bearer check (string compare), JSON parse, `text` must be a string, then ONE
 *   INSERT of the report in its own implicit transaction (a commit per request); 201 after it;
 * - one table, its primary key and nothing else: no job row, no event, no secondary index.
 *
 * Compare bench/floor-server.ts, the project's same-work floor (fixloop's tables, indexes and job row).
 *
 * Env: BARE_DB (file), BARE_PORT, BARE_PUB_KEY.
 */
import { Database } from 'bun:sqlite'
import { randomBytes } from 'node:crypto'

/** One table for the report's fields, the primary key its only index. */
export const BARE_SCHEMA = `CREATE TABLE IF NOT EXISTS reports (
  id TEXT PRIMARY KEY NOT NULL, text TEXT NOT NULL, url TEXT, severity TEXT, user_agent TEXT,
  viewport TEXT, console_logs TEXT, metadata TEXT, created_at INTEGER NOT NULL)`

export const BARE_INSERT = `INSERT INTO reports (id, text, url, severity, user_agent, viewport, console_logs, metadata, created_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

/** Opens (and creates) the bare floor's database with the same durability as fixloop's. */
export function openBareDb(file: string): Database {
  const db = new Database(file, { create: true, strict: true })
  db.run('PRAGMA busy_timeout = 5000')
  db.run('PRAGMA journal_mode = WAL')
  db.run('PRAGMA synchronous = NORMAL')
  db.run(BARE_SCHEMA)
  return db
}

const processRandom = randomBytes(5).toString('hex')
let counter = randomBytes(3).readUIntBE(0, 3)
function newId(nowMs: number): string {
  counter = (counter + 1) & 0xffffff
  return (Math.floor(nowMs / 1000) >>> 0).toString(16).padStart(8, '0') + processRandom + counter.toString(16).padStart(6, '0')
}

const JSON_HEADERS = { 'content-type': 'application/json' }
const fail = (status: number, code: string) => new Response(`{"error":{"code":"${code}","message":"${code}"}}`, { status, headers: JSON_HEADERS })
const json = (v: unknown) => (v === undefined ? null : JSON.stringify(v))

export function startBareFloor(opts: { file: string; port: number; pubKey: string }) {
  const db = openBareDb(opts.file)
  const insert = db.prepare(BARE_INSERT)
  const auth = `Bearer ${opts.pubKey}`
  async function post(req: Request): Promise<Response> {
    if (req.headers.get('authorization') !== auth) return fail(401, 'unknown_app')
    let body: Record<string, unknown>
    try {
      body = (await req.json()) as Record<string, unknown>
    } catch {
      return fail(400, 'invalid_body')
    }
    if (typeof body !== 'object' || body === null || typeof body.text !== 'string') return fail(400, 'invalid_body')
    const now = Date.now()
    const id = newId(now)
    // No BEGIN: the INSERT is its own transaction, committed before the 201.
    insert.run(id, body.text, (body.url as string) ?? null, (body.severity as string) ?? null, req.headers.get('user-agent'), json(body.viewport), json(body.consoleLogs), json(body.metadata), now)
    return new Response(JSON.stringify({ id, status: 'received' }), { status: 201, headers: JSON_HEADERS })
  }
  return Bun.serve({
    hostname: '127.0.0.1',
    port: opts.port,
    fetch(req) {
      const path = new URL(req.url).pathname
      if (path === '/v1/feedback' && req.method === 'POST') return post(req)
      if (path === '/healthz') return new Response('ok')
      return fail(404, 'route_not_found')
    },
  })
}

if (import.meta.main) {
  const file = process.env.BARE_DB
  const pubKey = process.env.BARE_PUB_KEY
  if (!file || !pubKey) throw new Error('bare-floor: BARE_DB and BARE_PUB_KEY are required')
  const server = startBareFloor({ file, port: Number(process.env.BARE_PORT ?? 8092), pubKey })
  process.stdout.write(`bare floor listening on http://127.0.0.1:${server.port}\n`)
  const stop = () => {
    server.stop(true)
    process.exit(0)
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}
