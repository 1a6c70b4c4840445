/**
 * The process's group committer for intake writes (submissions, upload keys), of its storage's dialect:
 * src/db/sqlite/group-commit.ts on SQLite (synchronous writes in one IMMEDIATE transaction per event-loop turn),
 * src/db/pg/group-commit.ts on PostgreSQL (async writes in one transaction per batch). A repository's
 * SQLite side takes the first, its PostgreSQL side the second (`sqliteCommitter` / `pgCommitter`).
 */
import { GroupCommitter } from './sqlite/group-commit'
import { PgGroupCommitter } from './pg/group-commit'
import type { Storage } from './storage'
import type { WriteTurns } from './sqlite/write-turns'

export type IntakeCommitter = GroupCommitter | PgGroupCommitter

/** One per process (services.ts): every intake write of the process joins its batches. */
export function createIntakeCommitter(storage: Storage, turns?: WriteTurns): IntakeCommitter {
  return storage.dialect === 'sqlite' ? new GroupCommitter(storage.sqlite, turns) : new PgGroupCommitter(storage.pool, turns)
}

export function sqliteCommitter(c: IntakeCommitter): GroupCommitter {
  if (!(c instanceof GroupCommitter)) throw new Error('a SQLite repository needs the SQLite group committer')
  return c
}

export function pgCommitter(c: IntakeCommitter): PgGroupCommitter {
  if (!(c instanceof PgGroupCommitter)) throw new Error('a PostgreSQL repository needs the PostgreSQL group committer')
  return c
}
