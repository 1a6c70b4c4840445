/**
 * The migration list, embedded into the binary. drizzle's folder-based migrate() cannot read
 * migrations/ inside a `bun build --compile` executable (it looks under the virtual /$bunfs), so each
 * generated SQL file is imported as text here. Add a line per new file from `bun run db:generate`.
 */
import m0000 from '../../migrations/0000_init.sql' with { type: 'text' }
import m0001 from '../../migrations/0001_uploads.sql' with { type: 'text' }
import m0002 from '../../migrations/0002_clustering.sql' with { type: 'text' }
import m0003 from '../../migrations/0003_agents.sql' with { type: 'text' }
import m0004 from '../../migrations/0004_events.sql' with { type: 'text' }
import m0006 from '../../migrations/0006_hardening.sql' with { type: 'text' }
import m0007 from '../../migrations/0007_sandbox.sql' with { type: 'text' }
import m0008 from '../../migrations/0008_webhooks.sql' with { type: 'text' }
import m0009 from '../../migrations/0009_ops.sql' with { type: 'text' }
import m0010 from '../../migrations/0010_admin.sql' with { type: 'text' }
import m0012 from '../../migrations/0012_perf.sql' with { type: 'text' }
import m0013 from '../../migrations/0013_intake.sql' with { type: 'text' }
import m0014 from '../../migrations/0014_jobs_kind.sql' with { type: 'text' }
import m0015 from '../../migrations/0015_intake_indexes.sql' with { type: 'text' }
import m0016 from '../../migrations/0016_totp_last_step.sql' with { type: 'text' }
import m0017 from '../../migrations/0017_cluster_nodes.sql' with { type: 'text' }
import m0018 from '../../migrations/0018_webhook_ordered_claim.sql' with { type: 'text' }
import m0019 from '../../migrations/0019_one_run_per_app.sql' with { type: 'text' }
import m0020 from '../../migrations/0020_triage_suggestions.sql' with { type: 'text' }
import m0021 from '../../migrations/0021_pr_loop.sql' with { type: 'text' }
import m0022 from '../../migrations/0022_loop_notify_mail.sql' with { type: 'text' }
import m0023 from '../../migrations/0023_pr_loop_queue.sql' with { type: 'text' }
import m0024 from '../../migrations/0024_abuse_defence.sql' with { type: 'text' }
import m0025 from '../../migrations/0025_tracker_sync.sql' with { type: 'text' }
import m0026 from '../../migrations/0026_pr_news_and_one_mail.sql' with { type: 'text' }
import m0027 from '../../migrations/0027_tracker_link_project.sql' with { type: 'text' }
import m0028 from '../../migrations/0028_app_calibration.sql' with { type: 'text' }
import m0029 from '../../migrations/0029_spam_retention.sql' with { type: 'text' }
import m0030 from '../../migrations/0030_mail_confirm.sql' with { type: 'text' }
import m0031 from '../../migrations/0031_fair_claim.sql' with { type: 'text' }
import m0032 from '../../migrations/0032_retention_days.sql' with { type: 'text' }
import m0033 from '../../migrations/0033_session_replay.sql' with { type: 'text' }
import m0034 from '../../migrations/0034_removal_indexes.sql' with { type: 'text' }
import m0035 from '../../migrations/0035_sso_reauth.sql' with { type: 'text' }
import m0036 from '../../migrations/0036_arrival_locality.sql' with { type: 'text' }
import m0037 from '../../migrations/0037_audit_oldest_first.sql' with { type: 'text' }
import m0038 from '../../migrations/0038_webhooks_live_cursor.sql' with { type: 'text' }
import m0039 from '../../migrations/0039_slack_live_cursor.sql' with { type: 'text' }
import m0040 from '../../migrations/0040_upload_shares.sql' with { type: 'text' }
import m0041 from '../../migrations/0041_sso_id_token.sql' with { type: 'text' }
import m0042 from '../../migrations/0042_node_lease.sql' with { type: 'text' }
import m0043 from '../../migrations/0043_cluster_learns.sql' with { type: 'text' }
import m0044 from '../../migrations/0044_jobs_leased.sql' with { type: 'text' }

export interface Migration {
  name: string
  sql: string
}

export const MIGRATIONS: readonly Migration[] = [
  { name: '0000_init', sql: m0000 },
  { name: '0001_uploads', sql: m0001 },
  { name: '0002_clustering', sql: m0002 },
  { name: '0003_agents', sql: m0003 },
  { name: '0004_events', sql: m0004 },
  { name: '0006_hardening', sql: m0006 },
  { name: '0007_sandbox', sql: m0007 },
  { name: '0008_webhooks', sql: m0008 },
  { name: '0009_ops', sql: m0009 },
  { name: '0010_admin', sql: m0010 },
  { name: '0012_perf', sql: m0012 },
  { name: '0013_intake', sql: m0013 },
  { name: '0014_jobs_kind', sql: m0014 },
  { name: '0015_intake_indexes', sql: m0015 },
  { name: '0016_totp_last_step', sql: m0016 },
  { name: '0017_cluster_nodes', sql: m0017 },
  { name: '0018_webhook_ordered_claim', sql: m0018 },
  { name: '0019_one_run_per_app', sql: m0019 },
  { name: '0020_triage_suggestions', sql: m0020 },
  { name: '0021_pr_loop', sql: m0021 },
  { name: '0022_loop_notify_mail', sql: m0022 },
  { name: '0023_pr_loop_queue', sql: m0023 },
  { name: '0024_abuse_defence', sql: m0024 },
  { name: '0025_tracker_sync', sql: m0025 },
  { name: '0026_pr_news_and_one_mail', sql: m0026 },
  { name: '0027_tracker_link_project', sql: m0027 },
  { name: '0028_app_calibration', sql: m0028 },
  { name: '0029_spam_retention', sql: m0029 },
  { name: '0030_mail_confirm', sql: m0030 },
  { name: '0031_fair_claim', sql: m0031 },
  { name: '0032_retention_days', sql: m0032 },
  { name: '0033_session_replay', sql: m0033 },
  { name: '0034_removal_indexes', sql: m0034 },
  { name: '0035_sso_reauth', sql: m0035 },
  { name: '0036_arrival_locality', sql: m0036 },
  { name: '0037_audit_oldest_first', sql: m0037 },
  { name: '0038_webhooks_live_cursor', sql: m0038 },
  { name: '0039_slack_live_cursor', sql: m0039 },
  { name: '0040_upload_shares', sql: m0040 },
  { name: '0041_sso_id_token', sql: m0041 },
  { name: '0042_node_lease', sql: m0042 },
  { name: '0043_cluster_learns', sql: m0043 },
  { name: '0044_jobs_leased', sql: m0044 },
]
