/**
 * FIXLOOP_DATABASE_URL on the CLI, checked before a command loads: `serve` first names every cluster-mode
 * setting that is missing (CONTRACT.md); `backup` and `restore`, which cover only the embedded SQLite data
 * dir, refuse (exit 2) and point to pg_dump instead of quietly backing up a database the operator does not
 * use. Apart from postgres-mode.ts (which migrates) so that every command starts without the PostgreSQL
 * driver loaded.
 */
import type { Config } from '../config'
import { StartupError } from '../core/startup-error'

/** What cluster mode needs besides the database (CONTRACT.md), as the variables to set. */
export function missingForCluster(config: Readonly<Config>): string[] {
  const missing: string[] = []
  if (!config.redisUrl) missing.push('FIXLOOP_REDIS_URL')
  if (!config.masterKey) missing.push('FIXLOOP_MASTER_KEY (the same on every node)')
  if (!config.s3) missing.push('FIXLOOP_S3_ENDPOINT, FIXLOOP_S3_BUCKET, FIXLOOP_S3_ACCESS_KEY, FIXLOOP_S3_SECRET_KEY (blobs live in S3/MinIO)')
  return missing
}

/** `serve` with FIXLOOP_DATABASE_URL: exit 2 naming every cluster-mode setting that is missing. */
export function requireClusterSettings(config: Readonly<Config>): void {
  const missing = missingForCluster(config)
  if (missing.length > 0) throw new StartupError(`FIXLOOP_DATABASE_URL is set, so serve runs in cluster mode, which also needs: ${missing.join('; ')}`)
}

/** Refuses `command` while FIXLOOP_DATABASE_URL is set, saying why and what to do. */
export function refuseOnPostgres(command: string, config: Readonly<Config>): never {
  if (command === 'backup' || command === 'restore') {
    const how =
      command === 'backup'
        ? 'back up PostgreSQL with pg_dump (pg_dump --format=custom), and the S3 bucket with its own tools (versioning, mc mirror)'
        : 'restore PostgreSQL with pg_restore from a pg_dump archive, and the S3 bucket with its own tools'
    throw new StartupError(`${command} with FIXLOOP_DATABASE_URL: ${how}; fixloop ${command} covers only the embedded SQLite data dir (docs/operations.md, "Backup and restore on PostgreSQL")`)
  }
  throw new StartupError(`${command} with FIXLOOP_DATABASE_URL: this command covers only the embedded SQLite data dir; unset FIXLOOP_DATABASE_URL to use it there`)
}
