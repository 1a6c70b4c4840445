/**
 * PostgreSQL side of what follows a lead's move to `resolved` (its pull/merge request merged, or a
 * person's "Mark as fixed"): the same events and duplicate moves as src/db/sqlite/resolutions.ts, in the
 * caller's transaction.
 */
import { canFollowLead } from '../../core/fsm'
import { resolvedUserId, type DuplicateRow, type ResolvedLead } from '../../modules/git-hooks/repo'
import type { PgLifecycle, PgTx } from './lifecycle'
import { many, one } from './storage'

type Submitter = { submitted_mode: string; external_user_id: string | null }

const SUBMITTER = 'SELECT submitted_mode, external_user_id FROM feedback WHERE id = $1'
// FOR UPDATE: a duplicate unmerged or moved meanwhile waits for this change, then sees its result.
const DUPLICATES = 'SELECT id, status, submitted_mode, external_user_id FROM feedback WHERE duplicate_of_id = $1 ORDER BY id FOR UPDATE'

export function createPgResolutions(side: PgLifecycle) {
  /** As src/db/sqlite/resolutions.ts `followLead`. */
  async function followLead(t: PgTx, lead: ResolvedLead): Promise<string[]> {
    const scope = { orgId: lead.orgId, appId: lead.appId }
    const resolved = (id: string, who: Submitter) =>
      side.record(t, scope, 'feedback.resolved', { feedbackId: id, leadFeedbackId: lead.id, prUrl: lead.prUrl, externalUserId: resolvedUserId(who) })
    await resolved(lead.id, (await one<Submitter>(t.client, SUBMITTER, [lead.id]))!)
    const moved: string[] = []
    for (const d of await many<DuplicateRow>(t.client, DUPLICATES, [lead.id])) {
      if (!canFollowLead(d.status, 'resolved')) continue
      if (await side.move(t, d.id, 'resolved', { by: 'lead', from: d.status })) {
        moved.push(d.id)
        await resolved(d.id, d)
      }
    }
    return moved
  }

  return { followLead }
}
