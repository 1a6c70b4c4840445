/**
 * App reads on the request path. Every read takes the Org in its signature, so a cross-Org id simply
 * finds nothing. The port: a SQLite side (src/db/sqlite/apps.ts, prepared statements) and a PostgreSQL
 * side (src/db/pg/apps.ts), held to test/repos/apps.test.ts.
 */
import type { apps } from '../../db/schema'
import { isoUtc } from '../../core/clock'
import { isReplayMode, REPLAY_SECONDS_DEFAULT, type ProcessingMode } from './values'
import type { App, ReplaySettings } from './model'
import { levelOf } from '../../abuse/pow-service'

export type AppRow = typeof apps.$inferSelect

export function toApp(row: AppRow): App {
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    description: row.description,
    publicKey: row.publicKey,
    publicSubmissionEnabled: row.publicSubmissionEnabled,
    processingMode: row.processingMode as ProcessingMode,
    batchEnabled: row.batchEnabled,
    batchWindowHours: row.batchWindowHours,
    allowedOrigins: JSON.parse(row.allowedOrigins) as string[],
    proofOfWork: levelOf(row),
    spamEvents: row.spamEvents,
    spamRetentionDays: row.spamRetentionDays,
    retentionDays: row.retentionDays,
    replay: replayOf(row),
    createdAt: isoUtc(row.createdAt),
  }
}

/** The App's replay settings; an unknown stored mode reads as off (nothing is recorded rather than too much). */
export function replayOf(row: Pick<AppRow, 'replayMode' | 'replaySeconds'>): ReplaySettings {
  return isReplayMode(row.replayMode) ? { mode: row.replayMode, seconds: row.replaySeconds } : { mode: 'off', seconds: row.replaySeconds ?? REPLAY_SECONDS_DEFAULT }
}

export interface AppsRepo {
  /** The Org's live Apps, by id. */
  listForOrg(orgId: string): Promise<AppRow[]>
  /** A live App of the Org. */
  getForOrg(orgId: string, id: string): Promise<AppRow | undefined>
  /** True when the App belongs (or belonged, before it was deleted) to the Org. */
  everInOrg(orgId: string, id: string): Promise<boolean>
}

