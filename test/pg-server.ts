/**
 * A real PostgreSQL for tests: Debian's `postgresql` package, a throw-away cluster (a copy of an `initdb`
 * cluster in a temp dir) listening on a random loopback port, started once per test file and stopped after
 * it; each suite asks for a fresh database. As root, the server runs as the `postgres` user (PostgreSQL
 * refuses root). Password auth (scram) on TCP, so a wrong password is refused as on a real deployment.
 *
 * Two copies instead of repeated work, for the suite's time on 2 cores (scripts/test.sh):
 * - `initdb` runs once per machine and PostgreSQL version (~1 s of CPU): every file's cluster is a copy of
 *   that pristine one (`cp -a`, ~0.1 s), made once, complete, by an atomic rename, whichever test process
 *   gets there first. The clusters share its random password.
 * - `createDatabase(prefix, { migrated: true })` clones a database migrated once per server
 *   (CREATE DATABASE … TEMPLATE, ~0.1 s) instead of applying every migration again (~0.3 s, more under
 *   load); without it a database is empty, for the tests of migrating itself.
 */
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { openPool } from '../src/db/pg/client-options'
import { applyPgMigrations } from '../src/db/pg/migrate'
import type { Subprocess } from 'bun'
import { tempDir } from './temp-dirs'
import { freePort } from './free-port'

export interface PgServer {
  /** postgres://postgres:<password>@127.0.0.1:<port>/postgres */
  adminUrl: string
  port: number
  password: string
  /** A new database, its URL: empty, or with `migrated` every migration applied (a clone of one migrated once). */
  createDatabase(prefix?: string, options?: { migrated?: boolean }): Promise<string>
  /** The name of the migrated database `migrated` clones (made on first use). */
  migratedTemplate(): Promise<string>
  /** Stops the server (fast shutdown: every session ended) and starts it again on the same port and files. */
  restart(downMs?: number): Promise<void>
  /** Stops the server, keeping its files (a database that went away); `restart` brings it back. */
  halt(): Promise<void>
  stop(): Promise<void>
}

/** The newest installed PostgreSQL's bin dir, or null when the package is missing. */
export function pgBinDir(): string | null {
  const base = '/usr/lib/postgresql'
  if (!existsSync(base)) return null
  const versions = readdirSync(base).filter((v) => existsSync(join(base, v, 'bin', 'postgres'))).sort((a, b) => Number(b) - Number(a))
  return versions[0] ? join(base, versions[0], 'bin') : null
}

/** Why PostgreSQL tests cannot run here, or null when they can. */
export function pgMissingReason(): string | null {
  return pgBinDir() ? null : 'PostgreSQL is not installed (apt-get install postgresql; .ci/run installs it)'
}

const asRoot = process.getuid?.() === 0

function pgUserIds(): { uid: number; gid: number } {
  const out = Bun.spawnSync(['id', '-u', 'postgres']).stdout.toString().trim()
  const gid = Bun.spawnSync(['id', '-g', 'postgres']).stdout.toString().trim()
  if (!out) throw new Error('the postgres user does not exist (it comes with the postgresql package)')
  return { uid: Number(out), gid: Number(gid) }
}

/**
 * Runs a PostgreSQL program, as the postgres user when we are root. setpriv execs the program in place
 * (runuser would stay as its parent and not pass our signals on), so stopping the server is one signal.
 */
function pgCommand(bin: string, args: string[]): string[] {
  return asRoot ? ['setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups', '--', bin, ...args] : [bin, ...args]
}

async function waitReady(url: string, proc: Subprocess, deadlineMs: number): Promise<void> {
  while (Date.now() < deadlineMs) {
    if (proc.exitCode !== null) throw new Error(`postgres exited with ${proc.exitCode}`)
    const pool = openPool(url, 1)
    try {
      await pool.query('SELECT 1')
      return
    } catch {
      await Bun.sleep(100)
    } finally {
      await pool.end()
    }
  }
  throw new Error('postgres did not accept connections within 30 s')
}

