/**
 * Intake's commit times, as the workers read them to pace themselves (src/worker/processing.ts
 * `intakePacing`): the group committer notes each commit. On SQLite the store's turns are a WriteTurns
 * (src/db/sqlite/write-turns.ts), shared with the processing thread and the checkpointer; on PostgreSQL
 * only the notes are needed, kept here in the process.
 */
export interface IntakeTurns {
  /** A group commit just happened; `full`: it carried many writes (intake is using its whole core). */
  noteIntakeCommit(full: boolean): void
  /** Milliseconds since intake's last commit (`full`: its last full batch). */
  msSinceIntakeCommit(full?: boolean): number
}

/** The notes alone, in this process (PostgreSQL: no write lock to take turns at). */
export class IntakeCommitTimes implements IntakeTurns {
  private last = Date.now() - 3_600_000
  private lastFull = Date.now() - 3_600_000

  noteIntakeCommit(full: boolean): void {
    this.last = Date.now()
    if (full) this.lastFull = this.last
  }

  msSinceIntakeCommit(full = false): number {
    return Date.now() - (full ? this.lastFull : this.last)
  }
}
