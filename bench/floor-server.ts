/**
 * The floor: the least a Bun + SQLite server can do for fixloop's two hot routes, so the benchmark can
 * say how much of the machine fixloop's framework, validation and bookkeeping cost.
 *
 * - Bun.serve, no framework; bun:sqlite with the same pragmas fixloop sets (busy_timeout, WAL,
 *   synchronous=NORMAL) and statements prepared once.
 * - POST /v1/feedback: bearer check (plain string compare), JSON parse, the few checks fixloop makes
 *   (text length, absolute url), then the feedback row AND its `process` job in ONE transaction per
 *   request; the 201 is sent after that COMMIT.
 * - GET /v1/feedback?limit=N[&cursor=ID]: bearer check, the keyset page fixloop runs
 *   (`org_id = ? AND duplicate_of_id IS NULL [AND id < ?] ORDER BY id DESC LIMIT N+1`), rows mapped to
 *   the same JSON item shape (ISO dates, submittedBy object), nextCursor.
 *
 * The tables are fixloop's (copied from migrations/0000_init.sql), so a page reads the same bytes.
 *
 * Env: FLOOR_DB (file), FLOOR_PORT, FLOOR_ORG_ID, FLOOR_APP_ID, FLOOR_PUB_KEY, FLOOR_SK_KEY.
 */
import { Database } from 'bun:sqlite'
import { randomBytes } from 'node:crypto'

/** fixloop's `feedback` and `jobs` tables and their indexes, verbatim from migrations/0000_init.sql. */
export const FLOOR_SCHEMA = `
CREATE TABLE IF NOT EXISTS \`feedback\` (
	\`id\` text PRIMARY KEY NOT NULL,
	\`org_id\` text NOT NULL,
	\`app_id\` text NOT NULL,
	\`status\` text NOT NULL,
	\`version\` integer DEFAULT 0 NOT NULL,
	\`severity\` text,
	\`text\` text NOT NULL,
	\`url\` text,
	\`user_agent\` text,
	\`viewport\` text,
	\`console_logs\` text,
	\`attachments\` text,
	\`component_target\` text,
	\`metadata\` text,
	\`submitted_mode\` text NOT NULL,
	\`external_user_id\` text,
	\`email\` text,
	\`submitter_name\` text,
	\`user_context\` text,
	\`redactions\` text,
	\`created_at\` integer NOT NULL,
	\`updated_at\` integer NOT NULL,
	\`processed_at\` integer,
	\`merge_request_url\` text,
	\`duplicate_of_id\` text,
	\`duplicate_count\` integer DEFAULT 0 NOT NULL,
	\`last_duplicate_at\` integer,
	\`theme\` text,
	\`consolidated_text\` text
);
CREATE INDEX IF NOT EXISTS \`feedback_org_id_idx\` ON \`feedback\` (\`org_id\`,\`id\`);
CREATE INDEX IF NOT EXISTS \`feedback_app_id_idx\` ON \`feedback\` (\`app_id\`,\`id\`);
CREATE INDEX IF NOT EXISTS \`feedback_org_status_idx\` ON \`feedback\` (\`org_id\`,\`status\`,\`id\`);
CREATE INDEX IF NOT EXISTS \`feedback_app_status_idx\` ON \`feedback\` (\`app_id\`,\`status\`,\`id\`);
CREATE INDEX IF NOT EXISTS \`feedback_dup_idx\` ON \`feedback\` (\`duplicate_of_id\`) WHERE duplicate_of_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS \`jobs\` (
	\`id\` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	\`kind\` text NOT NULL,
	\`feedback_id\` text,
	\`run_after\` integer NOT NULL,
	\`lease_until\` integer,
	\`attempts\` integer DEFAULT 0 NOT NULL,
	\`last_error\` text,
	\`created_at\` integer NOT NULL
);
CREATE INDEX IF NOT EXISTS \`jobs_due_idx\` ON \`jobs\` (\`run_after\`);
CREATE INDEX IF NOT EXISTS \`jobs_feedback_idx\` ON \`jobs\` (\`feedback_id\`);
`

