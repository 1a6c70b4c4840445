/**
 * Every setting fixloop reads, with its flag, default and a one-line meaning: what `fixloop --help` and
 * `fixloop serve --help` print (someone with only the binary sees them all), and what the README's
 * configuration table must match (test/cli-ux.test.ts checks both ways against config.ts and
 * the README, so a new knob cannot be added to one and forgotten in the others).
 */
export interface Setting {
  /** The environment variable(s), as the README's table names them. */
  env: string[]
  flag?: string
  /** The default, written as in the README's "Default" column. */
  default: string
  meaning: string
}

export const SETTINGS: Setting[] = [
  { flag: '--host', env: ['FIXLOOP_HOST'], default: '127.0.0.1', meaning: 'address to listen on (0.0.0.0 in a container)' },
  { flag: '--port', env: ['FIXLOOP_PORT'], default: '8080', meaning: 'port to listen on (0 picks a free one)' },
  { flag: '--data-dir', env: ['FIXLOOP_DATA_DIR'], default: './data', meaning: 'database, blobs and master.key (created 0700 on first start, with a notice)' },
  { env: ['FIXLOOP_MASTER_KEY'], default: '<data-dir>/master.key', meaning: '32-byte key (hex or base64) sealing stored secrets; unset: master.key, created 0600' },
  { env: ['FIXLOOP_DATABASE_URL'], default: 'unset (SQLite in the data dir)', meaning: 'postgres://USER:PASS@HOST:PORT/DB: PostgreSQL 15+ holds every table instead of the data dir (cluster mode: also needs FIXLOOP_REDIS_URL, FIXLOOP_MASTER_KEY and S3)' },
  { env: ['FIXLOOP_REDIS_URL'], default: 'unset', meaning: 'redis://HOST:PORT: Valkey/Redis 7+ for cluster mode (with FIXLOOP_DATABASE_URL): shared rate limits' },
  { env: ['FIXLOOP_PG_STATEMENT_TIMEOUT_SECONDS'], default: '20', meaning: 'PostgreSQL: the longest one statement of the server may run (statement_timeout; then 503 with Retry-After); 0: not set' },
  { env: ['FIXLOOP_NODE_LEASE_SECONDS'], default: '15', meaning: 'cluster mode: role lease length (renewed every third); a dead node\'s work moves within about twice this' },
  { env: ['FIXLOOP_RATE_LIMIT_MULTIPLIER'], default: '1', meaning: 'multiplies every rate-limit ceiling and bucket capacity' },
  { env: ['FIXLOOP_TRUST_PROXY'], default: 'off', meaning: '1: client address from the last X-Forwarded-For hop instead of the socket' },
  { env: ['FIXLOOP_PUBLIC_URL'], default: 'the address the request came to', meaning: 'base URL clients reach the server at (upload URLs, PR links)' },
  { env: ['FIXLOOP_ADMIN_EMAIL', 'FIXLOOP_ADMIN_PASSWORD_FILE'], default: 'unset', meaning: 'first dashboard admin, created at start while none exists (both or neither)' },
  { env: ['FIXLOOP_OIDC_ISSUER'], default: 'unset (password sign-in only)', meaning: 'OpenID Connect issuer URL: dashboard single sign-on ("Sign in with SSO"; needs the client id, secret and FIXLOOP_PUBLIC_URL)' },
  { env: ['FIXLOOP_OIDC_CLIENT_ID'], default: 'unset', meaning: 'the client id registered at the OpenID provider (redirect URI <FIXLOOP_PUBLIC_URL>/admin/oidc/callback)' },
  { env: ['FIXLOOP_OIDC_CLIENT_SECRET_FILE', 'FIXLOOP_OIDC_CLIENT_SECRET'], default: 'unset', meaning: 'the client secret: a file whose first line is it, or the value itself (one of the two)' },
  { env: ['FIXLOOP_PASSWORD_SIGNIN'], default: 'on', meaning: 'off: no password sign-in on the dashboard, SSO only (serve refuses to start without SSO configured)' },
  { env: ['FIXLOOP_PASSWORD_HASH_MIB'], default: '64', meaning: 'MiB of memory argon2id uses for each new dashboard password hash (19 to 1024; earlier hashes keep theirs)' },
  { env: ['FIXLOOP_LOG_LEVEL'], default: 'info', meaning: 'info (a line per request), warn (problems only) or silent' },
  { env: ['FIXLOOP_METRICS_TOKEN'], default: 'unset (open)', meaning: 'bearer token GET /metrics requires' },
  { env: ['FIXLOOP_MIN_FREE_DISK_MB'], default: '64', meaning: '/readyz is not ready below this free space on the data dir (0: off)' },
  { env: ['FIXLOOP_SQLITE_SYNCHRONOUS'], default: 'full', meaning: 'embedded mode: full syncs each acknowledged write (survives a power loss); normal syncs at checkpoints' },
  {
    env: ['FIXLOOP_S3_ENDPOINT', 'FIXLOOP_S3_BUCKET', 'FIXLOOP_S3_ACCESS_KEY', 'FIXLOOP_S3_SECRET_KEY', 'FIXLOOP_S3_REGION'],
    default: 'unset (us-east-1)',
    meaning: 'S3/MinIO blob storage instead of the embedded store (the first four together)',
  },
  { env: ['FIXLOOP_AGENT_CONCURRENCY'], default: '2', meaning: 'most agent runs at once over all Apps' },
  { env: ['FIXLOOP_PR_POLL_MINUTES'], default: '10', meaning: 'minutes between polls of the open pull/merge requests fixloop opened (0: off)' },
  { env: ['FIXLOOP_TRACKER_POLL_MINUTES'], default: '10', meaning: 'minutes between polls of the state of tracker issues fixloop created (0: off, webhooks only)' },
  { env: ['FIXLOOP_REVIEW_ITERATIONS_MAX'], default: '3', meaning: 'review iterations per pull request at most (0: none)' },
  { env: ['FIXLOOP_AGENT_ENV'], default: 'unset', meaning: 'comma-separated names of extra variables passed to agent commands' },
  { env: ['FIXLOOP_AGENT_SANDBOX'], default: 'bwrap', meaning: 'bwrap: agents run in a bubblewrap sandbox; off: unconfined (unsafe)' },
  { env: ['FIXLOOP_AGENT_NETWORK'], default: 'on', meaning: 'whether sandboxed agents may use the network' },
  { env: ['FIXLOOP_AGENT_SANDBOX_PATHS'], default: 'unset', meaning: 'colon-separated absolute host paths sandboxed agents may read' },
  { env: ['FIXLOOP_WORK_DIR'], default: '<tmp>/fixloop-work-<uid>', meaning: 'where agent run workspaces live (outside the data dir)' },
  { env: ['FIXLOOP_UPLOAD_GRACE_HOURS'], default: '24', meaning: 'uploads no submission references are removed after this long' },
  { env: ['FIXLOOP_UPLOAD_APP_HOURLY_MB'], default: '1024', meaning: "bytes of uploads no report references one App may be issued per hour (429 past it; 0: no limit)" },
  { env: ['FIXLOOP_UPLOAD_MIN_FREE_MB'], default: '256', meaning: "the embedded store refuses an upload leaving less than this free on the data dir's disk (503; 0: not checked)" },
  { env: ['FIXLOOP_BODY_BUFFER_MB'], default: '256', meaning: 'bytes of JSON request bodies the server holds at once while they arrive (503 past it; 0: no limit)' },
  { env: ['FIXLOOP_BODY_BUFFER_PER_ADDRESS_MB'], default: '24', meaning: 'the same for one client address, times FIXLOOP_RATE_LIMIT_MULTIPLIER (429 past it; 0: no limit)' },
  { env: ['FIXLOOP_EVENT_RETENTION_DAYS'], default: '30', meaning: 'events older than this are purged' },
  { env: ['FIXLOOP_AUDIT_RETENTION_DAYS'], default: '0', meaning: 'audit entries older than this many days are purged (0: kept forever)' },
  { env: ['FIXLOOP_WEBHOOKS_PER_ORG'], default: '100', meaning: 'the most webhook endpoints one Org may have (0: no limit)' },
  { env: ['FIXLOOP_WEBHOOK_LOG_RETENTION_DAYS'], default: '14', meaning: 'webhook deliveries and their attempt log older than this are purged' },
  {
    env: ['FIXLOOP_WEBHOOK_ALLOW_PRIVATE'],
    default: 'off',
    meaning: '1: allow webhook targets on private/loopback/link-local addresses (set it on serve and on "webhook create")',
  },
  {
    env: ['FIXLOOP_SMTP_ALLOW_PRIVATE'],
    default: 'off',
    meaning: '1: allow App SMTP servers on private/loopback/link-local addresses, e.g. a local relay (set it on serve and on "app smtp")',
  },
  {
    env: ['FIXLOOP_TRACKER_ALLOW_PRIVATE'],
    default: 'off',
    meaning: '1: allow issue-tracker API URLs on private/loopback/link-local addresses, e.g. a self-hosted GitLab (set it on serve and on "tracker connect")',
  },
  {
    env: ['FIXLOOP_GIT_HOST_ALLOW_PRIVATE'],
    default: 'on',
    meaning: '0: refuse git-host API URLs (opening and polling pull requests) on private/loopback addresses too, for a server shared by Orgs that do not trust each other (link-local and metadata addresses are always refused)',
  },
  {
    env: ['FIXLOOP_OUTBOUND_TIMEOUT'],
    default: '15',
    meaning: 'seconds each call to an issue tracker or a git host API may take, answer included (1 to 20); Jira Cloud and Linear get a third more, opening a pull request twice it',
  },
  { env: ['FIXLOOP_WEBHOOK_TIMEOUT_SECONDS'], default: '15', meaning: 'time a webhook receiver has to answer (at most 15)' },
  { env: ['FIXLOOP_WEBHOOK_RETRY_SCALE'], default: '1', meaning: 'multiplies the webhook retry schedule (tests shrink it)' },
  { env: ['FIXLOOP_SSE_HEARTBEAT_SECONDS'], default: '10', meaning: 'comment line on idle event streams (at most 15)' },
  { env: ['FIXLOOP_SSE_STREAMS_PER_KEY'], default: '100', meaning: 'event streams open at once per sk_ key or dashboard session (then 429)' },
  { env: ['FIXLOOP_SLACK_CONNECTIONS_PER_ORG'], default: '20', meaning: 'the most Slack connections one Org may have (0: no limit)' },
  { env: ['FIXLOOP_SLACK_API_URL'], default: 'https://slack.com/api', meaning: 'Slack Web API base URL (a proxy, or a stub in tests)' },
]

