/**
 * What follows a lead's move to `resolved`, whoever made it (its pull/merge request merged: pr-changes.ts;
 * a person's "Mark as fixed": the feedback repositories' `resolveByHand`), written once for both dialects
 * (src/db/tx-body.ts): `feedback.resolved` for the lead, then each duplicate that can follow it
 * (core/fsm.ts canFollowLead) moved to `resolved` with an event of its own, in the caller's transaction.
 * The reporters' "fixed" mails need nothing here: the mailer picks up every resolved report whose
 * reporter asked (docs/email.md).
 */
import { canFollowLead } from '../../core/fsm'
import { resolvedUserId, type DuplicateRow, type ResolvedLead } from '../../modules/git-hooks/repo'
import { all, get, lockingRead, sql, type Body } from '../tx-body'
import type { LifecycleBodies } from './lifecycle'

type Submitter = { submitted_mode: string; external_user_id: string | null }

const SUBMITTER = sql('SELECT submitted_mode, external_user_id FROM feedback WHERE id = ?')
// Locked on PostgreSQL: a duplicate unmerged or moved meanwhile waits for this change, then sees its result.
const DUPLICATES = lockingRead('SELECT id, status, submitted_mode, external_user_id FROM feedback WHERE duplicate_of_id = ? ORDER BY id')

export function resolutionBodies(lifecycle: LifecycleBodies) {
  /** Records the lead's `feedback.resolved` and resolves the duplicates that follow it; their ids. */
  function* followLead(lead: ResolvedLead): Body<string[]> {
    const scope = { orgId: lead.orgId, appId: lead.appId }
    const resolved = (id: string, who: Submitter) =>
      lifecycle.record(scope, 'feedback.resolved', { feedbackId: id, leadFeedbackId: lead.id, prUrl: lead.prUrl, externalUserId: resolvedUserId(who) })
    yield* resolved(lead.id, (yield* get<Submitter>(SUBMITTER, lead.id))!)
    const moved: string[] = []
    for (const d of yield* all<DuplicateRow>(DUPLICATES, lead.id)) {
      if (!canFollowLead(d.status, 'resolved')) continue
      if (yield* lifecycle.move(d.id, 'resolved', { by: 'lead', from: d.status })) {
        moved.push(d.id)
        yield* resolved(d.id, d)
      }
    }
    return moved
  }

  return { followLead }
}