/** Opens a database with fixloop's pragmas, in fixloop's order, and makes sure the tables exist. */
export function openFloorDb(file: string): Database {
  const db = new Database(file, { create: true, strict: true })
  // busy_timeout first: the WAL switch itself takes a lock.
  db.run('PRAGMA busy_timeout = 5000')
  db.run('PRAGMA journal_mode = WAL')
  db.run('PRAGMA synchronous = NORMAL')
  db.exec(FLOOR_SCHEMA)
  return db
}

// Ids as fixloop makes them: 4-byte unix seconds, 5 random bytes per process, 3-byte counter.
const processRandom = randomBytes(5).toString('hex')
let counter = randomBytes(3).readUIntBE(0, 3)
function newId(nowMs: number): string {
  counter = (counter + 1) & 0xffffff
  return (Math.floor(nowMs / 1000) >>> 0).toString(16).padStart(8, '0') + processRandom + counter.toString(16).padStart(6, '0')
}

const ID_RE = /^[0-9a-f]{24}$/
const JSON_HEADERS = { 'content-type': 'application/json' }
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())
const fail = (status: number, code: string) => new Response(`{"error":{"code":"${code}","message":"${code}"}}`, { status, headers: JSON_HEADERS })

interface Row {
  id: string
  app_id: string
  status: string
  submitted_mode: string
  external_user_id: string | null
  email: string | null
  submitter_name: string | null
  severity: string | null
  text: string
  url: string | null
  created_at: number
  processed_at: number | null
  merge_request_url: string | null
  duplicate_of_id: string | null
  duplicate_count: number
  theme: string | null
  consolidated_text: string | null
  last_duplicate_at: number | null
}

function toItem(r: Row) {
  return {
    id: r.id,
    appId: r.app_id,
    status: r.status,
    submittedBy: { mode: r.submitted_mode, externalUserId: r.external_user_id, email: r.email, name: r.submitter_name },
    severity: r.severity,
    text: r.text,
    url: r.url,
    createdAt: iso(r.created_at),
    processedAt: iso(r.processed_at),
    mergeRequestUrl: r.merge_request_url,
    duplicateOfId: r.duplicate_of_id,
    duplicateCount: r.duplicate_count,
    theme: r.theme,
    consolidatedText: r.consolidated_text,
    lastDuplicateAt: iso(r.last_duplicate_at),
  }
}

