/**
 * What the PostgreSQL-mode benches start around fixloop (bench/pg-intake.ts, bench/nodes.ts): a throw-away
 * PostgreSQL (test/pg-server.ts: fsync off), optionally with pg_stat_statements preloaded (one restart),
 * a redis-server and s3rver with the `feedback` bucket, all on loopback. `stop` ends them in reverse order.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
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
