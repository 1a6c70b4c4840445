// Words for people: every status, event, audit action and delivery state the API names with an
// identifier gets a label here. Unknown names (the lists grow) still read as words, never as raw enums.
import { html } from '@fixloop/ui'

export const STATUS_LABELS = {
  received: 'Received',
  sanitizing: 'Being scrubbed',
  sanitized: 'Scrubbed',
  awaiting_manual: 'Awaiting your decision',
  queued: 'Queued for the agent',
  agent_running: 'Agent working',
  pr_opened: 'Pull request opened',
  resolved: 'Resolved',
  failed: 'Failed',
  archived: 'Archived',
}

/** "repo_connected" → "Repo connected": the fallback for names this file does not know yet. */
export const words = (name) => {
  const s = String(name || '').replace(/[._]+/g, ' ').trim()
  return s ? s[0].toUpperCase() + s.slice(1) : ''
}

export const statusLabel = (status) => STATUS_LABELS[status] || words(status)

/** A status as a badge: the word, with the status kept as a class for its colour. */
export function Status({ status }) {
  return html`<span class=${`status s-${status}`}>${statusLabel(status)}</span>`
}

/**
 * Branch mode (docs/agents.md "pr_opened without a URL"): the run pushed its branch and opened no request,
 * so `pr_opened` with `mergeRequestUrl` null means "branch pushed"; nothing will say it was merged
 * (undefined: not known, e.g. a live status change, which names no URL).
 */
export const isBranchPushed = (item) => item.status === 'pr_opened' && item.mergeRequestUrl === null

/** A report's status as a badge, reading "Branch pushed" for `pr_opened` without a request. */
export function ItemStatus({ item }) {
  return isBranchPushed(item) ? html`<span class="status s-pr_opened">Branch pushed</span>` : html`<${Status} status=${item.status} />`
}

// "Anonymous" was wrong for a public report that gave its email: public means not signed in, nothing more.
export const MODE_LABELS = { public: 'public visitor', private: 'signed-in user' }
export const PROCESSING_LABELS = { manual: 'Wait for a human', auto_pr: 'Queue for the agent automatically' }

export const PHASE_LABELS = { prepare: 'prepare', clone: 'clone', agent: 'agent', verify: 'verify', guardrails: 'guardrails', push: 'push', pr: 'pull request' }

/** The event types of docs/events.md, as short nouns (webhook delivery rows, history). */
export const EVENT_LABELS = {
  'feedback.received': 'Report received',
  'feedback.status_changed': 'Status changed',
  'feedback.duplicate_attached': 'Duplicate attached',
  'feedback.duplicate_suggested': 'Duplicate suggested',
  'feedback.unmerged': 'Duplicate unmerged',
  'agent_run.started': 'Agent run started',
  'agent_run.phase': 'Agent run phase',
  'agent_run.succeeded': 'Agent run succeeded',
  'agent_run.failed': 'Agent run failed',
  'agent_run.guardrailed': 'Agent run stopped by a guardrail',
  'webhook.disabled': 'Webhook disabled',
  'webhook.test': 'Test event',
}
export const eventLabel = (type) => EVENT_LABELS[type] || words(type)

/** One line of a report's history, from its event (payloads carry ids and states, never text). */
export function historyText(e) {
  const d = e.data || {}
  switch (e.type) {
    case 'feedback.received':
      return `Received${d.status && d.status !== 'received' ? ` (${statusLabel(d.status).toLowerCase()})` : ''}`
    case 'feedback.status_changed':
      return `${statusLabel(d.from)} → ${statusLabel(d.to)}${d.reason ? `: ${d.reason}` : ''}`
    case 'feedback.duplicate_attached':
      return d.manual
        ? `Merged into another report by hand${typeof d.score === 'number' ? ` (confirmed a suggestion, similarity ${Math.round(d.score * 100)}%)` : ''}`
        : `Recognised as a duplicate of another report${typeof d.score === 'number' ? ` (similarity ${Math.round(d.score * 100)}%)` : ''}`
    case 'feedback.duplicate_suggested':
      return `Suggested as a possible duplicate of another report (similarity ${Math.round((d.score || 0) * 100)}%)`
    case 'feedback.unmerged':
      return 'Unmerged: stands alone again'
    case 'agent_run.started':
      return `Agent run started${d.provider ? ` (${d.provider})` : ''}`
    case 'agent_run.phase':
      return `Agent run: ${PHASE_LABELS[d.phase] || words(d.phase)} took ${d.durationMs} ms`
    case 'agent_run.succeeded':
      return 'Agent run succeeded'
    case 'agent_run.failed':
      return `Agent run failed${d.error ? `: ${d.error}` : ''}`
    case 'agent_run.guardrailed':
      return `Agent run stopped by a guardrail${d.guardrailReason ? `: ${d.guardrailReason}` : ''}`
    default:
      return eventLabel(e.type)
  }
}

export const AUDIT_LABELS = {
  'admin.created': 'Admin created',
  'admin.signed_in': 'Signed in',
  'admin.password_reset': 'Password reset',
  'admin.totp_enabled': 'Two-factor sign-in turned on',
  'admin.totp_disabled': 'Two-factor sign-in turned off',
  'admin.password_reentry_failed': 'Wrong password re-entered',
  'admin.reauthenticated': 'Confirmed at the identity provider',
  'admin.reauthentication_failed': 'Confirmation at the identity provider refused',
  'session.revoked': 'Session revoked',
  'org.created': 'Org created',
  'app.created': 'App created',
  'app.updated': 'App settings changed',
  'app.deleted': 'App deleted',
  'app.secret_revealed': 'Signing secret revealed',
  'app.secret_rotated': 'Signing secret rotated',
  'app.repo_connected': 'Repository connected',
  'app.repo_disconnected': 'Repository disconnected',
  'app.webhook_secret_rotated': 'Git webhook secret rotated',
  'key.created': 'API key created',
  'key.revoked': 'API key revoked',
  'webhook.created': 'Webhook endpoint added',
  'webhook.deleted': 'Webhook endpoint deleted',
  'feedback.merged': 'Report merged into a lead',
  'feedback.unmerged': 'Report unmerged from its lead',
  'feedback.marked_fixed': 'Report marked as fixed',
}
export const auditLabel = (action) => AUDIT_LABELS[action] || words(action)

export const ACTOR_LABELS = { cli: 'Command line (fixloop CLI)', system: 'fixloop (automatic)' }

export const DELIVERY_LABELS = { pending: 'Pending', succeeded: 'Delivered', failed: 'Failed' }
/** A pending delivery that was tried already is being retried (with backoff, docs/events.md). */
export const deliveryLabel = (s, attempts = 0) => (s === 'pending' && attempts > 0 ? 'Retrying' : DELIVERY_LABELS[s] || words(s))

/** The moves a person may ask for, as button words. */
export const MOVE_LABELS = { queued: 'Queue for agent', archived: 'Archive' }
