/**
 * What a PostgreSQL-mode fixloop needs, for tests: a real PostgreSQL (test/pg-server.ts), a real
 * `redis-server` (Debian's package, on a random loopback port, no persistence) and s3rver, each started
 * once per test file on first use and stopped after it; `clusterEnv()` gives the FIXLOOP_* variables of a
 * fresh database (one per suite) on them.
 *
 * `FIXLOOP_TEST_DIALECT=pg` makes the harness (test/harness.ts) start every test server in PostgreSQL
 * mode with this environment: the HTTP-level tests of the spec's routes run on both dialects that way
 * (scripts/test-pg.sh lists them).
 */
import { existsSync, rmSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import type S3rver from 's3rver'
import type { Subprocess } from 'bun'
import { sharedPostgres } from './dialects'
import { tempDir } from './temp-dirs'
import { onceAtFileEnd } from './file-end'
import { freePort } from './free-port'

export const TEST_DIALECT: 'sqlite' | 'pg' = process.env.FIXLOOP_TEST_DIALECT === 'pg' ? 'pg' : 'sqlite'

/** One master key for the test file: every node of a test must hold the same one. */
const MASTER_KEY = randomBytes(32).toString('hex')

export interface RedisServer {
  url: string
  port: number
  stop(): Promise<void>
  /** Kills the server (SIGKILL: no goodbye to clients), keeping its port for `restart`. */
  halt(): Promise<void>
  /** Starts it again on the same port. */
  restart(): Promise<void>
}

function redisBinary(): string {
  for (const p of ['/usr/bin/redis-server', '/usr/bin/valkey-server', '/usr/local/bin/redis-server']) if (existsSync(p)) return p
  throw new Error('redis-server is missing: install Debian\'s redis-server package (.ci/run does)')
}

/** Spawns redis-server on `port`; the process once it accepts connections, or null if it did not come up. */
async function spawnRedis(port: number, dir: string): Promise<Subprocess | null> {
  // Never outlives the test process (the kernel's parent-death signal, through util-linux's setpriv): a
  // second test file of one `bun test` run starts its own after the first file's afterAll, and nothing
  // else would stop that one (orphaned redis-servers were found; an 'exit' handler does not run there).
  const pdeathsig = existsSync('/usr/bin/setpriv') ? ['/usr/bin/setpriv', '--pdeathsig', 'SIGKILL', '--'] : []
  const proc: Subprocess = Bun.spawn([...pdeathsig, redisBinary(), '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdout: 'ignore', stderr: 'ignore' })
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline && proc.exitCode === null) {
    try {
      const sock = await Bun.connect({ hostname: '127.0.0.1', port, socket: { data() {}, open() {}, close() {}, error() {} } })
      sock.end()
      return proc
    } catch {
      await Bun.sleep(30)
    }
  }
  proc.kill('SIGKILL')
  await proc.exited
  return null
}

/** A throw-away redis-server on loopback: no persistence, no protected-mode surprises. */
export async function startRedis(): Promise<RedisServer> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort()
    const dir = tempDir('fixloop-redis-')
    let proc = await spawnRedis(port, dir)
    if (!proc) {
      rmSync(dir, { recursive: true, force: true })
      continue
    }
    return {
      url: `redis://127.0.0.1:${port}`,
      port,
      async stop() {
        proc?.kill('SIGTERM')
        await proc?.exited
        rmSync(dir, { recursive: true, force: true })
      },
      async halt() {
        proc?.kill('SIGKILL')
        await proc?.exited
        proc = null
      },
      async restart() {
        proc = await spawnRedis(port, dir)
        if (!proc) throw new Error(`redis-server did not start again on port ${port}`)
      },
    }
  }
  throw new Error('redis-server did not start')
}

let redis: Promise<RedisServer> | undefined
let s3: Promise<{ server: S3rver; port: number; dir: string }> | undefined
/** The redis-server and s3rver this file started, stopped after it (test/file-end.ts). */
function stopAfterFile(): void {
  onceAtFileEnd('cluster-env', async () => {
    const [r, bucket] = [redis, s3]
    redis = s3 = undefined
    try {
      if (r) await (await r).stop()
    } finally {
      if (bucket) {
        const { server, dir } = await bucket
        await server.close()
        rmSync(dir, { recursive: true, force: true })
      }
    }
  })
}

export function sharedRedis(): Promise<RedisServer> {
  stopAfterFile()
  redis ??= startRedis()
  return redis
}

function sharedS3(): Promise<{ server: S3rver; port: number; dir: string }> {
  stopAfterFile()
  s3 ??= (async () => {
    const dir = tempDir('fixloop-s3-')
    // Loaded on first use: most test files never need it, and it pulls in a whole web framework.
    const { default: S3rverClass } = await import('s3rver')
    const server = new S3rverClass({ port: 0, address: '127.0.0.1', silent: true, directory: dir, configureBuckets: [{ name: 'feedback', configs: [] }] })
    const { port } = await server.run()
    return { server, port, dir }
  })()
  return s3
}

/**
 * FIXLOOP_* for a PostgreSQL-mode node on a fresh database (pass `databaseUrl` to share one between nodes).
 * `migrated`: the fresh database already has every migration (a clone, test/pg-server.ts), for the suites
 * that test routes rather than a first start's migrating; otherwise it is empty and the node migrates it.
 */
export async function clusterEnv(databaseUrl?: string, options: { migrated?: boolean } = {}): Promise<Record<string, string>> {
  const [pg, r, bucket] = await Promise.all([sharedPostgres(), sharedRedis(), sharedS3()])
  return {
    FIXLOOP_DATABASE_URL: databaseUrl ?? (await pg.createDatabase('node', { migrated: options.migrated })),
    FIXLOOP_REDIS_URL: r.url,
    FIXLOOP_MASTER_KEY: MASTER_KEY,
    FIXLOOP_S3_ENDPOINT: `http://127.0.0.1:${bucket.port}`,
    FIXLOOP_S3_BUCKET: 'feedback',
    FIXLOOP_S3_ACCESS_KEY: 'S3RVER',
    FIXLOOP_S3_SECRET_KEY: 'S3RVER',
  }
}

/**
 * A node's cross-node wake-ups (`fixloop_wake_messages_total`) in one direction, from its /metrics
 * (`token`: its FIXLOOP_METRICS_TOKEN, when set). `heard` counts only messages of nodes it takes for peers.
 */
export async function wakeCount(node: { url: string }, direction: 'published' | 'heard', token?: string): Promise<number> {
  const text = await (await fetch(`${node.url}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {})).text()
  const line = text.split('\n').find((l) => l.startsWith('fixloop_wake_messages_total{') && l.includes(`direction="${direction}"`))
  return Number(line?.split(' ').at(-1) ?? NaN)
}
