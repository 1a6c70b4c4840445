/** The tracker issue of a report, as every report view shows it (schema shared by the feedback and tracker routes). */
import { t } from 'elysia'
import { oneOf } from '../../core/schema'
import { TRACKER_KINDS } from '../../trackers/adapter'

const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()])

export const TrackerIssueSchema = t.Object(
  {
    kind: oneOf(TRACKER_KINDS),
    project: Nullable(t.String({ description: "The tracker project the issue is in (owner/repo, group/project, Jira key, Linear team); another than the connection's when the App's tracker moved since: that link is no longer synced." })),
    key: Nullable(t.String({ description: '#12, PROJ-7, ENG-3; null until created.' })),
    url: Nullable(t.String()),
    state: Nullable(t.String({ description: "The tracker's state name as last seen." })),
    syncState: oneOf(['pending', 'synced', 'failing', 'deleted'], { description: 'deleted: the issue was deleted on the tracker; no more syncing.' }),
    lastError: Nullable(t.String()),
    syncedAt: Nullable(t.String({ format: 'date-time' })),
  },
  { additionalProperties: false },
)