/**
 * Variables fixloop knows that are not server settings: read by one command, or set by fixloop for the
 * commands it runs. Known, so never warned about as a typo; listed under the README's settings table.
 */
export const OTHER_VARIABLES: { env: string; meaning: string }[] = [
  { env: 'FIXLOOP_TRACKER_TOKEN', meaning: '`fixloop tracker connect`: the tracker token when no `--token-file` is given (never on the command line)' },
  { env: 'FIXLOOP_TASK_FILE', meaning: 'set by fixloop for agent commands: the task file they read' },
  { env: 'FIXLOOP_RESULT_FILE', meaning: 'set by fixloop for agent commands: where they may write their result' },
  {
    env: 'FIXLOOP_ATTACHMENTS_DIR',
    meaning:
      "set by fixloop for agent commands: the read-only folder with the report's (and its cluster's: at most 8 files, 20 MB) screenshots and images, listed in the task file ([docs/agents.md](docs/agents.md#what-the-reporter-saw-the-attachments-folder))",
  },
]

/** Every FIXLOOP_* name fixloop knows: the settings and the other variables. */
export const KNOWN_VARIABLES: readonly string[] = [...SETTINGS.flatMap((s) => s.env), ...OTHER_VARIABLES.map((v) => v.env)]

/** The settings as help text: one line per setting, "flag / ENV (default: …) meaning". */
export function settingsHelp(): string {
  const names = SETTINGS.map((s) => [s.flag, s.env.join(', ')].filter(Boolean).join(' / '))
  const width = Math.min(40, Math.max(...names.map((n) => n.length)))
  const lines = SETTINGS.map((s, i) => {
    const name = names[i].length > width ? `${names[i]}\n${' '.repeat(width + 2)}` : names[i].padEnd(width)
    return `  ${name}  ${s.meaning} (default: ${s.default})`
  })
  return `Settings (a flag wins over its environment variable; the environment wins over the default):\n${lines.join('\n')}`
}