/**
 * The machine's pristine cluster for this PostgreSQL (`bin`): made by `initdb` on first use, kept in the
 * system temp dir across test processes (a copy is cheaper than another initdb), with its password beside it.
 * Built under a temp name and renamed into place, so a cluster found there is complete.
 */
function pristineCluster(bin: string): { dataDir: string; password: string } {
  const owner = process.getuid?.() ?? 'user'
  const home = join(tmpdir(), `fixloop-pg-pristine-${owner}-${bin.replace(/[^A-Za-z0-9]+/g, '_')}`)
  const read = () => ({ dataDir: join(home, 'data'), password: readFileSync(join(home, 'pw'), 'utf8') })
  if (existsSync(join(home, 'data', 'PG_VERSION')) && existsSync(join(home, 'pw'))) return read()
  const build = mkdtempSync(`${home}.build-`)
  const password = randomBytes(12).toString('hex')
  const pwFile = join(build, 'pw')
  writeFileSync(pwFile, password)
  if (asRoot) {
    const { uid, gid } = pgUserIds()
    chmodSync(build, 0o700)
    chownSync(build, uid, gid)
    chownSync(pwFile, uid, gid)
  }
  const init = Bun.spawnSync(
    pgCommand(join(bin, 'initdb'), ['-D', join(build, 'data'), '-U', 'postgres', '--pwfile', pwFile, '--auth-host=scram-sha-256', '--auth-local=trust', '-E', 'UTF8', '--no-sync']),
    { stdout: 'pipe', stderr: 'pipe' },
  )
  if (init.exitCode !== 0) {
    rmSync(build, { recursive: true, force: true })
    throw new Error(`initdb failed: ${init.stderr.toString()}`)
  }
  try {
    renameSync(build, home)
  } catch {
    // Another test process renamed its own first: use that one.
    rmSync(build, { recursive: true, force: true })
  }
  return read()
}

/**
 * What scripts/test-pg.sh's one server for the whole pass (test/pg-pass-server.ts) writes for the files:
 * its address and password, and the database migrated once that `migrated` databases are cloned from.
 */
export interface SharedPgInfo {
  port: number
  password: string
  template: string
}

/** The environment variable naming the JSON file of a shared server (SharedPgInfo). */
export const SHARED_PG_ENV = 'FIXLOOP_TEST_PG_SHARED'

/**
 * The shared server of a test pass as this file's server: fresh databases on it, dropped again by `stop`
 * (which leaves the server running for the other files); it cannot be restarted or halted by one file.
 */
async function attachShared(infoFile: string): Promise<PgServer> {
  const info = JSON.parse(readFileSync(infoFile, 'utf8')) as SharedPgInfo
  const base = `postgres://postgres:${info.password}@127.0.0.1:${info.port}`
  const admin = openPool(`${base}/postgres`, 2)
  const made: string[] = []
  const refuse = async () => {
    throw new Error(`the PostgreSQL shared by every file of this pass (${SHARED_PG_ENV}) cannot be halted or restarted by one file: start one with startPostgres() outside scripts/test-pg.sh`)
  }
  return {
    adminUrl: `${base}/postgres`,
    port: info.port,
    password: info.password,
    async createDatabase(prefix = 'fixloop', options = {}) {
      const name = `${prefix}_${randomBytes(6).toString('hex')}`
      const template = options.migrated ? ` TEMPLATE "${info.template}" STRATEGY FILE_COPY` : ''
      await admin.query(`CREATE DATABASE "${name}"${template}`)
      made.push(name)
      return `${base}/${name}`
    },
    migratedTemplate: async () => info.template,
    halt: refuse,
    restart: refuse,
    async stop() {
      // FORCE: a session a test left open does not keep the database (nor the disk it holds) for the pass.
      for (const name of made.splice(0)) await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => {})
      await admin.end()
    },
  }
}

/**
 * This test file's PostgreSQL: its own server, or, when scripts/test-pg.sh shares one for the whole pass
 * (FIXLOOP_TEST_PG_SHARED), fresh databases on that one (a server start and stop less per file).
 */
