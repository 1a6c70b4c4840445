/**
 * Prepares the benchmark's two databases with the same N feedback rows (default 1,000,000):
 * 1. fixloop's data dir through the real CLI: `migrate`, `org create`, `key create`, `app create`;
 * 2. the rows, straight into fixloop's SQLite and into the floor's database (same ids, same text),
 *    in transactions of 50,000 rows;
 * 3. `tenant.env` (ids and keys for run.sh) and `cursors.txt` (random seeded ids, one a line, for the
 *    random-cursor list benchmark) in the output dir.
 *
 * Rows look like processed reports: status awaiting_manual, version 3, realistic text, ids laid out as
 * fixloop's (4-byte unix seconds, 5 random bytes, 3-byte counter), ascending, spread over 90 days that
 * end an hour ago so everything the benchmark POSTs sorts after them.
 *
 * With --bare-db FILE the same rows also go into the barest floor's one table (bench/bare-floor.ts).
 *
 * Usage: bun bench/seed.ts --bin dist/fixloop --data-dir DIR --floor-db FILE --out DIR [--rows N] [--cursors N] [--bare-db FILE]
 */
import { Database } from 'bun:sqlite'
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { openFloorDb } from './floor-server'
import { openBareDb, BARE_INSERT } from './bare-floor'

const { values } = parseArgs({
  options: {
    bin: { type: 'string', default: 'dist/fixloop' },
    'data-dir': { type: 'string' },
    'floor-db': { type: 'string' },
    'bare-db': { type: 'string' },
    out: { type: 'string' },
    rows: { type: 'string', default: '1000000' },
    cursors: { type: 'string', default: '2000' },
  },
})
const dataDir = values['data-dir']
const floorFile = values['floor-db']
const outDir = values.out
if (!dataDir || !floorFile || !outDir) throw new Error('usage: bun bench/seed.ts --bin BIN --data-dir DIR --floor-db FILE --out DIR [--rows N]')
const ROWS = Number(values.rows)
const CURSORS = Number(values.cursors)
const BATCH = 50_000

/** Runs one fixloop CLI command and returns its --json object. */
function cli(...args: string[]): Record<string, string> {
  const res = Bun.spawnSync([values.bin!, ...args, '--data-dir', dataDir!], { stderr: 'pipe' })
  if (res.exitCode !== 0) throw new Error(`fixloop ${args.join(' ')} failed: ${res.stderr.toString()}`)
  const text = res.stdout.toString()
  return args.includes('--json') ? JSON.parse(text) : { text }
}

cli('migrate')
const org = cli('org', 'create', '--name', 'B', '--json')
const key = cli('key', 'create', '--org', org.id, '--name', 'bench', '--json')
const app = cli('app', 'create', '--org', org.id, '--name', 'A', '--json')

// A deterministic generator, so every run (and both databases) get the same text.
let seed = 0x9e3779b9
function rand(): number {
  seed ^= seed << 13
  seed ^= seed >>> 17
  seed ^= seed << 5
  return (seed >>> 0) / 4294967296
}
const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)]

const SUBJECTS = ['The checkout button', 'The search box', 'Login with Google', 'The cart page', 'The price filter', 'Dark mode', 'The product gallery', 'The shipping form', 'The password reset email', 'The order history page', 'The mobile menu', 'The coupon field']
const PROBLEMS = ['does nothing when I click it', 'shows a blank page', 'is very slow to load', 'overlaps the footer on my phone', 'throws an error', 'forgets what I typed', 'shows the wrong currency', 'never finishes loading', 'is cut off on small screens', 'jumps to the top of the page', 'shows yesterday\'s prices', 'logs me out']
const CONTEXT = ['after I added two items.', 'on Safari 17.', 'since the last update.', 'only on the second try.', 'when I switch language to German.', 'with an ad blocker on.', 'on a slow connection.', 'right after login.', 'when the cart is empty.', 'in landscape mode.']
const EXTRA = ['', '', ' Please fix, I almost gave up on the order.', ' Happened three times today.', ' Screenshot attached would show a spinner forever.', ' It worked fine last week.', ' My colleague sees the same thing.']
const PAGES = ['/', '/cart', '/checkout', '/p/red-shoes', '/p/blue-jacket', '/search?q=lamp', '/account/orders', '/login']
const AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15',
  'Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0',
]
const VIEWPORTS = ['{"w":1920,"h":1080,"dpr":1}', '{"w":390,"h":844,"dpr":3}', '{"w":1440,"h":900,"dpr":2}', '{"w":1366,"h":768,"dpr":1}']
const SEVERITIES = [null, null, 'low', 'medium', 'high'] as const

