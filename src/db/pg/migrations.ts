/**
 * The PostgreSQL migration list, embedded into the binary like the SQLite one (src/db/migrations.ts):
 * drizzle-kit generates migrations-pg/ from src/db/pg/schema (`bun run db:generate:pg`); files written by
 * hand (triggers, seed rows) are made with `drizzle-kit generate --custom`. Add a line per new file.
 */
import type { Migration } from '../migrations'
import p0000 from '../../../migrations-pg/0000_init.sql' with { type: 'text' }
import p0001 from '../../../migrations-pg/0001_credential_generation.sql' with { type: 'text' }
import p0002 from '../../../migrations-pg/0002_totp_last_step.sql' with { type: 'text' }
import p0003 from '../../../migrations-pg/0003_cluster_nodes.sql' with { type: 'text' }
import p0004 from '../../../migrations-pg/0004_webhook_ordered_claim.sql' with { type: 'text' }
import p0005 from '../../../migrations-pg/0005_one_run_per_app.sql' with { type: 'text' }
import p0006 from '../../../migrations-pg/0006_triage_suggestions.sql' with { type: 'text' }
import p0007 from '../../../migrations-pg/0007_pr_loop.sql' with { type: 'text' }
import p0008 from '../../../migrations-pg/0008_loop_notify_mail.sql' with { type: 'text' }
import p0009 from '../../../migrations-pg/0009_pr_loop_queue.sql' with { type: 'text' }
import p0010 from '../../../migrations-pg/0010_abuse_defence.sql' with { type: 'text' }
import p0011 from '../../../migrations-pg/0011_tracker_sync.sql' with { type: 'text' }
import p0012 from '../../../migrations-pg/0012_pr_news_and_one_mail.sql' with { type: 'text' }
import p0013 from '../../../migrations-pg/0013_tracker_link_project.sql' with { type: 'text' }
import p0014 from '../../../migrations-pg/0014_app_calibration.sql' with { type: 'text' }
import p0015 from '../../../migrations-pg/0015_spam_retention.sql' with { type: 'text' }
import p0016 from '../../../migrations-pg/0016_mail_confirm.sql' with { type: 'text' }
import p0017 from '../../../migrations-pg/0017_fair_claim.sql' with { type: 'text' }
import p0018 from '../../../migrations-pg/0018_retention_days.sql' with { type: 'text' }
import p0019 from '../../../migrations-pg/0019_session_replay.sql' with { type: 'text' }
import p0020 from '../../../migrations-pg/0020_removal_indexes.sql' with { type: 'text' }
import p0021 from '../../../migrations-pg/0021_sso_reauth.sql' with { type: 'text' }
import p0022 from '../../../migrations-pg/0022_arrival_locality.sql' with { type: 'text' }
import p0023 from '../../../migrations-pg/0023_audit_oldest_first.sql' with { type: 'text' }
import p0024 from '../../../migrations-pg/0024_webhooks_live_cursor.sql' with { type: 'text' }
import p0025 from '../../../migrations-pg/0025_slack_live_cursor.sql' with { type: 'text' }
import p0026 from '../../../migrations-pg/0026_upload_shares.sql' with { type: 'text' }
import p0027 from '../../../migrations-pg/0027_sso_id_token.sql' with { type: 'text' }
import p0028 from '../../../migrations-pg/0028_node_lease.sql' with { type: 'text' }
import p0029 from '../../../migrations-pg/0029_cluster_learns.sql' with { type: 'text' }
import p0030 from '../../../migrations-pg/0030_jobs_leased.sql' with { type: 'text' }

export const PG_MIGRATIONS: readonly Migration[] = [
  { name: '0000_init', sql: p0000 },
  { name: '0001_credential_generation', sql: p0001 },
  { name: '0002_totp_last_step', sql: p0002 },
  { name: '0003_cluster_nodes', sql: p0003 },
  { name: '0004_webhook_ordered_claim', sql: p0004 },
  { name: '0005_one_run_per_app', sql: p0005 },
  { name: '0006_triage_suggestions', sql: p0006 },
  { name: '0007_pr_loop', sql: p0007 },
  { name: '0008_loop_notify_mail', sql: p0008 },
  { name: '0009_pr_loop_queue', sql: p0009 },
  { name: '0010_abuse_defence', sql: p0010 },
  { name: '0011_tracker_sync', sql: p0011 },
  { name: '0012_pr_news_and_one_mail', sql: p0012 },
  { name: '0013_tracker_link_project', sql: p0013 },
  { name: '0014_app_calibration', sql: p0014 },
  { name: '0015_spam_retention', sql: p0015 },
  { name: '0016_mail_confirm', sql: p0016 },
  { name: '0017_fair_claim', sql: p0017 },
  { name: '0018_retention_days', sql: p0018 },
  { name: '0019_session_replay', sql: p0019 },
  { name: '0020_removal_indexes', sql: p0020 },
  { name: '0021_sso_reauth', sql: p0021 },
  { name: '0022_arrival_locality', sql: p0022 },
  { name: '0023_audit_oldest_first', sql: p0023 },
  { name: '0024_webhooks_live_cursor', sql: p0024 },
  { name: '0025_slack_live_cursor', sql: p0025 },
  { name: '0026_upload_shares', sql: p0026 },
  { name: '0027_sso_id_token', sql: p0027 },
  { name: '0028_node_lease', sql: p0028 },
  { name: '0029_cluster_learns', sql: p0029 },
  { name: '0030_jobs_leased', sql: p0030 },
]
