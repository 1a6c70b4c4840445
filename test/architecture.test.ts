/**
 * The architecture, checked on the sources:
 * - layers only import downwards: core ← db ← lifecycle ← modules ← store ← worker/agent ← http ← app.
 *   `db` is the storage infrastructure both dialects share (schema, migrations, connections); the ports
 *   (every repository interface, src/db/store.ts's `Store`, src/context.ts) belong to `modules`, the
 *   domain; `store` is each dialect's implementation (src/db/sqlite/, src/db/pg/: the repositories and
 *   the store that builds them), which implements the ports and is chosen by the composition roots
 *   (`app`: src/runtime/, server, services, CLI), so no module can import a dialect;
 * - `bun:sqlite` is imported only by the SQLite side (src/db/sqlite/ and the SQLite infrastructure in src/db/);
 * - only src/lifecycle/ writes a report's `status` or inserts a job;
 * - SQL lives in repo modules (src/db/, modules/<m>/repo.ts, any *-repo.ts, the outbox), never in
 *   worker steps, the agent runner, dedup/ or a route.
 * Each detector is first shown to catch a planted violation, so a green run means something.
 */
import { describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { ROOT } from './harness'

const SRC = join(ROOT, 'src')

function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : []
  })
}

const FILES = sourceFiles().map((abs) => ({ abs, rel: relative(SRC, abs), text: readFileSync(abs, 'utf8') }))
const textOf = new Map(FILES.map((f) => [f.rel, f.text]))

/** A module file that defines Elysia routes belongs to the HTTP layer, whatever its folder. */
const isRouteFile = (rel: string, text: string) => rel.startsWith('modules/') && /new Elysia\(/.test(text)

const LAYERS = ['core', 'db', 'lifecycle', 'modules', 'store', 'worker/agent', 'http', 'app'] as const
type Layer = (typeof LAYERS)[number]

/** Storage infrastructure under src/db/{sqlite,pg}/ (not a repository implementation): plain `db` layer. */
const STORAGE_INFRA = /^db\/(pg\/(schema\/|(storage|client-options|connect|migrate|migrations|transaction|group-commit|event-signal|master-key|instance-meta|rekey|key-lock|db-clock)\.ts$)|sqlite\/(storage|errors|client|migrate|group-commit|write-turns|checkpointer|checkpointer-worker|instance-meta|schema-guard|master-key-check|rekey)\.ts$)/

/**
 * A repository implementation of one dialect, or its store (src/db/sqlite/*, src/db/pg/*, except the
 * infrastructure), or a business transaction both dialects' repositories run (src/db/bodies/*).
 */
const isAdapter = (rel: string) => /^db\/(sqlite|pg|bodies)\//.test(rel) && !STORAGE_INFRA.test(rel)

function layerOf(rel: string, text: string): Layer {
  if (isAdapter(rel)) return 'store'
  if (rel.startsWith('core/') || rel.startsWith('sanitize/') || ['config.ts', 'version.ts'].includes(rel)) return 'core'
  // The ports as a whole: what every module is given (the store's interface, the context holding it).
  if (rel === 'db/store.ts' || rel === 'context.ts') return 'modules'
  if (rel.startsWith('db/') || rel.startsWith('blobs/')) return 'db'
  if (rel.startsWith('lifecycle/')) return 'lifecycle'
  if (isRouteFile(rel, text) || rel.startsWith('http/') || rel.startsWith('admin-ui/')) return 'http'
  if (rel.startsWith('modules/') || rel.startsWith('trackers/') || (rel.startsWith('dedup/') && !/^dedup\/(pg-)?service\.ts$/.test(rel)) || rel.startsWith('auth/') || rel.startsWith('nodes/') || rel.startsWith('abuse/')) return 'modules'
  // Each dialect's clustering service is a piece of that dialect's processing engine (worker/processing-*.ts).
  if (rel.startsWith('worker/') || rel.startsWith('agent/') || rel === 'dedup/service.ts' || rel === 'dedup/pg-service.ts') return 'worker/agent'
  if (['app.ts', 'main.ts', 'production-mode.ts'].includes(rel) || rel.startsWith('cli/') || rel.startsWith('runtime/')) return 'app'
  throw new Error(`src/${rel} has no layer: add it to layerOf in test/architecture.test.ts`)
}

/** Relative imports of a file (static, dynamic and re-exports, type-only included), as src-relative paths. */
function importsOf(rel: string, text: string): string[] {
  const specs = [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1])
  return specs.map((spec) => {
    const target = relative(SRC, resolve(dirname(join(SRC, rel)), spec))
    return target.endsWith('.ts') ? target : `${target}.ts`
  })
}

