/** `fixloop migrate`, `backup`, `restore` and `rekey`: operations on the data dir. */
import { chmodSync, existsSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { dirname, join, resolve, sep } from 'node:path'
import { prepareDataDir } from '../db/data-dir'
import { loadConfig } from '../config'
import { createContext, requireExistingDataDir } from '../runtime/open'
import { openDatabase } from '../db/sqlite/client'
import { openRefusal } from '../db/open-refusal'
import { applyMigrations } from '../db/sqlite/migrate'
import { writeBackup } from '../db/backup/write'
import { restoreBackup } from '../db/backup/restore'
import { rekey } from '../db/sqlite/rekey'
import { lockDataDir } from '../db/data-dir-lock'
import { lockKeyExclusive, type KeyLock } from '../db/key-lock'
import { refuseNewerSchema } from '../db/sqlite/schema-guard'
import { masterKeyFile, parseMasterKey, readMasterKey } from '../core/master-key'
import { output, parseFlags, refuseArguments, UsageError } from './args'

export const MIGRATE_HELP = `Usage: fixloop migrate [--data-dir DIR] [--json]
Applies the embedded database migrations (serve also does this before the port opens). With
FIXLOOP_DATABASE_URL set, applies the PostgreSQL migrations there instead (each in a transaction, safe
when several nodes run it at once); the data dir is not touched. Prints which database it migrated
("database: PostgreSQL user@host:port/db" or "database: SQLite <file>") and the migrations it applied.`
export const BACKUP_HELP = `Usage: fixloop backup --out FILE [--include-master-key] [--data-dir DIR] [--json]
Writes ONE archive (tar): a consistent copy of the database (SQLite VACUUM INTO, safe while the server
runs), every uploaded screenshot and attachment of the embedded store (<data-dir>/blobs) and a manifest
with versions and SHA-256 checksums. The file is created with mode 0600.
  --include-master-key   also put the master key in the archive (keep such a file as secret as the key);
                         without it, keep master.key yourself: the restored secrets need it.
S3/MinIO objects are not in the archive: back up the bucket with its own tools (docs/operations.md).
Progress goes to stderr.`
export const RESTORE_HELP = `Usage: fixloop restore --from FILE --data-dir DIR [--force] [--allow-unverified] [--json]
Checks the archive's MAC (under the master key of the instance that wrote it: FIXLOOP_MASTER_KEY, else
DIR/master.key, else the archive's own master.key), its manifest and checksums, then restores the
database, the blobs and (when the archive has it) master.key into DIR. DIR must be empty or missing (a
master.key alone is fine) unless --force, which replaces its database, blobs and master key. Refused while
a server runs on DIR. Progress goes to stderr.
  --allow-unverified   restore an archive without a MAC (written before fixloop signed backups) although
                       a master key is at hand to check one. A MAC that does not match is always refused.
                       With no master key anywhere nothing can be checked: it restores with a warning.`
export const REKEY_HELP = `Usage: fixloop rekey --old-key-file OLD --new-key-file NEW [--data-dir DIR] [--json]
Re-seals every secret sealed with the master key (App signing secrets, repository host tokens, and every
other column registered in src/db/sealed-columns.ts) from OLD to NEW in one transaction. A missing NEW
file is created with a fresh random key (0600). When <data-dir>/master.key holds OLD it is replaced by NEW;
if you use FIXLOOP_MASTER_KEY, set it to NEW before the next start. Stop the server first. Waits up to 10 s
for the admin commands and backups using the key (<data-dir>/rekey.lock). A NEW file it created is removed
again when it fails before the database holds the new key.`

const OUT_ERRORS = new Set(['ENOENT', 'EACCES', 'EPERM', 'EROFS', 'ENOSPC', 'EDQUOT', 'ENOTDIR', 'EISDIR'])
/** VACUUM INTO's target in the --out folder: no room, no inode, read-only, failing. */
const OUT_SQLITE_ERRORS = /^SQLITE_(FULL|CANTOPEN|READONLY|IOERR)/

const stderr = (line: string) => process.stderr.write(line + '\n')

export async function runMigrate(argv: string[]): Promise<void> {
  const { values, positionals } = parseFlags(argv, {})
  if (values.help) return void process.stdout.write(MIGRATE_HELP + '\n')
  refuseArguments(positionals, 'migrate', () => '--data-dir')
  const config = loadConfig({ dataDir: values['data-dir'] })
  // Named first: without FIXLOOP_DATABASE_URL in its environment a cluster's operator would migrate a new
  // SQLite instance in ./data and read "applied: [...]" as success.
  if (config.databaseUrl) {
    // The PostgreSQL side (its driver and schema) is loaded only here: the SQLite commands start without it.
    const [{ describeDatabase }, { migratePostgres }] = await Promise.all([import('../db/pg/connect'), import('./postgres-mode')])
    return output({ database: `PostgreSQL ${describeDatabase(config.databaseUrl)}`, applied: await migratePostgres(config.databaseUrl) }, values.json)
  }
  prepareDataDir(config.dataDir)
  const file = join(config.dataDir, 'fixloop.db')
  const { sqlite } = openDatabase(file)
  try {
    refuseNewerSchema(sqlite, file)
    output({ database: `SQLite ${file}`, applied: applyMigrations(sqlite) }, values.json)
  } finally {
    sqlite.close()
  }
}

export async function runBackup(argv: string[]): Promise<void> {
  const { values, positionals } = parseFlags(argv, { out: { type: 'string' }, 'include-master-key': { type: 'boolean' } })
  if (values.help) return void process.stdout.write(BACKUP_HELP + '\n')
  refuseArguments(positionals, 'backup', () => '--out')
  if (!values.out) throw new UsageError('missing --out FILE')
  const out = resolve(values.out)
  if (existsSync(out)) throw new UsageError(`${out} already exists; choose a new file`)
  const folder = dirname(out)
  if (!existsSync(folder)) throw new UsageError(`--out: the folder ${folder} does not exist; create it first (mkdir -p ${folder})`)
  if (!statSync(folder).isDirectory()) throw new UsageError(`--out: ${folder} is not a folder`)
  const config = loadConfig({ dataDir: values['data-dir'] })
  refuseOutInBlobStore(folder, config.dataDir)
  const ctx = createContext(config, undefined, { existingOnly: true })
  // The embedded store only (createContext): main.ts refuses backup while FIXLOOP_DATABASE_URL is set (pg_dump's job).
  const { sqlite } = ctx.storage
  try {
    const includeMasterKey = values['include-master-key'] === true
    const manifest = await writeBackup({
      sqlite,
      dataDir: config.dataDir,
      out,
      includeMasterKey,
      masterKeyText: config.masterKey,
      masterKey: backupKey(config.dataDir, config.masterKey),
      storage: config.s3 ? 's3' : 'embedded',
      progress: stderr,
    }).catch((e: NodeJS.ErrnoException) => {
      // A folder that takes no files (read-only, full, no inodes, not ours) is the operator's to fix, not a
      // crash; the database copy (VACUUM INTO) meets it as SQLite's codes.
      if (e.code && (OUT_ERRORS.has(e.code) || OUT_SQLITE_ERRORS.test(e.code))) throw new UsageError(`--out: cannot write ${out} or its database copy in ${folder} (${e.message.startsWith(e.code) ? e.message : `${e.code}: ${e.message}`}); nothing was written`)
      throw e
    })
    if (includeMasterKey) stderr(`backup: ${out} contains the master key; it was created with mode 0600: keep it as secret as the key itself`)
    if (config.s3) stderr('backup: uploads live in the S3 bucket and are not in the archive; back the bucket up with its own tools')
    const blobs = manifest.files.filter((f) => f.path.startsWith('blobs/')).length
    output({ backup: out, files: manifest.files.length, blobs, bytes: manifest.files.reduce((n, f) => n + f.bytes, 0), masterKeyIncluded: includeMasterKey }, values.json)
  } finally {
    sqlite.close()
  }
}

/**
 * Refuses an --out inside the embedded blob store (`<data-dir>/blobs`, however it is reached: symlinks are
 * resolved). The backup lists every file there after the database copy, so it met its own partial archive
 * and copied it into itself while it grew: found by the ops attack, `--out <data-dir>/blobs/b.tar` wrote
 * 8 GB in a minute and would have filled the disk.
 */
function refuseOutInBlobStore(folder: string, dataDir: string): void {
  const blobs = join(dataDir, 'blobs')
  if (!existsSync(blobs)) return
  const store = realpathSync(blobs)
  const target = realpathSync(folder)
  if (target === store || target.startsWith(store + sep)) {
    throw new UsageError(`--out: ${folder} is inside the data dir's blob store (${blobs}), which the backup copies: the archive would copy itself until the disk is full; write it elsewhere (outside the data dir)`)
  }
}

/** The master key the archive's MAC is keyed by (the context already checked it against the database). */
function backupKey(dataDir: string, fromEnv: string | undefined): Uint8Array {
  const key = readMasterKey(dataDir, fromEnv)
  if (!key) throw new UsageError(`no master key (FIXLOOP_MASTER_KEY or ${masterKeyFile(dataDir)}): the archive's MAC needs it`)
  return key
}

export async function runRestore(argv: string[]): Promise<void> {
  const { values, positionals } = parseFlags(argv, { from: { type: 'string' }, force: { type: 'boolean' }, 'allow-unverified': { type: 'boolean' } })
  if (values.help) return void process.stdout.write(RESTORE_HELP + '\n')
  refuseArguments(positionals, 'restore', () => '--from')
  if (!values.from) throw new UsageError('missing --from FILE')
  if (!values['data-dir'] && !process.env.FIXLOOP_DATA_DIR) throw new UsageError('missing --data-dir DIR (where to restore)')
  const config = loadConfig({ dataDir: values['data-dir'] })
  refuseArchiveInDataDir(resolve(values.from), config.dataDir)
  const manifest = await restoreBackup({
    from: resolve(values.from),
    dataDir: config.dataDir,
    force: values.force === true,
    allowUnverified: values['allow-unverified'] === true,
    masterKeyText: config.masterKey,
    progress: stderr,
  })
  if (!manifest.masterKeyIncluded && !existsSync(masterKeyFile(config.dataDir))) {
    stderr(`restore: the archive has no master key: copy the original master.key into ${config.dataDir} (or set FIXLOOP_MASTER_KEY for serve) before "fixloop serve"; without it the server refuses to start`)
  }
  output({ restored: config.dataDir, fixloopVersion: manifest.fixloopVersion, createdAt: manifest.createdAt, files: manifest.files.length, masterKeyIncluded: manifest.masterKeyIncluded }, values.json)
}

/**
 * Refuses an archive inside the data dir it is restored into (symlinks resolved): `--force` replaces that
 * dir, the archive with it, so a restore from `<data-dir>/blobs/x.tar` deleted the one copy it read from
 * (ops attack). Copy it elsewhere first.
 */
function refuseArchiveInDataDir(from: string, dataDir: string): void {
  if (!existsSync(from) || !existsSync(dataDir)) return
  const dir = realpathSync(dataDir)
  const archive = realpathSync(from)
  if (archive.startsWith(dir + sep)) throw new UsageError(`--from: ${from} is inside the data dir ${dataDir}, which a restore replaces: copy the archive out of it first`)
}

function readKeyFile(path: string, flag: string): Uint8Array {
  try {
    return parseMasterKey(readFileSync(path, 'utf8'), `${flag} ${path}`)
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    throw new UsageError(code ? `${flag}: cannot read ${path}: ${code}` : (e as Error).message)
  }
}

/**
 * An existing `--new-key-file` must be the operator's own: a key file another local user made (say in a
 * shared folder, ahead of the rekey) would re-key the instance to a key they know. One of the operator's
 * own that others may read (written under umask 022) is made owner-only, with a notice.
 */
function refuseSharedKeyFile(path: string): void {
  const st = statSync(path)
  const uid = process.getuid?.()
  if (uid !== undefined && st.uid !== uid) throw new UsageError(`--new-key-file ${path} belongs to another user (uid ${st.uid}): a master key file must be your own`)
  if ((st.mode & 0o077) !== 0) {
    chmodSync(path, 0o600)
    stderr(`rekey: ${path} was open to other users (mode ${(st.mode & 0o777).toString(8)}); it is owner-only now (0600)`)
  }
}

/** Whether `file` holds `key` (false when it is missing or unreadable). */
function keyFileHolds(file: string, key: Uint8Array): boolean {
  try {
    return Buffer.compare(Buffer.from(parseMasterKey(readFileSync(file, 'utf8'), file)), Buffer.from(key)) === 0
  } catch {
    return false
  }
}

export async function runRekey(argv: string[]): Promise<void> {
  const { values, positionals } = parseFlags(argv, { 'old-key-file': { type: 'string' }, 'new-key-file': { type: 'string' } })
  if (values.help) return void process.stdout.write(REKEY_HELP + '\n')
  refuseArguments(positionals, 'rekey')
  if (!values['old-key-file']) throw new UsageError('missing --old-key-file PATH')
  if (!values['new-key-file']) throw new UsageError('missing --new-key-file PATH')
  const config = loadConfig({ dataDir: values['data-dir'] })
  if (!config.databaseUrl) requireExistingDataDir(config.dataDir)
  const oldKey = readKeyFile(values['old-key-file'], '--old-key-file')
  const newPath = resolve(values['new-key-file'])
  let created = false
  if (!existsSync(newPath)) {
    try {
      writeFileSync(newPath, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' })
    } catch (e) {
      // A full disk leaves the file made but empty: the next attempt would refuse it as no key.
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') rmSync(newPath, { force: true })
      throw e
    }
    created = true
  } else refuseSharedKeyFile(newPath)
  // What fails before the database holds the new key takes back the key file this rekey made: left behind,
  // a refused rekey (a server running, the wrong --old-key-file) left a key that opens nothing, which the
  // next attempt took as the operator's own. A file the operator gave is never removed, nor one the
  // database already depends on.
  const rekeyed = { committed: false }
  try {
    return await rekeyWith(values, config, oldKey, newPath, created, rekeyed)
  } catch (e) {
    if (created && !rekeyed.committed) {
      rmSync(newPath, { force: true })
      stderr(`rekey: removed ${newPath} again: this rekey created it and changed nothing`)
    }
    throw e
  }
}

type RekeyFlags = ReturnType<typeof parseFlags<{ 'old-key-file': { type: 'string' }; 'new-key-file': { type: 'string' } }>>['values']

async function rekeyWith(values: RekeyFlags, config: ReturnType<typeof loadConfig>, oldKey: Uint8Array, newPath: string, created: boolean, rekeyed: { committed: boolean }): Promise<void> {
  const newKey = readKeyFile(newPath, '--new-key-file')
  if (Buffer.compare(Buffer.from(oldKey), Buffer.from(newKey)) === 0) throw new UsageError('--old-key-file and --new-key-file hold the same key')
  if (config.databaseUrl) {
    const [{ connectPg }, { refuseNewerPgSchema }, { rekeyPg }] = await Promise.all([import('../db/pg/connect'), import('../runtime/open-pg'), import('../db/pg/rekey')])
    const pool = await connectPg(config.databaseUrl, 2)
    try {
      await refuseNewerPgSchema(pool, config.databaseUrl)
      const resealed = await rekeyPg(pool, oldKey, newKey)
      rekeyed.committed = true
      if (created) stderr(`rekey: created ${newPath} with a new random key (mode 0600)`)
      stderr('rekey: set FIXLOOP_MASTER_KEY to the new key on every node before the next start (stop every node before a rekey: a running node keeps the old key in memory)')
      return output({ resealed, keyFileReplaced: false }, values.json)
    } finally {
      await pool.end()
    }
  }
  const lock = lockDataDir(config.dataDir, 're-keying (a running server keeps the old key in memory)')
  let keyLock: KeyLock | undefined
  let sqlite: ReturnType<typeof openDatabase>['sqlite'] | undefined
  try {
    // After serve.lock (a running server is named first), before anything reads the key: the admin commands
    // and backups that read it now finish first, and the next ones wait for the new one (key-lock.ts).
    keyLock = lockKeyExclusive(config.dataDir)
    const file = join(config.dataDir, 'fixloop.db')
    sqlite = openDatabase(file).sqlite
    refuseNewerSchema(sqlite, file)
    // The data dir's own key file follows the database: written whole under a temp name BEFORE the
    // database is re-keyed, and renamed over the old one after (a rename takes no room). Written after the
    // commit, a full disk or no free inode left a database sealed under the new key beside a master.key
    // holding the old one, and a message that said only that master.key.new could not be written.
    const keyFile = masterKeyFile(config.dataDir)
    const staged = `${keyFile}.new`
    const replaceKeyFile = existsSync(keyFile) && Buffer.compare(Buffer.from(parseMasterKey(readFileSync(keyFile, 'utf8'), keyFile)), Buffer.from(oldKey)) === 0
    if (replaceKeyFile) {
      try {
        // Made afresh (never written through what is there: a symlink planted as master.key.new got the
        // new key written into a file of another user's, then renamed over master.key; ops attack).
        rmSync(staged, { force: true })
        writeFileSync(staged, Buffer.from(newKey).toString('hex') + '\n', { mode: 0o600, flag: 'wx' })
      } catch (e) {
        rmSync(staged, { force: true })
        throw new UsageError(`cannot write ${staged} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): nothing was re-keyed; make room in ${config.dataDir} and run rekey again`)
      }
    }
    let resealed: Record<string, number>
    try {
      resealed = rekey(sqlite, oldKey, newKey)
      rekeyed.committed = true
    } catch (e) {
      if (replaceKeyFile) rmSync(staged, { force: true })
      // One transaction: a full or read-only disk rolls it back whole.
      const refusal = openRefusal(file, e)
      if (refusal) throw new UsageError(`${refusal.message}; nothing was re-keyed`)
      throw e
    }
    let keyFileReplaced = false
    if (replaceKeyFile) {
      try {
        renameSync(staged, keyFile)
      } catch (e) {
        // Another command opened the data dir after the commit (the admin CLI takes no lock), saw the
        // staged key open the database and finished the rename itself (master-key-check.ts): done, not the
        // failure it was reported as ("still holds the OLD key", naming a master.key.new that was gone).
        if (!keyFileHolds(keyFile, newKey)) {
          throw new UsageError(
          `the database is re-keyed, but ${keyFile} still holds the OLD key (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): the next start replaces it with ${staged} (the new key, also in ${newPath}); keep that file`,
          )
        }
      }
      keyFileReplaced = true
    }
    if (created) stderr(`rekey: created ${newPath} with a new random key (mode 0600)`)
    stderr(keyFileReplaced ? `rekey: ${keyFile} now holds the new key` : 'rekey: set FIXLOOP_MASTER_KEY (or master.key) to the new key before the next start')
    output({ resealed, keyFileReplaced }, values.json)
  } finally {
    sqlite?.close()
    keyLock?.release()
    lock.release()
  }
}