const INSERT = `INSERT INTO feedback (id, org_id, app_id, status, version, severity, text, url, user_agent, viewport,
  submitted_mode, redactions, created_at, updated_at, processed_at)
  VALUES (?, ?, ?, 'awaiting_manual', 3, ?, ?, ?, ?, ?, 'public', '{}', ?, ?, ?)`

const fixloopDb = new Database(join(dataDir, 'fixloop.db'), { strict: true })
fixloopDb.run('PRAGMA busy_timeout = 5000')
fixloopDb.run('PRAGMA journal_mode = WAL')
const floorDb = openFloorDb(floorFile)
const targets = [fixloopDb, floorDb].map((db) => {
  // Seeding only: nothing to protect yet, so skip the per-transaction sync work.
  db.run('PRAGMA synchronous = OFF')
  db.run('PRAGMA cache_size = -262144')
  return { db, insert: db.prepare(INSERT), bare: false }
})
if (values['bare-db']) {
  const db = openBareDb(values['bare-db'])
  db.run('PRAGMA synchronous = OFF')
  targets.push({ db, insert: db.prepare(BARE_INSERT), bare: true })
}

const processRandom = randomBytes(5).toString('hex')
let counter = Math.floor(rand() * (0xffffff - ROWS - 1))
const endMs = Date.now() - 3600_000
const spanMs = 90 * 24 * 3600_000
const stepMs = spanMs / Math.max(1, ROWS)
const cursorEvery = Math.max(1, Math.floor(ROWS / CURSORS))
const cursors: string[] = []

const t0 = performance.now()
for (let start = 0; start < ROWS; start += BATCH) {
  const n = Math.min(BATCH, ROWS - start)
  const rows: unknown[][] = new Array(n)
  for (let i = 0; i < n; i++) {
    const ms = Math.floor(endMs - spanMs + (start + i) * stepMs)
    counter++
    const id = (Math.floor(ms / 1000) >>> 0).toString(16).padStart(8, '0') + processRandom + counter.toString(16).padStart(6, '0')
    const text = `${pick(SUBJECTS)} ${pick(PROBLEMS)} ${pick(CONTEXT)}${pick(EXTRA)}`
    rows[i] = [id, org.id, app.id, pick(SEVERITIES), text, `https://shop.example${pick(PAGES)}`, pick(AGENTS), pick(VIEWPORTS), ms, ms + 2000, ms + 1500]
    // Cursors from the whole range, but not from the oldest page, so every cursor page is full.
    if ((start + i) % cursorEvery === cursorEvery - 1 && start + i > 100) cursors.push(id)
  }
  for (const { db, insert, bare } of targets) {
    db.transaction(() => {
      // The bare table: id, text, url, severity, user_agent, viewport, console_logs, metadata, created_at.
      for (const r of rows) insert.run(...((bare ? [r[0], r[4], r[5], r[3], r[6], r[7], null, null, r[8]] : r) as Parameters<typeof insert.run>))
    })()
  }
}
for (const { db } of targets) {
  db.run('PRAGMA wal_checkpoint(TRUNCATE)')
  db.close()
}

// Shuffle so the load tool's cursor order does not walk the index in step.
for (let i = cursors.length - 1; i > 0; i--) {
  const j = Math.floor(rand() * (i + 1))
  ;[cursors[i], cursors[j]] = [cursors[j], cursors[i]]
}
writeFileSync(join(outDir, 'cursors.txt'), cursors.join('\n') + '\n')
writeFileSync(
  join(outDir, 'tenant.env'),
  [`ORG_ID=${org.id}`, `APP_ID=${app.id}`, `SK_KEY=${key.key}`, `PUB_KEY=${app.publicKey}`].join('\n') + '\n',
  { mode: 0o600 },
)
const secs = ((performance.now() - t0) / 1000).toFixed(1)
process.stdout.write(`seeded ${ROWS} rows into both databases in ${secs} s; ${cursors.length} cursors\n`)
