/**
 * What the PostgreSQL-mode benches start around fixloop (bench/pg-intake.ts, bench/nodes.ts): a throw-away
 * PostgreSQL (test/pg-server.ts: fsync off), optionally with pg_stat_statements preloaded (one restart),
 * a redis-server and s3rver with the `feedback` bucket, all on loopback. `stop` ends them in reverse order.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { openPool } from '../src/db/pg/client-options'
import { startPostgres, type PgServer } from '../test/pg-server'
import { startRedis, type RedisServer } from '../test/cluster-env'

export interface ClusterServices {
  pg: PgServer
  redis: RedisServer
  s3Port: number
  stop(): Promise<void>
}

export async function startClusterServices(opts: { statements: boolean }): Promise<ClusterServices> {
  const stops: (() => Promise<void>)[] = []
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => {})
  }
  try {
    const pg = await startPostgres()
    stops.push(() => pg.stop())
    if (opts.statements) {
      // pg_stat_statements must be preloaded: set it and restart the throw-away server once.
      const a = openPool(pg.adminUrl, 1)
      await a.query("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
      await a.end()
      await pg.restart()
    }
    const redis = await startRedis()
    stops.push(() => redis.stop())
    const s3Dir = mkdtempSync(join(tmpdir(), 'fixloop-s3-'))
    const { default: S3rver } = await import('s3rver')
    const s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: s3Dir, configureBuckets: [{ name: 'feedback', configs: [] }] })
    const { port: s3Port } = await s3.run()
    stops.push(async () => {
      await s3.close()
      rmSync(s3Dir, { recursive: true, force: true })
    })
    return { pg, redis, s3Port, stop }
  } catch (e) {
    await stop()
    throw e
  }
}

/**
 * The settings of a fixloop node on these services and the database `url`: a fresh master key, quiet logs,
 * no agent sandbox; `extra` adds or overrides (a bench's rate-limit multiplier, log level).
 */
export function nodeEnv(services: ClusterServices, url: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    FIXLOOP_DATABASE_URL: url,
    FIXLOOP_REDIS_URL: services.redis.url,
    FIXLOOP_MASTER_KEY: randomBytes(32).toString('hex'),
    FIXLOOP_S3_ENDPOINT: `http://127.0.0.1:${services.s3Port}`,
    FIXLOOP_S3_BUCKET: 'feedback',
    FIXLOOP_S3_ACCESS_KEY: 'S3RVER',
    FIXLOOP_S3_SECRET_KEY: 'S3RVER',
    FIXLOOP_LOG_LEVEL: 'silent',
    FIXLOOP_AGENT_SANDBOX: 'off',
    ...extra,
  }
}

/** A free loopback port below the ephemeral range (test/free-port.ts says why). */
export { freePort } from '../test/free-port'

/** `<bin> <args> --json --data-dir <dir>` with `env` added; its parsed output, or an Error with its stderr. */
export async function cliAsync(bin: string, args: string[], env: Record<string, string>, dataDir: string): Promise<any> {
  const proc = Bun.spawn([bin, ...args, '--json', '--data-dir', dataDir], { env: { ...process.env, ...env }, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`fixloop ${args.join(' ')}: exit ${code}: ${err}`)
  return JSON.parse(out)
}

/** Waits (at most 60 s) for a started server to answer /readyz with 200; throws if it exits first. */
export async function waitReady(url: string, proc: Subprocess): Promise<void> {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`fixloop exited with ${proc.exitCode} at start`)
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) return
    } catch {
      // not listening yet
    }
    await Bun.sleep(100)
  }
  throw new Error('fixloop did not become ready within 60 s')
}