function layerViolations(files: { rel: string; text: string }[], lookup: (rel: string) => string | undefined): string[] {
  const out: string[] = []
  for (const f of files) {
    const from = layerOf(f.rel, f.text)
    for (const target of importsOf(f.rel, f.text)) {
      const targetText = lookup(target)
      if (targetText === undefined) continue // outside src (e.g. package.json) or a non-TS asset
      const to = layerOf(target, targetText)
      if (LAYERS.indexOf(to) > LAYERS.indexOf(from)) out.push(`src/${f.rel} (${from}) imports src/${target} (${to})`)
    }
  }
  return out
}

/** Where a file writes a report's status or inserts a job, outside the lifecycle. */
function lifecycleViolations(rel: string, text: string): string[] {
  // The lifecycle, its two storage sides and the transactions they share (src/db/bodies/lifecycle.ts).
  if (rel.startsWith('lifecycle/') || /^db\/(sqlite|pg|bodies)\/lifecycle/.test(rel)) return []
  const out: string[] = []
  for (const m of text.matchAll(/UPDATE\s+feedback\s+SET\s+([\s\S]*?)(?:\bWHERE\b|['"`])/gi)) {
    if (/(^|[\s,(])status\s*=/.test(m[1])) out.push(`src/${rel}: SQL writes feedback.status`)
  }
  if (/\.update\(\s*feedback\s*\)\s*\.set\(\s*\{[^}]*\bstatus\s*:/.test(text)) out.push(`src/${rel}: drizzle writes feedback.status`)
  if (/INSERT\s+(OR\s+\w+\s+)?INTO\s+jobs\b/i.test(text)) out.push(`src/${rel}: SQL inserts a job`)
  if (/\.insert\(\s*jobs\s*\)/.test(text)) out.push(`src/${rel}: drizzle inserts a job`)
  return out
}

const SQL_TEXT = /['"`]\s*(SELECT\b|INSERT\s+(OR\s+\w+\s+)?INTO\b|UPDATE\s+\w+\s+SET\b|DELETE\s+FROM\b|PRAGMA\b|VACUUM\b|CREATE\s+(TEMP\s+)?(TABLE|TRIGGER|INDEX)\b)/i
const SQL_CALL = /\b(sqlite|db|tx)\s*\.\s*(query|prepare|run|exec|select|insert|update|delete)\s*\(/

const isRepoModule = (rel: string) => rel.startsWith('db/') || /(^|\/)repo\.ts$/.test(rel) || rel.endsWith('-repo.ts') || rel === 'lifecycle/outbox.ts'

/** Folders (and route files) where SQL must never appear: it belongs in a repo module. */
function mustHaveNoSql(rel: string, text: string): boolean {
  if (isRepoModule(rel)) return false
  return ['worker/', 'agent/', 'dedup/', 'lifecycle/', 'http/', 'auth/', 'abuse/'].some((p) => rel.startsWith(p)) || isRouteFile(rel, text)
}

function sqlViolations(rel: string, text: string): string[] {
  if (!mustHaveNoSql(rel, text)) return []
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '')
  return SQL_TEXT.test(code) || SQL_CALL.test(code) ? [`src/${rel}: SQL outside a repo module`] : []
}

/** The few files outside src/db/sqlite/ that may hold a `bun:sqlite` handle. */
const SQLITE_INFRA = new Set([
  // The data dir's locks are SQLite files in either mode; backups and migrate-db's reader are embedded-mode tools.
  'db/backup/write.ts', 'db/data-dir-lock.ts', 'db/key-lock.ts', 'db/transfer/sqlite-source.ts',
])

/** Files that import `bun:sqlite` (type-only included) outside the SQLite side. */
function sqliteImportViolations(rel: string, text: string): string[] {
  if (rel.startsWith('db/sqlite/') || SQLITE_INFRA.has(rel)) return []
  return /from\s+['"]bun:sqlite['"]|import\s*\(\s*['"]bun:sqlite['"]/.test(text) ? [`src/${rel} imports bun:sqlite`] : []
}

describe('the detectors catch planted violations', () => {
  test('bun:sqlite outside the SQLite side', () => {
    expect(sqliteImportViolations('modules/x/repo.ts', "import type { Database } from 'bun:sqlite'")).toEqual(['src/modules/x/repo.ts imports bun:sqlite'])
    expect(sqliteImportViolations('db/pg/x.ts', "const m = await import('bun:sqlite')")).toEqual(['src/db/pg/x.ts imports bun:sqlite'])
    expect(sqliteImportViolations('db/sqlite/x.ts', "import { Database } from 'bun:sqlite'")).toEqual([])
  })

  test('an import from a higher layer', () => {
    const planted = [
      { rel: 'core/planted.ts', text: "import { x } from '../db/sqlite/client'" },
      { rel: 'worker/planted.ts', text: "import type { AuthDeps } from '../http/auth'" },
      { rel: 'agent/planted.ts', text: "export { feedbackRoutes } from '../modules/feedback/index'" },
      { rel: 'modules/planted.ts', text: "import { startServer } from '../runtime/server'" },
      { rel: 'db/planted.ts', text: "import { createLifecycle } from '../lifecycle/lifecycle'" },
    ]
    const lookup = (rel: string) => textOf.get(rel)
    expect(layerViolations(planted, lookup)).toEqual([
      'src/core/planted.ts (core) imports src/db/sqlite/client.ts (db)',
      'src/worker/planted.ts (worker/agent) imports src/http/auth.ts (http)',
      'src/agent/planted.ts (worker/agent) imports src/modules/feedback/index.ts (http)',
      'src/modules/planted.ts (modules) imports src/runtime/server.ts (app)',
      'src/db/planted.ts (db) imports src/lifecycle/lifecycle.ts (lifecycle)',
    ])
    // Downward imports are fine.
    expect(layerViolations([{ rel: 'worker/ok.ts', text: "import { createLifecycle } from '../lifecycle/lifecycle'\nimport '../core/ids'" }], lookup)).toEqual([])
  })

  // [detector, file, source, violations expected]
  const DETECTORS = { lifecycle: lifecycleViolations, sql: sqlViolations }
  const planted: [keyof typeof DETECTORS, string, string, number][] = [
    ['lifecycle', 'worker/x.ts', "q('UPDATE feedback SET status = ?, version = version + 1 WHERE id = ?')", 1],
    ['lifecycle', 'agent/x.ts', "q(`UPDATE feedback\n  SET updated_at = ?, status = 'failed' WHERE id = ?`)", 1],
    ['lifecycle', 'modules/x.ts', 'db.update(feedback).set({ version: 2, status: to })', 1],
    ['lifecycle', 'modules/x.ts', "q('INSERT INTO jobs (kind) VALUES (?)')", 1],
    ['lifecycle', 'modules/x.ts', 'db.insert(jobs).values(row)', 1],
    // Reading status, or filtering on it, is not writing it; the lifecycle itself may write.
    ['lifecycle', 'modules/x.ts', "q('UPDATE feedback SET text = ? WHERE id = ? AND status = ?')", 0],
    ['lifecycle', 'modules/x.ts', "q('SELECT status FROM feedback')", 0],
    ['lifecycle', 'lifecycle/x.ts', "q('UPDATE feedback SET status = ?')", 0],
    ['sql', 'worker/steps/x.ts', "const q = sqlite.query('SELECT 1')", 1],
    ['sql', 'agent/runner.ts', 'run(`DELETE FROM jobs WHERE id = ?`)', 1],
    ['sql', 'dedup/service.ts', 'db.select().from(feedback)', 1],
    ['sql', 'modules/x/index.ts', "new Elysia().get('/', () => sqlite.query('SELECT 1').get())", 1],
    ['sql', 'agent/runs-repo.ts', "sqlite.query('SELECT 1')", 0],
    // Words in prose are not SQL.
    ['sql', 'worker/steps/x.ts', '// SELECT the next job\nconst pick = 1', 0],
  ]
  test('a status write or a job insert outside the lifecycle; SQL in a worker step, the runner, cluster/ or a route', () => {
    expect(planted.map(([d, rel, text]) => ({ d, text, found: DETECTORS[d](rel, text).length }))).toEqual(planted.map(([d, , text, found]) => ({ d, text, found })))
  })
})

describe('the sources', () => {
  test('bun:sqlite is imported only on the SQLite side', () => {
    expect(FILES.flatMap((f) => sqliteImportViolations(f.rel, f.text))).toEqual([])
    // And the detector is pointed at real code: the SQLite side does import it.
    expect(FILES.filter((f) => f.rel.startsWith('db/sqlite/')).some((f) => sqliteImportViolations('modules/as-if.ts', f.text).length > 0)).toBe(true)
  })

  test('every file has a layer, and no file imports a higher layer', () => {
    expect(layerViolations(FILES, (rel) => textOf.get(rel))).toEqual([])
  })

  test('only the lifecycle (src/lifecycle/ and its two storage sides) writes a report status or inserts a job', () => {
    expect(FILES.flatMap((f) => lifecycleViolations(f.rel, f.text))).toEqual([])
    // And each side does both, with the bodies they share: the detectors are pointed at real code.
    for (const side of ['db/sqlite/lifecycle', 'db/pg/lifecycle']) {
      expect(FILES.filter((f) => f.rel.startsWith(side) || f.rel.startsWith('db/bodies/lifecycle')).flatMap((f) => lifecycleViolations('modules/as-if.ts', f.text)).length).toBeGreaterThanOrEqual(2)
    }
    for (const side of ['db/sqlite/lifecycle', 'db/pg/lifecycle', 'db/bodies/lifecycle']) {
      expect(FILES.filter((f) => f.rel.startsWith(side)).flatMap((f) => lifecycleViolations('modules/as-if.ts', f.text)).length).toBeGreaterThanOrEqual(1)
    }
  })

  test('no SQL in worker steps, the agent runner, cluster/, lifecycle logic, auth/, http/ or routes', () => {
    expect(FILES.flatMap((f) => sqlViolations(f.rel, f.text))).toEqual([])
  })
})

/** Files that import each other in a loop (strongly connected components of more than one file; Tarjan). */
function importCircles(files: { rel: string; text: string }[]): string[][] {
  const known = new Set(files.map((f) => f.rel))
  const edges = new Map(files.map((f) => [f.rel, [...new Set(importsOf(f.rel, f.text).filter((t) => known.has(t) && t !== f.rel))]]))
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const onStack = new Set<string>()
  const stack: string[] = []
  const circles: string[][] = []
  const visit = (v: string) => {
    index.set(v, next)
    low.set(v, next++)
    stack.push(v)
    onStack.add(v)
    for (const w of edges.get(v)!) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        c.push(w)
      } while (w !== v)
      if (c.length > 1) circles.push(c.sort())
    }
  }
  for (const f of files) if (!index.has(f.rel)) visit(f.rel)
  return circles
}

/** Places that decide the dialect (`dialect === …`), and files outside src/db/ importing a dialect folder. */
const dialectTests = (files: { text: string }[]) => files.reduce((n, f) => n + (f.text.match(/dialect\s*(===|!==)/g)?.length ?? 0), 0)
const dialectImporters = (files: { rel: string; text: string }[]) => files.filter((f) => !f.rel.startsWith('db/') && importsOf(f.rel, f.text).some((t) => /^db\/(sqlite|pg)\//.test(t))).map((f) => f.rel)

/**
 * The files outside src/db/ that may import a dialect folder (src/db/sqlite/, src/db/pg/), each for its
 * reason. Every other module sees the ports (src/db/store.ts and the repository interfaces) only.
 */
const DIALECT_IMPORTERS: Record<string, string> = {
  'runtime/open-sqlite.ts': 'the composition root on SQLite (runtime/open.ts picks the dialect once): opens the data dir and builds its store',
  'runtime/open-pg.ts': 'the composition root on PostgreSQL, loaded only when FIXLOOP_DATABASE_URL is set: connects and builds its store',
  'runtime/embedded.ts': 'embedded mode: the processing thread and its write turns',
  'runtime/cluster.ts': 'cluster mode: event commits heard across nodes',
  'worker/thread-entry.ts': "the processing thread's own root: its connection and store",
  'worker/processing-sqlite.ts': 'the embedded processing engine (one synchronous transaction per batch)',
  'worker/processing-pg.ts': 'the PostgreSQL processing engine (a snapshot, then a PgTx per report)',
  'cli/ops.ts': 'migrate, backup and rekey of the embedded file; rekey on PostgreSQL',
  'cli/migrate-db.ts': 'moving a data dir to PostgreSQL',
  'cli/postgres-mode.ts': 'checking and migrating a PostgreSQL database before serve',
}

describe('one store per dialect, chosen once (issue 37)', () => {
  test('the circle detector finds a planted loop, and only loops', () => {
    const planted = [
      { rel: 'modules/a/repo.ts', text: "import { x } from '../../db/sqlite/a'" },
      { rel: 'db/sqlite/a.ts', text: "import type { ARepo } from '../../modules/a/repo'" },
      { rel: 'modules/b.ts', text: "import { y } from './a/repo'" },
    ]
    expect(importCircles(planted)).toEqual([['db/sqlite/a.ts', 'modules/a/repo.ts']])
    expect(dialectImporters(planted)).toEqual(['modules/a/repo.ts'])
  })

  test('no import circle, no dialect switch, and a dialect folder imported only by the roots, the engines and the migrate CLI', () => {
    expect(importCircles(FILES).map((c) => c.join(' -> '))).toEqual([])
    // The dialect is decided by construction (src/runtime/open.ts opens one side, which builds one store), never by a test on it.
    expect(dialectTests(FILES)).toBe(0)
    expect(dialectImporters(FILES).filter((rel) => !(rel in DIALECT_IMPORTERS))).toEqual([])
    // The roots, the two engines and the migrate CLI only (issue 37: at most 10).
    expect(Object.keys(DIALECT_IMPORTERS).length).toBeLessThanOrEqual(10)
    // And the list holds no file that no longer needs its place on it.
    expect(Object.keys(DIALECT_IMPORTERS).filter((rel) => !dialectImporters(FILES).includes(rel))).toEqual([])
  })
})

describe("the README's layout", () => {
  test('lists every folder of src/ (and no folder that is gone)', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
    const block = readme.slice(readme.indexOf('## Layout'))
    const listed = [...block.slice(0, block.indexOf('\n```\n', block.indexOf('```') + 3)).matchAll(/^src\/([\w-]+(?:\/[\w-]+)?)\/ /gm)].map((m) => m[1])
    const folders = readdirSync(SRC).filter((name) => statSync(join(SRC, name)).isDirectory())
    expect(folders.filter((f) => !listed.includes(f)).map((f) => `src/${f}/ is not in the README's layout`)).toEqual([])
    expect(listed.filter((f) => !existsSync(join(SRC, f))).map((f) => `the README lists src/${f}/, which is gone`)).toEqual([])
  })
})

/** The modules `entry` loads before its first line runs: its static imports, followed (not `import()`). */
function staticReach(inputs: Record<string, { imports: { path: string; kind: string }[] }>, entry: string): Set<string> {
  const seen = new Set([entry])
  const queue = [entry]
  while (queue.length > 0) {
    for (const i of inputs[queue.pop()!]?.imports ?? []) {
      if (i.kind === 'dynamic-import' || seen.has(i.path)) continue
      seen.add(i.path)
      queue.push(i.path)
    }
  }
  return seen
}

describe('what a command loads (startup time: every CLI call and server start pays it)', () => {
  test('the build splits the bundle at each import(): the chunk every call evaluates holds no command', async () => {
    // Without --splitting, `bun build --compile` makes one chunk of all 1,300+ modules, and the binary
    // loads all of it at every start (~12 ms CPU of each command, ~0.1 CPU-s of a server start and its threads).
    const script = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { build: string } }).scripts.build
    const flags = script.slice(script.indexOf('bun build --compile')).split(' ')
    expect(flags).toContain('--format=esm')
    const out = await Bun.build({ entrypoints: [join(SRC, 'main.ts')], target: 'bun', format: 'esm', splitting: flags.includes('--splitting'), throw: true })
    const entry = out.outputs.find((o) => o.kind === 'entry-point')!
    const text = await entry.text()
    expect(text).toContain('self-hosted feedback intake and triage') // the dispatcher's own help is there
    // `org`'s help, the dashboard's assets and the server's wiring are in chunks of their own.
    for (const marker of ['the key is printed once', 'rrweb', 'listening on']) expect({ marker, inEntry: text.includes(marker) }).toEqual({ marker, inEntry: false })
  })

  test('on the embedded SQLite, no command loads the PostgreSQL driver, the S3 client or the mailer; the top-level help loads no command', async () => {
    const out = await Bun.build({ entrypoints: [join(SRC, 'main.ts')], target: 'bun', metafile: true, throw: true })
    const inputs = out.metafile!.inputs as Record<string, { imports: { path: string; kind: string }[] }>
    const heavy = (file: string) => /node_modules\/(pg|minio|nodemailer)\/|^src\/db\/pg\/|^src\/runtime\/open-pg\.ts$/.test(file)
    const main = staticReach(inputs, 'src/main.ts')
    // `fixloop --help`, `version`: the dispatcher alone, no command, no database layer.
    expect([...main].filter((f) => /^src\/(cli\/(serve|tenants|admin|feedback)\.ts|db\/sqlite\/|runtime\/)|node_modules\/(elysia|drizzle-orm)\//.test(f))).toEqual([])
    for (const command of ['serve', 'tenants', 'admin', 'feedback', 'webhooks', 'audit', 'chatops', 'trackers', 'ops']) {
      const reach = staticReach(inputs, `src/cli/${command}.ts`)
      expect(reach.size).toBeGreaterThan(50) // the command itself was found and followed
      expect({ command, heavy: [...reach].filter(heavy) }).toEqual({ command, heavy: [] })
    }
  })

  test("the admin commands load neither the HTTP layer (Elysia, TypeBox, routes), node:http/net, the server's wiring nor the clustering engine", async () => {
    const out = await Bun.build({ entrypoints: [join(SRC, 'main.ts')], target: 'bun', metafile: true, throw: true })
    const inputs = out.metafile!.inputs as Record<string, { imports: { path: string; kind: string }[] }>
    // What only `serve` (or the one command that sends or clusters) needs: ~35 ms CPU of every command before.
    const serverOnly = (file: string) =>
      /node_modules\/(elysia|@sinclair\/typebox|@elysiajs)\/|^src\/(http\/|runtime\/(embedded|services|server)\.ts$|worker\/(loop|thread|processing-sqlite)\.ts$|modules\/[\w-]+\/routes\.ts$)|^(node:)?(http|https|net|tls)$/.test(file)
    for (const command of ['tenants', 'admin', 'feedback', 'webhooks', 'audit', 'chatops', 'trackers', 'ops']) {
      const reach = staticReach(inputs, `src/cli/${command}.ts`)
      expect(reach.size).toBeGreaterThan(50)
      expect({ command, serverOnly: [...reach].filter(serverOnly) }).toEqual({ command, serverOnly: [] })
    }
    // And serve still loads them (the pattern above names real files).
    expect([...staticReach(inputs, 'src/cli/serve.ts')].filter(serverOnly).length).toBeGreaterThan(10)
  })
})