export async function startPostgres(): Promise<PgServer> {
  const shared = process.env[SHARED_PG_ENV]
  if (shared) return attachShared(shared)
  return startOwnPostgres()
}

/** A server of this process's own (`maxConnections`: for a server many files share). */
export async function startOwnPostgres(options: { maxConnections?: number } = {}): Promise<PgServer> {
  const bin = pgBinDir()
  if (!bin) throw new Error(pgMissingReason()!)
  const root = tempDir('fixloop-pg-')
  const dataDir = join(root, 'data')
  const socketDir = join(root, 'sock')
  const pristine = pristineCluster(bin)
  const password = pristine.password
  if (asRoot) {
    const { uid, gid } = pgUserIds()
    chmodSync(root, 0o700)
    chownSync(root, uid, gid)
  }
  // -a keeps the postgres user as the owner (PostgreSQL refuses a data dir it does not own).
  const copy = Bun.spawnSync(['cp', '-a', pristine.dataDir, dataDir], { stdout: 'pipe', stderr: 'pipe' })
  if (copy.exitCode !== 0) throw new Error(`copying the pristine cluster failed: ${copy.stderr.toString()}`)
  Bun.spawnSync(pgCommand('mkdir', ['-p', socketDir]))

  let lastError: unknown
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort()
    // fsync off and small buffers: a test cluster, thrown away after the file; durability is PostgreSQL's
    // own business and is not what these tests check.
    const spawnPostgres = () =>
      Bun.spawn(
        pgCommand(join(bin, 'postgres'), [
          '-D', dataDir, '-p', String(port), '-k', socketDir, '-c', 'listen_addresses=127.0.0.1',
          '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', `max_connections=${options.maxConnections ?? 200}`,
          '-c', 'shared_buffers=64MB',
        ]),
        { stdout: 'ignore', stderr: 'pipe' },
      )
    let proc = spawnPostgres()
    const adminUrl = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`
    try {
      await waitReady(adminUrl, proc, Date.now() + 30_000)
    } catch (err) {
      lastError = err
      proc.kill('SIGKILL')
      await proc.exited
      continue
    }
    let admin = openPool(adminUrl, 2)
    let migratedTemplate: Promise<string> | undefined
    /** A database with every migration applied, migrated once per server; no session stays on it (a template must have none). */
    const migrated = () =>
      (migratedTemplate ??= (async () => {
        const name = `template_migrated_${randomBytes(4).toString('hex')}`
        await admin.query(`CREATE DATABASE "${name}"`)
        const pool = openPool(`postgres://postgres:${password}@127.0.0.1:${port}/${name}`, 1)
        try {
          await applyPgMigrations(pool)
        } finally {
          await pool.end()
        }
        return name
      })())
    const halt = async () => {
      await admin.end().catch(() => {})
      if (proc.exitCode !== null) return
      proc.kill('SIGINT')
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000)
      await proc.exited
      clearTimeout(timer)
    }
    return {
      adminUrl,
      port,
      password,
      async createDatabase(prefix = 'fixloop', options = {}) {
        const name = `${prefix}_${randomBytes(6).toString('hex')}`
        // FILE_COPY: a copy of the template's files, faster than WAL_LOG's page-by-page logging with fsync off.
        const template = options.migrated ? ` TEMPLATE "${await migrated()}" STRATEGY FILE_COPY` : ''
        await admin.query(`CREATE DATABASE "${name}"${template}`)
        return `postgres://postgres:${password}@127.0.0.1:${port}/${name}`
      },
      migratedTemplate: migrated,
      halt,
      async restart(downMs = 0) {
        await halt()
        await Bun.sleep(downMs)
        proc = spawnPostgres()
        await waitReady(adminUrl, proc, Date.now() + 30_000)
        admin = openPool(adminUrl, 2)
      },
      async stop() {
        // fast shutdown: ends sessions, no checkpoint wait worth having in a test
        await halt()
        rmSync(root, { recursive: true, force: true })
      },
    }
  }
  rmSync(root, { recursive: true, force: true })
  throw new Error(`could not start postgres: ${String(lastError)}`)
}
