/**
 * Who may do what: the role matrix every `/v1` and `/admin/api` route is checked against, whatever the
 * credential (an `sk_` key or a dashboard session). Each route declares one Access value
 * (src/http/access-guard.ts enforces it); this table is the only place that says which caller holds
 * which permission, and docs/dashboard.md prints it.
 */

/** What a caller is in the Org a request acts on. */
export type Grant = 'member' | 'owner' | 'instance_owner' | 'api_key'
export const GRANTS: readonly Grant[] = ['member', 'owner', 'instance_owner', 'api_key']

const EVERYONE: readonly Grant[] = GRANTS
/** An `sk_` key keeps every power spec part 5 gives it on the `/v1` routes; a member does not get them. */
const ORG_OWNERS_AND_KEYS: readonly Grant[] = ['owner', 'instance_owner', 'api_key']
/** Dashboard-only settings (`/admin/api`): an `sk_` key never reaches those routes. */
const ORG_OWNERS: readonly Grant[] = ['owner', 'instance_owner']
const INSTANCE_OWNER: readonly Grant[] = ['instance_owner']

export const PERMISSIONS = {
  /** Reports, their runs, similar reports, Apps, events, costs, the inbox. */
  'org.read': EVERYONE,
  /** Move, merge and unmerge reports. */
  'reports.triage': EVERYONE,
  /** A user token for any end user: whoever holds it submits as that user. */
  'tokens.mint': ORG_OWNERS_AND_KEYS,
  /** Webhook endpoints, their secrets, tests and the delivery log. */
  'webhooks.manage': ORG_OWNERS_AND_KEYS,
  /** Slack connections and the Slack users allowed to queue and archive. */
  'chatops.manage': ORG_OWNERS_AND_KEYS,
  /** An App's SMTP settings (the reporters' "fixed" mails), their test mail. */
  'mail.manage': ORG_OWNERS_AND_KEYS,
  /** An App's issue-tracker connection (docs/trackers.md): its token, webhook secret, rules and health. */
  'trackers.manage': ORG_OWNERS_AND_KEYS,
  /** Create, change and delete Apps; reveal and rotate signing secrets; see the repository connection. */
  'apps.manage': ORG_OWNERS,
  /** `sk_` keys. */
  'keys.manage': ORG_OWNERS,
  'audit.read': ORG_OWNERS,
  /** `GET /v1/audit`: the Org's audit log, oldest first (for a SIEM or a security review). */
  'audit.export': ORG_OWNERS_AND_KEYS,
  /** A reporter's data: export every report of an end user, or erase them (data-subject requests). */
  'reporters.manage': ORG_OWNERS_AND_KEYS,
  /** Connect a repository: the agent then runs commands on this server. */
  'repos.manage': INSTANCE_OWNER,
  'orgs.create': INSTANCE_OWNER,
} as const satisfies Record<string, readonly Grant[]>
export type Permission = keyof typeof PERMISSIONS

/**
 * Routes no role applies to, declared all the same so that every route says how it is protected:
 * `anyone` (first-run setup, sign-in), `signed_in` (any admin, about themselves or their Org list),
 * `widget` (an App public key), `signed_url` (an upload URL's own signature), `slack_signature`,
 * `git_host_signature` (a git host's webhook, signed with the App's webhook secret), `tracker_signature`
 * (an issue tracker's webhook, signed with the App's tracker webhook secret).
 */
export const OPEN_ACCESS = ['anyone', 'signed_in', 'widget', 'signed_url', 'slack_signature', 'git_host_signature', 'tracker_signature'] as const
export type OpenAccess = (typeof OPEN_ACCESS)[number]

export type Access = Permission | OpenAccess

export function isPermission(access: Access): access is Permission {
  return Object.hasOwn(PERMISSIONS, access)
}

export function allows(grant: Grant, permission: Permission): boolean {
  return (PERMISSIONS[permission] as readonly Grant[]).includes(grant)
}
