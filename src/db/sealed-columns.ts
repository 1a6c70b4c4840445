/**
 * The registry of every column that holds a value sealed with the master key (SecretBox, "v1:..."). Two
 * things walk it: the start-up check (do sealed secrets exist, so a missing master.key must never be
 * replaced by a new one?) and `fixloop rekey` (re-seal every value under a new key in one transaction).
 *
 * A module that adds a sealed column registers it here, next to the others, or calls registerSealedColumn
 * from its own db file before the CLI runs: a column missing from this list would be unreadable after a
 * rekey. Tables that do not exist yet (a migration not applied) are skipped.
 */
import type { SecretBox } from '../core/crypto'
import { StartupError } from '../core/startup-error'

export interface SealedColumn {
  table: string
  column: string
  /** The primary key column, to write each re-sealed value back to its row. */
  key: string
}

const COLUMNS: SealedColumn[] = [
  { table: 'apps', column: 'signing_secret_enc', key: 'id' },
  { table: 'repo_connections', column: 'host_token_enc', key: 'app_id' },
  { table: 'repo_connections', column: 'webhook_secret_enc', key: 'app_id' },
  { table: 'webhooks', column: 'secret_sealed', key: 'id' },
  { table: 'webhooks', column: 'previous_secret_sealed', key: 'id' },
  { table: 'slack_connections', column: 'bot_token_sealed', key: 'id' },
  { table: 'slack_connections', column: 'signing_secret_sealed', key: 'id' },
  { table: 'admins', column: 'totp_secret_enc', key: 'id' },
  // An SSO session's ID token (the provider's logout): unreadable after a rekey, the sign-out is local only.
  { table: 'admin_sessions', column: 'id_token_sealed', key: 'id' },
  { table: 'app_smtp', column: 'password_sealed', key: 'app_id' },
  { table: 'feedback', column: 'notify_email_sealed', key: 'id' },
  { table: 'mail_outbox', column: 'email_sealed', key: 'feedback_id' },
  { table: 'mail_confirmations', column: 'email_sealed', key: 'id' },
  { table: 'tracker_connections', column: 'token_sealed', key: 'app_id' },
  { table: 'tracker_connections', column: 'webhook_secret_sealed', key: 'app_id' },
]

export function registerSealedColumn(c: SealedColumn): void {
  if (!COLUMNS.some((x) => x.table === c.table && x.column === c.column)) COLUMNS.push(c)
}

export function sealedColumns(): readonly SealedColumn[] {
  return COLUMNS
}

/**
 * One sealed value of `c` (row `key`) opened with the old key and sealed with the new one (`fixloop rekey`,
 * on either storage); a value the old key does not open stops the whole re-key.
 */
export function resealValue(c: SealedColumn, key: string, sealed: string, oldBox: SecretBox, newBox: SecretBox): string {
  let plain: Buffer
  try {
    plain = oldBox.open(sealed)
  } catch {
    throw new StartupError(`${c.table}.${c.column} of ${key} does not open with --old-key-file; nothing was changed`)
  }
  return newBox.seal(plain)
}
