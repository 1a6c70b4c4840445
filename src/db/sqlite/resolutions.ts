/**
 * SQLite side of what follows a lead's move to `resolved`, whoever made it (its pull/merge request merged:
 * pr-changes.ts; a person's "Mark as fixed": feedback.ts `resolveByHand`): `feedback.resolved` for the lead,
 * then each duplicate that can follow it (core/fsm.ts canFollowLead) moved to `resolved` with an event of
 * its own. Synchronous, in the caller's transaction. The reporters' "fixed" mails need nothing here: the
 * mailer picks up every resolved report whose reporter asked (docs/email.md).
 */
import type { Database, Statement } from 'bun:sqlite'
import { canFollowLead } from '../../core/fsm'
import { resolvedUserId, type DuplicateRow, type ResolvedLead } from '../../modules/git-hooks/repo'
import type { SqliteLifecycle } from './lifecycle'

type Submitter = { submitted_mode: string; external_user_id: string | null }

export function createSqliteResolutions(sqlite: Database, side: SqliteLifecycle) {
  const submitter: Statement = sqlite.query('SELECT submitted_mode, external_user_id FROM feedback WHERE id = ?')
  const duplicates: Statement = sqlite.query('SELECT id, status, submitted_mode, external_user_id FROM feedback WHERE duplicate_of_id = ? ORDER BY id')

  /** Records the lead's `feedback.resolved` and resolves the duplicates that follow it; their ids. */
  function followLead(lead: ResolvedLead): string[] {
    const scope = { orgId: lead.orgId, appId: lead.appId }
    const resolved = (id: string, who: Submitter) =>
      side.record(scope, 'feedback.resolved', { feedbackId: id, leadFeedbackId: lead.id, prUrl: lead.prUrl, externalUserId: resolvedUserId(who) })
    resolved(lead.id, submitter.get(lead.id) as Submitter)
    const moved: string[] = []
    for (const d of duplicates.all(lead.id) as DuplicateRow[]) {
      if (!canFollowLead(d.status, 'resolved')) continue
      if (side.move(sqlite, d.id, 'resolved', { by: 'lead', from: d.status })) {
        moved.push(d.id)
        resolved(d.id, d)
      }
    }
    return moved
  }

  return { followLead }
}
export type SqliteResolutions = ReturnType<typeof createSqliteResolutions>