export function startFloor(opts: { file: string; port: number; orgId: string; appId: string; pubKey: string; skKey: string }) {
  const db = openFloorDb(opts.file)
  const insertFeedback = db.prepare(
    `INSERT INTO feedback (id, org_id, app_id, status, severity, text, url, user_agent, viewport, console_logs, metadata, submitted_mode, created_at, updated_at)
     VALUES ($id, $orgId, $appId, 'received', $severity, $text, $url, $userAgent, $viewport, $consoleLogs, $metadata, 'public', $now, $now)`,
  )
  const insertJob = db.prepare(`INSERT INTO jobs (kind, feedback_id, run_after, created_at) VALUES ('process', ?, ?, ?)`)
  const cols = 'id, app_id, status, submitted_mode, external_user_id, email, submitter_name, severity, text, url, created_at, processed_at, merge_request_url, duplicate_of_id, duplicate_count, theme, consolidated_text, last_duplicate_at'
  const newest = db.prepare(`SELECT ${cols} FROM feedback WHERE org_id = ? AND duplicate_of_id IS NULL ORDER BY id DESC LIMIT ?`)
  const after = db.prepare(`SELECT ${cols} FROM feedback WHERE org_id = ? AND duplicate_of_id IS NULL AND id < ? ORDER BY id DESC LIMIT ?`)
  // One transaction per request: BEGIN, both inserts, COMMIT.
  type Submit = { id: string; severity: string | null; text: string; url: string | null; userAgent: string | null; viewport: string | null; consoleLogs: string | null; metadata: string | null; now: number }
  const submit = db.transaction((p: Submit) => {
    insertFeedback.run({ ...p, orgId: opts.orgId, appId: opts.appId })
    insertJob.run(p.id, p.now, p.now)
  })
  const pubAuth = `Bearer ${opts.pubKey}`
  const skAuth = `Bearer ${opts.skKey}`

  async function post(req: Request): Promise<Response> {
    if (req.headers.get('authorization') !== pubAuth) return fail(401, 'unknown_app')
    let parsed: unknown
    try {
      parsed = await req.json()
    } catch {
      return fail(400, 'invalid_body')
    }
    if (typeof parsed !== 'object' || parsed === null) return fail(400, 'invalid_body')
    const { text, url, severity, viewport, consoleLogs, metadata } = parsed as Record<string, unknown>
    if (typeof text !== 'string' || text.length < 1 || text.length > 8192) return fail(400, 'invalid_body')
    if (url !== undefined && (typeof url !== 'string' || url.length > 2048 || !URL.canParse(url))) return fail(400, 'invalid_body')
    const now = Date.now()
    const id = newId(now)
    submit({
      id,
      severity: typeof severity === 'string' ? severity : null,
      text,
      url: (url as string | undefined) ?? null,
      userAgent: req.headers.get('user-agent')?.slice(0, 512) ?? null,
      viewport: viewport === undefined ? null : JSON.stringify(viewport),
      consoleLogs: consoleLogs === undefined ? null : JSON.stringify(consoleLogs),
      metadata: metadata === undefined ? null : JSON.stringify(metadata),
      now,
    })
    return new Response(JSON.stringify({ id, status: 'received' }), { status: 201, headers: JSON_HEADERS })
  }

  function list(req: Request, url: URL): Response {
    if (req.headers.get('authorization') !== skAuth) return fail(401, 'invalid_authorization')
    const limitText = url.searchParams.get('limit')
    const limit = limitText === null ? 50 : Number(limitText)
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) return fail(400, 'invalid_body')
    const cursor = url.searchParams.get('cursor')
    if (cursor !== null && !ID_RE.test(cursor)) return fail(400, 'invalid_body')
    const rows = (cursor === null ? newest.all(opts.orgId, limit + 1) : after.all(opts.orgId, cursor, limit + 1)) as Row[]
    const more = rows.length > limit
    const page = more ? rows.slice(0, limit) : rows
    return new Response(JSON.stringify({ data: page.map(toItem), nextCursor: more ? page[page.length - 1].id : null }), { headers: JSON_HEADERS })
  }

  return Bun.serve({
    hostname: '127.0.0.1',
    port: opts.port,
    fetch(req) {
      const url = new URL(req.url)
      if (url.pathname === '/v1/feedback') {
        if (req.method === 'POST') return post(req)
        if (req.method === 'GET') return list(req, url)
      }
      if (url.pathname === '/healthz') return new Response('ok')
      return fail(404, 'route_not_found')
    },
  })
}

if (import.meta.main) {
  const need = (name: string) => {
    const v = process.env[name]
    if (!v) throw new Error(`floor-server: ${name} is required`)
    return v
  }
  const server = startFloor({
    file: need('FLOOR_DB'),
    port: Number(process.env.FLOOR_PORT ?? 8091),
    orgId: need('FLOOR_ORG_ID'),
    appId: need('FLOOR_APP_ID'),
    pubKey: need('FLOOR_PUB_KEY'),
    skKey: need('FLOOR_SK_KEY'),
  })
  process.stdout.write(`floor listening on http://127.0.0.1:${server.port}\n`)
  const stop = () => {
    server.stop(true)
    process.exit(0)
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}
