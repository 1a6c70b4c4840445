/**
 * Test harness: real temp data dirs, real migrations, real keys, a real HTTP server on a loopback
 * port (in-process or the compiled binary). No test bypasses auth.
 */
import { copyFileSync, existsSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { loadConfig } from '../src/config'
// Types only at load: the server's module graph (~0.4 CPU-s to load) is imported by startTestServer when a
// file starts one; 76 files use this harness for the binary and helpers alone, each in a fresh process.
import type { RunningServer, StartOptions } from '../src/runtime/server'
import type { createTenantsService, AppSettings } from '../src/modules/tenants/service'
import { Logger } from '../src/core/logger'
import type { Subprocess } from 'bun'
import { clusterEnv, TEST_DIALECT } from './cluster-env'
import { migratedSqlite } from './migrated-sqlite'
import { tempDir } from './temp-dirs'
import { atFileEnd } from './file-end'
import { freePort } from './free-port'

export const ROOT = resolve(import.meta.dir, '..')

/**
 * The servers and commands the harness starts hash new passwords at OWASP's argon2id floor (19 MiB, a
 * documented setting) instead of the default 64 MiB: each hash and each check of one costs ~0.05 CPU-s, not
 * ~0.2 (admin-throttle's sign-ins alone: 15 -> 5 CPU-s). test/password-hash-cost.test.ts checks the
 * default and the setting themselves; a test's own env still wins.
 */
export const TEST_PASSWORD_ENV = { FIXLOOP_PASSWORD_HASH_MIB: '19' }
export const BINARY = join(ROOT, 'dist', 'fixloop')

export { tempDir }

export interface TestServer extends RunningServer {
  dataDir: string
  admin: ReturnType<typeof createTenantsService>
  /** Stops the server and removes its data dir. */
  close(): Promise<void>
}

/**
 * A server in this process on a temp data dir, on an already migrated database: on SQLite a copy of one
 * migrated once (migratedSqlite, ~1 ms instead of ~0.1-0.2 s per server, many servers a file). With
 * FIXLOOP_TEST_DIALECT=pg (scripts/test-pg.sh) it runs in PostgreSQL mode on a fresh database of the test
 * file's own PostgreSQL, Redis and s3rver (test/cluster-env.ts), a clone of one migrated once. A first
 * start's migrating is what the binary tests on new data dirs check (spawnServer, cli, data-dir) and, on
 * PostgreSQL, the callers of clusterEnv() (pg-serve, cluster-mode). A test's own env still wins.
 */
export async function startTestServer(env: Record<string, string> = {}, options: StartOptions = {}): Promise<TestServer> {
  const dataDir = tempDir()
  if (TEST_DIALECT === 'pg') env = { ...(await clusterEnv(undefined, { migrated: true })), ...env }
  else if (!env.FIXLOOP_DATABASE_URL) copyFileSync(migratedSqlite(), join(dataDir, 'fixloop.db'))
  // Fixture agents (test/fixtures/agents) live in this repository: the agent sandbox shows their folder read-only.
  const config = loadConfig({ host: '127.0.0.1', port: '0', dataDir }, { FIXLOOP_LOG_LEVEL: 'silent', ...TEST_PASSWORD_ENV, FIXLOOP_AGENT_SANDBOX_PATHS: join(import.meta.dir, 'fixtures', 'agents'), ...env })
  const [{ startServer }, { createTenantsService }] = await Promise.all([import('../src/runtime/server'), import('../src/modules/tenants/service')])
  const running = await startServer(config, { log: new Logger('silent'), ...options })
  // A server a test left running is stopped after its file (stop() is idempotent): under --no-isolate its
  // loops and timers would otherwise run on in the worker through the files after it. A net, not a check:
  // what its stop throws is the test's own close() to report.
  atFileEnd(() => running.stop().catch(() => {}))
  const admin = createTenantsService(running.ctx)
  return {
    ...running,
    dataDir,
    admin,
    async close() {
      await running.stop()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

export interface Tenant {
  orgId: string
  key: string
  keyId: string
  appId: string
  pub: string
  secret: string
}

/** Creates an Org with an sk_ key and one App, through the same service the CLI uses. */
export async function seedTenant(admin: TestServer['admin'], app: Partial<AppSettings> = {}, name = 'Acme'): Promise<Tenant> {
  const org = await admin.createOrg(name)
  const key = await admin.createKey(org.id, 'test')
  const created = await admin.createApp(org.id, { name: `${name} App`, ...app })
  return { orgId: org.id, key: key.key, keyId: key.id, appId: created.id, pub: created.publicKey, secret: created.signingSecret }
}

export interface Reply {
  status: number
  headers: Headers
  body: any
  text: string
}

/** One HTTP call to a running server; JSON bodies are sent and parsed. */
export async function call(
  base: string,
  method: string,
  path: string,
  opts: { auth?: string; body?: unknown; rawBody?: string | Uint8Array; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...opts.headers }
  if (opts.auth) headers.authorization = `Bearer ${opts.auth}`
  let body: string | Uint8Array | undefined = opts.rawBody
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body)
    headers['content-type'] ??= 'application/json'
  }
  const res = await fetch(base + path, { method, headers, body })
  const text = await res.text()
  let parsed: unknown = undefined
  try {
    parsed = text ? JSON.parse(text) : undefined
  } catch {
    parsed = undefined
  }
  return { status: res.status, headers: res.headers, body: parsed, text }
}

/** Runs the compiled binary to completion (CLI commands). */
export async function runBinary(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: run "bun run build" first (bun run test does)`)
  const proc = Bun.spawn([BINARY, ...args], { env: { PATH: process.env.PATH ?? '', ...TEST_PASSWORD_ENV, ...env }, stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, stdout, stderr }
}

/** Starts `fixloop serve` from the compiled binary on a free port and waits for /healthz. */
export async function spawnServer(dataDir: string, env: Record<string, string> = {}): Promise<{ url: string; proc: Subprocess; stop: () => Promise<void> }> {
  const port = await freePort()
  if (TEST_DIALECT === 'pg') env = { ...(await clusterEnv(undefined, { migrated: true })), ...env }
  const proc = Bun.spawn([BINARY, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir], {
    env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn', ...TEST_PASSWORD_ENV, ...env },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  // A server a test left running is ended after its file, as an in-process one is (startTestServer).
  atFileEnd(async () => {
    if (proc.exitCode === null) proc.kill('SIGTERM')
    await proc.exited
  })
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 15_000
  for (;;) {
    try {
      const r = await fetch(url + '/healthz')
      if (r.status === 200) break
    } catch {
      // not listening yet
    }
    if (proc.exitCode !== null) throw new Error(`fixloop serve exited with ${proc.exitCode}`)
    if (Date.now() > deadline) throw new Error('fixloop serve did not become healthy in 15 s')
    await Bun.sleep(50)
  }
  return {
    url,
    proc,
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM')
      await proc.exited
    },
  }
}

/**
 * The binary serving `dataDir` (log level warn), its log kept: for tests that read what it logged.
 * `wrap` runs it under a command first (`['bash', '-c', 'ulimit -n 64 && exec "$0" "$@"']`). Healthy when
 * it resolves; `stop()` ends it (SIGTERM) and resolves with its whole log (stdout, JSON lines), read all
 * along so the pipe never fills.
 */
export async function spawnLoggedServer(dataDir: string, env: Record<string, string> = {}, wrap: string[] = []) {
  const port = await freePort()
  const proc = Bun.spawn([...wrap, BINARY, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir], {
    env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn', ...TEST_PASSWORD_ENV, ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const log = new Response(proc.stdout).text()
  const url = `http://127.0.0.1:${port}`
  const stop = async (): Promise<string> => {
    if (proc.exitCode === null) proc.kill('SIGTERM')
    await proc.exited
    return log
  }
  try {
    await eventually(async () => (await fetch(url + '/healthz').catch(() => null))?.status === 200, 15_000)
  } catch (e) {
    await stop()
    throw e
  }
  return { url, proc, stop }
}

export { freePort } from './free-port'

/** Polls until `check` returns a truthy value (for asynchronous worker progress). */
/**
 * One mailer pass, on a node that holds the dispatch role. A pass without the role sends nothing (the
 * holder sends it within its poll), and on a loaded machine a lease renewal can lag a moment on
 * PostgreSQL: a test that woke the mailer then would read an empty outbox, and the mail would land in
 * the next test.
 */
export async function mailerPass(server: TestServer): Promise<void> {
  // The role, and the mailer started with it: on a loaded machine a node can lose the role for a moment,
  // and between the mailer's stop and its start again a pass does nothing.
  await eventually(() => (server.services.coordinator.holds('dispatch') && server.services.mailer.isStarted()) || undefined, 20_000)
  await server.services.mailer.wake()
}

/**
 * How long `eventually` waits when not told: it returns as soon as the condition holds, so a long wait
 * costs a passing test nothing, while 5 s ran out on loaded machines (a stress run beside three test
 * files: a hub's 15 events delivered later than that).
 */
const DEFAULT_PATIENCE_MS = 15_000

/** How often `eventually` looks: quickly for its first second, then at most ~8 times a second. */
const EVENTUALLY_FAST_MS = 1_000
const EVENTUALLY_SLOW_PAUSE_MS = 120

/**
 * Waits until `check` returns something truthy, and returns it. After its first second it looks every
 * 120 ms: a check that reads the API with an `sk_` key spends that key's bucket (capacity 100, 10 a
 * second, SPEC 8), and at 20 ms a wait of a few seconds on a loaded machine emptied it; the test's next
 * read was then a 429 (a CI failure of test/spec-audit: the agent run read as `rate_limited`).
 */
export async function eventually<T>(check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = DEFAULT_PATIENCE_MS): Promise<T> {
  const start = Date.now()
  const deadline = start + timeoutMs
  for (;;) {
    const v = await check()
    if (v) return v
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await Bun.sleep(Date.now() - start < EVENTUALLY_FAST_MS ? 20 : EVENTUALLY_SLOW_PAUSE_MS)
  }
}
