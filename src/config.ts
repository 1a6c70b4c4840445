/**
 * Flags + environment → one frozen Config. Flags win over env; env wins over defaults.
 * Every knob here has a row in the README's configuration table.
 */
import { basename, dirname, join, resolve, sep } from 'node:path'
import { readFileSync, realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { ALWAYS_SHOWN } from './core/sandbox-shown'
import { PASSWORD_HASH_MIB_DEFAULT, PASSWORD_HASH_MIB_MAX, PASSWORD_HASH_MIB_MIN } from './core/password-cost'
import { OUTBOUND_TIMEOUT_MS_DEFAULT, OUTBOUND_TIMEOUT_SECONDS_MAX, OUTBOUND_TIMEOUT_SECONDS_MIN } from './core/outbound-deadline'

export interface S3Config {
  endpoint: string
  bucket: string
  accessKey: string
  secretKey: string
  region: string
}

/**
 * Single sign-on for the dashboard (OpenID Connect, authorization code flow). Set when FIXLOOP_OIDC_ISSUER
 * is; docs/security.md "Single sign-on" says what is checked.
 */
export interface SsoConfig {
  /** The issuer URL exactly as the provider names itself (its discovery document is under it). */
  issuer: string
  clientId: string
  clientSecret: string
  /** <FIXLOOP_PUBLIC_URL>/admin/oidc/callback: never built from a request's Host header. */
  redirectUri: string
  /** <FIXLOOP_PUBLIC_URL>/admin (the sign-in page): where the provider's logout sends the browser back. */
  postLogoutRedirectUri: string
}

export interface Config {
  host: string
  port: number
  dataDir: string
  /** Multiplies every rate-limit ceiling and bucket capacity (spec part 8). */
  rateLimitMultiplier: number
  /** Take the client address from the last X-Forwarded-For hop instead of the socket. */
  trustProxy: boolean
  /** Master key (hex or base64 of 32 bytes); when absent, <dataDir>/master.key is used or created. */
  masterKey: string | undefined
  /** FIXLOOP_DATABASE_URL: PostgreSQL instead of the data dir's SQLite (CONTRACT.md, cluster mode). */
  databaseUrl: string | undefined
  /** FIXLOOP_REDIS_URL: Valkey/Redis for cluster mode (shared rate limits, wake-ups). */
  redisUrl: string | undefined
  /** Absolute base URL clients reach this server at (upload URLs, PR links); unset: the address each request came to. */
  publicUrl: string | undefined
  s3: S3Config | undefined
  /** FIXLOOP_OIDC_*: dashboard sign-in with OpenID Connect; unset: password sign-in only. */
  sso: SsoConfig | undefined
  /** FIXLOOP_PASSWORD_SIGNIN (default on): off refuses password sign-in (only allowed with SSO configured). */
  passwordSignIn: boolean
  /** FIXLOOP_PASSWORD_HASH_MIB (default 64, 19 to 1024): argon2id's memory for each new password hash. */
  passwordHashMib: number
  /** Most agent runs at once over all Apps (runs of one App are always one at a time). */
  agentConcurrency: number
  /** Minutes between polls of the open pull/merge requests fixloop opened (FIXLOOP_PR_POLL_MINUTES, default 10; 0: off). */
  prPollMinutes: number
  /** FIXLOOP_TRACKER_POLL_MINUTES: how often the state of tracker issues is polled (0 = off; webhooks only). */
  trackerPollMinutes: number
  /** FIXLOOP_TRACKER_ALLOW_PRIVATE: tracker API URLs may resolve to private addresses (a self-hosted tracker inside the network). */
  trackerAllowPrivate: boolean
  /** FIXLOOP_GIT_HOST_ALLOW_PRIVATE (on unless 0): git-host API URLs (pull requests) may resolve to private and loopback addresses (a git host inside the network). */
  gitHostAllowPrivate: boolean
  /**
   * FIXLOOP_OUTBOUND_TIMEOUT (seconds, default 15) in ms: the deadline of each call to an issue tracker's or
   * a git host's API (Jira Cloud and Linear a third longer, opening a pull request twice it: core/outbound-deadline.ts).
   */
  outboundTimeoutMs: number
  /** Review iterations per pull request at most (FIXLOOP_REVIEW_ITERATIONS_MAX, default 3; 0: none). */
  reviewIterationsMax: number
  /** Names of extra environment variables passed to agent commands (e.g. a proxy or API base URL). */
  agentPassEnv: string[]
  /** `bwrap` (default): agents run in a bubblewrap sandbox; `off`: unconfined (unsafe, FIXLOOP_AGENT_SANDBOX). */
  agentSandbox: 'bwrap' | 'off'
  /** Whether sandboxed agents may use the network (FIXLOOP_AGENT_NETWORK, default on: CLIs call their model API). */
  agentNetwork: boolean
  /** Extra host paths sandboxed agents may read (FIXLOOP_AGENT_SANDBOX_PATHS, colon-separated). */
  agentSandboxPaths: string[]
  /** Root of run workspaces, outside the data dir (FIXLOOP_WORK_DIR, default <tmp>/fixloop-work-<uid>). */
  workDir: string
  /** Hours an issued upload may stay unreferenced by any submission before it is removed. */
  uploadGraceHours: number
  /** FIXLOOP_UPLOAD_APP_HOURLY_MB: bytes of unreferenced uploads one App may be issued per hour (0: no limit). */
  uploadAppHourlyBytes: number
  /** FIXLOOP_UPLOAD_MIN_FREE_MB: bytes the embedded store leaves free on the data dir's disk (0: not checked). */
  uploadMinFreeBytes: number
  /** FIXLOOP_WEBHOOKS_PER_ORG: the most webhook endpoints one Org may have (0: no limit). */
  webhooksPerOrg: number
  /** FIXLOOP_SLACK_CONNECTIONS_PER_ORG: the most Slack connections one Org may have (0: no limit). */
  slackConnectionsPerOrg: number
  /** FIXLOOP_BODY_BUFFER_MB: bytes of JSON request bodies the server holds at once while they arrive (0: no limit). */
  bodyBufferBytes: number
  /** FIXLOOP_BODY_BUFFER_PER_ADDRESS_MB: the same, for one client address (0: no limit). */
  bodyBufferPerAddressBytes: number
  /** Bearer token GET /metrics requires; unset: /metrics is open (keep it behind the proxy). */
  metricsToken: string | undefined
  /** /readyz reports not ready below this much free space on the data dir's filesystem. */
  minFreeDiskBytes: number
  /**
   * FIXLOOP_SQLITE_SYNCHRONOUS: `full` (default) syncs every commit that answers a client before the answer,
   * so an acknowledged report survives a power loss; `normal` only at checkpoints (an OS crash may lose
   * the last commits; a process crash never does).
   */
  sqliteSynchronous: 'full' | 'normal'
  /** `info` logs a line per request; `warn` only problems; `silent` nothing. */
  logLevel: 'info' | 'warn' | 'silent'
  /** First admin, applied only while no admin exists (FIXLOOP_ADMIN_EMAIL + FIXLOOP_ADMIN_PASSWORD_FILE). */
  adminEmail: string | undefined
  adminPasswordFile: string | undefined
  /** Events (pull feed, stream, webhook source) older than this many days are purged. */
  eventRetentionDays: number
  /** Days audit entries are kept (FIXLOOP_AUDIT_RETENTION_DAYS; 0, the default, keeps them forever). */
  auditRetentionDays: number
  /** Webhook deliveries and their attempt log older than this many days are purged. */
  webhookLogRetentionDays: number
  /** Allow webhook targets on private, loopback and link-local addresses (tests, intranets). */
  webhookAllowPrivate: boolean
  /** Allow App SMTP servers on private, loopback and link-local addresses (a local relay, an internal mail server, tests). */
  smtpAllowPrivate: boolean
  /** Time a webhook receiver has to answer before the attempt counts as failed. */
  webhookTimeoutMs: number
  /** Multiplies every delay of the webhook retry schedule (tests shrink 27 hours to seconds). */
  webhookRetryScale: number
  /** Interval of the comment line keeping idle event streams open (at most 15 s). */
  sseHeartbeatMs: number
  /** Open event streams allowed per credential (`sk_` key or dashboard session). */
  sseStreamsPerKey: number
  /** Base URL of Slack's Web API (a stub in tests). */
  slackApiUrl: string
  /**
   * Cluster mode: how long a node's role lease lasts (renewed every third of it) and how long a silent
   * node counts as alive; a dead node's jobs are taken over within about twice this.
   */
  nodeLeaseMs: number
  /**
   * FIXLOOP_PG_STATEMENT_TIMEOUT_SECONDS: PostgreSQL's `statement_timeout` on the server's pool, in ms (0:
   * not set, the role's or database's own applies). db/pg/client-options.ts says why.
   */
  pgStatementTimeoutMs: number
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>

function parsePort(text: string, source: string): number {
  const n = whole(text)
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new ConfigError(`${source}: port must be an integer 0-65535, got "${text}"`)
  return n
}

/** A size in MB (0 turns the check off) as bytes; unset or empty: `fallbackMb`. */
function megabytesOrOff(text: string | undefined, source: string, fallbackMb: number): number {
  if (text === undefined || text === '') return fallbackMb * 1024 * 1024
  if (text === '0') return 0
  return Math.round(parsePositive(text, source) * 1024 * 1024)
}

/**
 * The number a setting's text spells in plain decimal (`8`, `0.5`), else NaN: Number() alone also reads
 * "0x10", "1e1", " 5 " and "" (as 0), so a typo or a stray space set a value nobody wrote.
 */
function decimal(text: string): number {
  return /^(\d+(\.\d+)?|\.\d+)$/.test(text) ? Number(text) : NaN
}

/** A whole number in plain decimal digits, else NaN (see `decimal`). */
function whole(text: string): number {
  return /^\d+$/.test(text) ? Number(text) : NaN
}

function parsePositive(text: string, source: string): number {
  const n = decimal(text)
  if (!Number.isFinite(n) || n <= 0) throw new ConfigError(`${source}: must be a positive number, got "${text}"`)
  return n
}

/**
 * A number in (`min`, `max`] when `min` is 0 (a positive number), else in [`min`, `max`]. Out of range is
 * refused, never clamped: a clamp let `FIXLOOP_NODE_LEASE_SECONDS=500` run with 60 without a word.
 */
function parseInRange(text: string, source: string, min: number, max: number): number {
  const n = decimal(text)
  const ok = Number.isFinite(n) && (min === 0 ? n > 0 : n >= min) && n <= max
  if (!ok) throw new ConfigError(min === 0 ? `${source}: must be a positive number of at most ${max}, got "${text}"` : `${source}: must be a number between ${min} and ${max}, got "${text}"`)
  return n
}

/** A whole number in [`min`, `max`]; out of range is refused. `unit` names what is counted when the name does not ("seconds"). */
function parseWholeInRange(text: string, source: string, min: number, max: number, unit?: string): number {
  const n = whole(text)
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new ConfigError(`${source}: must be a whole number${unit ? ` of ${unit}` : ''} from ${min} to ${max}, got "${text}"`)
  return n
}

/** A whole number from 0 (off) to `max`. */
function parseMinutesOrOff(text: string, source: string, max: number): number {
  const n = whole(text)
  if (!Number.isSafeInteger(n) || n < 0 || n > max) throw new ConfigError(`${source}: must be a whole number from 0 (off) to ${max}, got "${text}"`)
  return n
}

function parseCount(text: string, source: string): number {
  const n = whole(text)
  if (!Number.isSafeInteger(n) || n < 1) throw new ConfigError(`${source}: must be a whole number of at least 1, got "${text}"`)
  return n
}

function parseBool(text: string, source: string): boolean {
  if (/^(1|true|yes|on)$/i.test(text)) return true
  if (/^(0|false|no|off|)$/i.test(text)) return false
  throw new ConfigError(`${source}: must be true or false, got "${text}"`)
}

function parseHttpUrl(text: string, source: string): string {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new ConfigError(`${source}: must be an absolute http(s) URL, got "${text}"`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`${source}: must be an absolute http(s) URL (http://… or https://…), got "${text}"`)
  return text.replace(/\/+$/, '')
}

/** A URL as the operator wrote it, its user name and password replaced (for a message). */
function withoutCredentials(url: URL): string {
  return url.href.replace(/^([a-z]+:\/\/)[^@/]*@/, '$1…@')
}

/**
 * FIXLOOP_PUBLIC_URL, without trailing slashes; unset or empty: undefined. Every link fixloop hands out is
 * this base plus a path (upload and download URLs, the setup link, mail and pull request links), so a
 * value without a scheme ("fixloop.example.com") or with a query was taken and gave links no client can
 * follow ("fixloop.example.com/admin/setup#token=…", upload URLs without a host): refused at start.
 */
function publicUrlSetting(value: string | undefined): string | undefined {
  const base = value?.replace(/\/+$/, '')
  if (!base) return undefined
  parseHttpUrl(base, 'FIXLOOP_PUBLIC_URL')
  const url = new URL(base)
  // Browsers refuse to fetch a URL with credentials in it (the widget's upload PUT threw), and every link
  // handed out would show them; the password is left out of the message.
  if (url.username || url.password) {
    throw new ConfigError(`FIXLOOP_PUBLIC_URL: a base URL carries no user name or password (browsers refuse links that do), got "${withoutCredentials(url)}"`)
  }
  if (url.search || url.hash || base.includes('?') || base.includes('#')) {
    throw new ConfigError(`FIXLOOP_PUBLIC_URL: a base URL has no query or fragment (paths are appended to it), got "${value}"`)
  }
  return base
}

/** A URL of one of `schemes`, or a ConfigError naming the variable (never echoing a password). */
export function parseServiceUrl(value: string | undefined, name: string, schemes: string[]): string | undefined {
  if (!value) return undefined
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new ConfigError(`${name}: not a URL (expected ${schemes.map((s) => `${s}//…`).join(' or ')})`)
  }
  if (!schemes.includes(url.protocol)) throw new ConfigError(`${name}: the scheme must be ${schemes.join(' or ')}, got "${url.protocol}"`)
  if (!url.hostname) throw new ConfigError(`${name}: names no host`)
  return value
}

/**
 * A Redis URL's path is its database number (`redis://host:6379/1`, two clusters on one server) or nothing.
 * Bun's client threw a TypeError for anything else ("/abc"): serve died with exit 1 and a stack.
 */
function redisDatabase(value: string | undefined): string | undefined {
  if (value === undefined) return undefined
  const path = new URL(value).pathname
  if (path !== '' && path !== '/' && !/^\/\d{1,5}$/.test(path)) {
    throw new ConfigError(`FIXLOOP_REDIS_URL: the path is a database number (redis://host:6379/1) or nothing, got "${path}"`)
  }
  return value
}

function s3FromEnv(env: Env): S3Config | undefined {
  const endpoint = env.FIXLOOP_S3_ENDPOINT
  const bucket = env.FIXLOOP_S3_BUCKET
  const accessKey = env.FIXLOOP_S3_ACCESS_KEY
  const secretKey = env.FIXLOOP_S3_SECRET_KEY
  const any = endpoint || bucket || accessKey || secretKey
  if (!any) return undefined
  if (!endpoint || !bucket || !accessKey || !secretKey) {
    throw new ConfigError(
      'S3 storage needs all of FIXLOOP_S3_ENDPOINT, FIXLOOP_S3_BUCKET, FIXLOOP_S3_ACCESS_KEY and FIXLOOP_S3_SECRET_KEY',
    )
  }
  // "127.0.0.1:9000" (host:port, as MinIO's own examples write it) stopped serve with a TypeError and its
  // stack; "minio:9000" parses as a URL of scheme "minio:" and was dialled as plain http without a word.
  parseHttpUrl(endpoint, 'FIXLOOP_S3_ENDPOINT')
  // The S3 client is given the host and port alone: a path (a proxy prefix, the bucket written into it), a
  // query or credentials in the URL were dropped without a word, so requests went somewhere else.
  const url = new URL(endpoint)
  if (url.username || url.password) {
    throw new ConfigError(`FIXLOOP_S3_ENDPOINT: the keys go in FIXLOOP_S3_ACCESS_KEY and FIXLOOP_S3_SECRET_KEY, not in the URL, got "${withoutCredentials(url)}"`)
  }
  if (url.pathname.replace(/\/+$/, '') !== '' || url.search || url.hash || endpoint.includes('?') || endpoint.includes('#')) {
    throw new ConfigError(`FIXLOOP_S3_ENDPOINT: the endpoint is scheme, host and port only (http://minio.internal:9000; the bucket goes in FIXLOOP_S3_BUCKET), got "${endpoint}"`)
  }
  return { endpoint, bucket, accessKey, secretKey, region: env.FIXLOOP_S3_REGION || 'us-east-1' }
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])

/**
 * FIXLOOP_OIDC_ISSUER, _CLIENT_ID, _CLIENT_SECRET(_FILE) and FIXLOOP_PUBLIC_URL, all or none: a half-made
 * SSO set-up is refused at start rather than showing a button that cannot work. The issuer must be https
 * (plain http only on loopback, for a provider on the same host); the secret is read from the file here,
 * so a missing file stops the start, not the first sign-in.
 */
function ssoFromEnv(env: Env, publicUrl: string | undefined): SsoConfig | undefined {
  const issuer = env.FIXLOOP_OIDC_ISSUER
  const clientId = env.FIXLOOP_OIDC_CLIENT_ID
  const secretFile = env.FIXLOOP_OIDC_CLIENT_SECRET_FILE
  const secretEnv = env.FIXLOOP_OIDC_CLIENT_SECRET
  if (!issuer && !clientId && !secretFile && !secretEnv) return undefined
  if (!issuer || !clientId) throw new ConfigError('single sign-on needs FIXLOOP_OIDC_ISSUER and FIXLOOP_OIDC_CLIENT_ID (and FIXLOOP_OIDC_CLIENT_SECRET_FILE or FIXLOOP_OIDC_CLIENT_SECRET)')
  if (secretFile && secretEnv) throw new ConfigError('FIXLOOP_OIDC_CLIENT_SECRET_FILE and FIXLOOP_OIDC_CLIENT_SECRET: set one, not both')
  let clientSecret = secretEnv ?? ''
  if (secretFile) {
    try {
      clientSecret = readFileSync(secretFile, 'utf8').split(/\r?\n/)[0]
    } catch (e) {
      throw new ConfigError(`FIXLOOP_OIDC_CLIENT_SECRET_FILE: cannot read ${secretFile}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`)
    }
  }
  if (!clientSecret) throw new ConfigError('single sign-on needs the client secret: FIXLOOP_OIDC_CLIENT_SECRET_FILE (a file whose first line is the secret) or FIXLOOP_OIDC_CLIENT_SECRET')
  let url: URL
  try {
    url = new URL(issuer)
  } catch {
    throw new ConfigError(`FIXLOOP_OIDC_ISSUER: must be an absolute https URL, got "${issuer}"`)
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) {
    throw new ConfigError(`FIXLOOP_OIDC_ISSUER: must be an https URL (plain http only on localhost), got "${issuer}"`)
  }
  if (url.search || url.hash) throw new ConfigError(`FIXLOOP_OIDC_ISSUER: an issuer URL has no query or fragment, got "${issuer}"`)
  if (!publicUrl) throw new ConfigError('single sign-on needs FIXLOOP_PUBLIC_URL: the redirect URI registered at the provider is <FIXLOOP_PUBLIC_URL>/admin/oidc/callback')
  parseHttpUrl(publicUrl, 'FIXLOOP_PUBLIC_URL')
  return { issuer, clientId, clientSecret, redirectUri: `${publicUrl}/admin/oidc/callback`, postLogoutRedirectUri: `${publicUrl}/admin` }
}

/**
 * FIXLOOP_AGENT_ENV's names. A name that is not one ("HTTPS_PROXY HTTP_PROXY", separated by a space; a
 * dash) was dropped without a word and the agent ran without the variable; a FIXLOOP_* name is never
 * passed (agent/runner.ts keeps fixloop's own settings from agents whatever is listed). Both are refused
 * at start, naming the name, rather than ignored.
 */
function agentEnvNames(value: string | undefined): string[] {
  const names = (value ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean)
  for (const name of names) {
    if (/\s/.test(name)) throw new ConfigError(`FIXLOOP_AGENT_ENV: a comma-separated list of variable names, got "${name}" (names separated by spaces?)`)
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new ConfigError(`FIXLOOP_AGENT_ENV: "${name}" is not a variable name (letters, digits and _), got "${value}"`)
    if (name.startsWith('FIXLOOP_')) throw new ConfigError(`FIXLOOP_AGENT_ENV: ${name} is fixloop's own setting, never passed to agents: remove it from the list, got "${value}"`)
  }
  return names
}

/**
 * The data dir as given. An empty one (`--data-dir "$DIR"` with DIR unset, `FIXLOOP_DATA_DIR=` in an env
 * file) is refused: resolved, it was the current directory, which then became an instance, made owner-only
 * (chmod 0700: run as root from `/`, the root of the file system) with the database and master.key dropped
 * into it. Found by the ops attack.
 */
function dataDirSetting(flag: string | undefined, fromEnv: string | undefined): string {
  const [value, source] = flag !== undefined ? [flag, '--data-dir'] : fromEnv !== undefined ? [fromEnv, 'FIXLOOP_DATA_DIR'] : ['./data', 'default']
  if (value.trim() === '') {
    throw new ConfigError(`${source} is empty (an unset shell variable?): that would make the current directory the data dir, made owner-only with the database and master.key in it; give the path, or leave ${source} out for ./data`)
  }
  return value
}

/**
 * The listen address as given, refused when empty (`--host "$HOST"` or `FIXLOOP_HOST=${HOST}` with the
 * shell variable unset): it failed at listen time as "--host must be an address of this machine".
 */
function notEmptyHost(value: string | undefined, source: string): string | undefined {
  if (value !== undefined && value.trim() === '') throw new ConfigError(`${source} is empty (an unset shell variable?): give the address to listen on, or leave ${source} out for 127.0.0.1`)
  return value
}

export interface ConfigFlags {
  host?: string
  port?: string
  dataDir?: string
}

export function loadConfig(flags: ConfigFlags, env: Env = process.env): Readonly<Config> {
  const host = notEmptyHost(flags.host, '--host') ?? notEmptyHost(env.FIXLOOP_HOST, 'FIXLOOP_HOST') ?? '127.0.0.1'
  // An empty FIXLOOP_PORT is refused as any other text that is not a port (it quietly became 8080).
  const port = flags.port !== undefined ? parsePort(flags.port, '--port') : env.FIXLOOP_PORT !== undefined ? parsePort(env.FIXLOOP_PORT, 'FIXLOOP_PORT') : 8080
  const dataDir = resolve(dataDirSetting(flags.dataDir, env.FIXLOOP_DATA_DIR))
  const logLevel = (env.FIXLOOP_LOG_LEVEL ?? 'info') as Config['logLevel']
  if (!['info', 'warn', 'silent'].includes(logLevel)) throw new ConfigError(`FIXLOOP_LOG_LEVEL: must be info, warn or silent, got "${logLevel}"`)
  const sqliteSynchronous = (env.FIXLOOP_SQLITE_SYNCHRONOUS || 'full') as Config['sqliteSynchronous']
  if (!['full', 'normal'].includes(sqliteSynchronous)) throw new ConfigError(`FIXLOOP_SQLITE_SYNCHRONOUS: must be full or normal, got "${sqliteSynchronous}"`)
  const agentSandbox = (env.FIXLOOP_AGENT_SANDBOX || 'bwrap') as Config['agentSandbox']
  if (!['bwrap', 'off'].includes(agentSandbox)) throw new ConfigError(`FIXLOOP_AGENT_SANDBOX: must be bwrap or off, got "${agentSandbox}"`)
  const workDir = resolve(env.FIXLOOP_WORK_DIR || resolve(tmpdir(), `fixloop-work-${process.getuid?.() ?? 'user'}`))
  if (workDir === dataDir || workDir.startsWith(dataDir + sep)) throw new ConfigError(`FIXLOOP_WORK_DIR (${workDir}) must be outside the data dir: agents must never see it`)
  const listedSandboxPaths = (env.FIXLOOP_AGENT_SANDBOX_PATHS ?? '').split(':').filter(Boolean)
  // Compared, and bound, as what they resolve to: bwrap binds a symlink's target, so a link to the data
  // dir (or a path under a linked folder) must be judged as the data dir.
  // A folder not made yet (the data dir before the first start) resolves through its nearest existing parent.
  const real = (path: string): string => {
    try {
      return realpathSync(path)
    } catch {
      const parent = dirname(path)
      return parent === path ? path : join(real(parent), basename(path))
    }
  }
  const realDataDir = real(dataDir)
  const realWorkDir = real(workDir)
  const agentSandboxPaths: string[] = []
  for (const p of listedSandboxPaths) {
    if (!p.startsWith('/')) throw new ConfigError(`FIXLOOP_AGENT_SANDBOX_PATHS: "${p}" is not an absolute path`)
    const abs = real(resolve(p))
    agentSandboxPaths.push(abs)
    if (abs === '/' || realDataDir === abs || realDataDir.startsWith(abs + sep) || abs.startsWith(realDataDir + sep)) throw new ConfigError(`FIXLOOP_AGENT_SANDBOX_PATHS: "${p}" would show the data dir to agents`)
    // The work dir holds every run's workspace: other Apps' code and the host token's credential helpers.
    if (realWorkDir === abs || realWorkDir.startsWith(abs + sep) || abs.startsWith(realWorkDir + sep)) throw new ConfigError(`FIXLOOP_AGENT_SANDBOX_PATHS: "${p}" would show the work dir (${workDir}: every run's workspace) to agents`)
  }
  // The folders every sandbox shows (/usr, /bin, /lib*, a few /etc entries) must not hold the data dir or
  // the work dir either: `./fixloop serve` run from /usr/local/fixloop made ./data (master key, database)
  // readable to every agent of the same uid, and a work dir there showed every run's workspace.
  if (agentSandbox === 'bwrap') {
    for (const shown of ALWAYS_SHOWN) {
      const abs = real(shown)
      if (realDataDir === abs || realDataDir.startsWith(abs + sep)) throw new ConfigError(`the data dir (${dataDir}) is inside ${shown}, which every agent sandbox shows: move it (FIXLOOP_DATA_DIR or --data-dir), e.g. to /var/lib/fixloop`)
      if (realWorkDir === abs || realWorkDir.startsWith(abs + sep)) throw new ConfigError(`FIXLOOP_WORK_DIR (${workDir}) is inside ${shown}, which every agent sandbox shows: use a folder outside it`)
    }
  }
  const publicUrl = publicUrlSetting(env.FIXLOOP_PUBLIC_URL)
  const sso = ssoFromEnv(env, publicUrl)
  const passwordSignIn = env.FIXLOOP_PASSWORD_SIGNIN ? parseBool(env.FIXLOOP_PASSWORD_SIGNIN, 'FIXLOOP_PASSWORD_SIGNIN') : true
  if (!passwordSignIn && !sso) throw new ConfigError('FIXLOOP_PASSWORD_SIGNIN=off needs single sign-on configured (FIXLOOP_OIDC_ISSUER, FIXLOOP_OIDC_CLIENT_ID, FIXLOOP_OIDC_CLIENT_SECRET_FILE, FIXLOOP_PUBLIC_URL): otherwise nobody could sign in')
  return Object.freeze({
    host,
    port,
    dataDir,
    rateLimitMultiplier: env.FIXLOOP_RATE_LIMIT_MULTIPLIER
      ? parsePositive(env.FIXLOOP_RATE_LIMIT_MULTIPLIER, 'FIXLOOP_RATE_LIMIT_MULTIPLIER')
      : 1,
    trustProxy: env.FIXLOOP_TRUST_PROXY ? parseBool(env.FIXLOOP_TRUST_PROXY, 'FIXLOOP_TRUST_PROXY') : false,
    masterKey: env.FIXLOOP_MASTER_KEY || undefined,
    databaseUrl: parseServiceUrl(env.FIXLOOP_DATABASE_URL, 'FIXLOOP_DATABASE_URL', ['postgres:', 'postgresql:']),
    redisUrl: redisDatabase(parseServiceUrl(env.FIXLOOP_REDIS_URL, 'FIXLOOP_REDIS_URL', ['redis:', 'rediss:'])),
    publicUrl,
    s3: s3FromEnv(env),
    sso,
    passwordSignIn,
    passwordHashMib: env.FIXLOOP_PASSWORD_HASH_MIB ? parseWholeInRange(env.FIXLOOP_PASSWORD_HASH_MIB, 'FIXLOOP_PASSWORD_HASH_MIB', PASSWORD_HASH_MIB_MIN, PASSWORD_HASH_MIB_MAX) : PASSWORD_HASH_MIB_DEFAULT,
    agentConcurrency: env.FIXLOOP_AGENT_CONCURRENCY ? parseCount(env.FIXLOOP_AGENT_CONCURRENCY, 'FIXLOOP_AGENT_CONCURRENCY') : 2,
    trackerPollMinutes: env.FIXLOOP_TRACKER_POLL_MINUTES ? parseMinutesOrOff(env.FIXLOOP_TRACKER_POLL_MINUTES, 'FIXLOOP_TRACKER_POLL_MINUTES', 24 * 60) : 10,
    trackerAllowPrivate: env.FIXLOOP_TRACKER_ALLOW_PRIVATE ? parseBool(env.FIXLOOP_TRACKER_ALLOW_PRIVATE, 'FIXLOOP_TRACKER_ALLOW_PRIVATE') : false,
    gitHostAllowPrivate: env.FIXLOOP_GIT_HOST_ALLOW_PRIVATE ? parseBool(env.FIXLOOP_GIT_HOST_ALLOW_PRIVATE, 'FIXLOOP_GIT_HOST_ALLOW_PRIVATE') : true,
    outboundTimeoutMs: env.FIXLOOP_OUTBOUND_TIMEOUT
      ? parseWholeInRange(env.FIXLOOP_OUTBOUND_TIMEOUT, 'FIXLOOP_OUTBOUND_TIMEOUT', OUTBOUND_TIMEOUT_SECONDS_MIN, OUTBOUND_TIMEOUT_SECONDS_MAX, 'seconds') * 1000
      : OUTBOUND_TIMEOUT_MS_DEFAULT,
    prPollMinutes: env.FIXLOOP_PR_POLL_MINUTES ? parseMinutesOrOff(env.FIXLOOP_PR_POLL_MINUTES, 'FIXLOOP_PR_POLL_MINUTES', 24 * 60) : 10,
    reviewIterationsMax: env.FIXLOOP_REVIEW_ITERATIONS_MAX ? parseMinutesOrOff(env.FIXLOOP_REVIEW_ITERATIONS_MAX, 'FIXLOOP_REVIEW_ITERATIONS_MAX', 100) : 3,
    agentPassEnv: agentEnvNames(env.FIXLOOP_AGENT_ENV),
    agentSandbox,
    agentNetwork: env.FIXLOOP_AGENT_NETWORK ? parseBool(env.FIXLOOP_AGENT_NETWORK, 'FIXLOOP_AGENT_NETWORK') : true,
    agentSandboxPaths,
    workDir,
    uploadGraceHours: env.FIXLOOP_UPLOAD_GRACE_HOURS ? parsePositive(env.FIXLOOP_UPLOAD_GRACE_HOURS, 'FIXLOOP_UPLOAD_GRACE_HOURS') : 24,
    uploadAppHourlyBytes: megabytesOrOff(env.FIXLOOP_UPLOAD_APP_HOURLY_MB, 'FIXLOOP_UPLOAD_APP_HOURLY_MB', 1024),
    uploadMinFreeBytes: megabytesOrOff(env.FIXLOOP_UPLOAD_MIN_FREE_MB, 'FIXLOOP_UPLOAD_MIN_FREE_MB', 256),
    webhooksPerOrg: env.FIXLOOP_WEBHOOKS_PER_ORG === '0' ? 0 : env.FIXLOOP_WEBHOOKS_PER_ORG ? parseCount(env.FIXLOOP_WEBHOOKS_PER_ORG, 'FIXLOOP_WEBHOOKS_PER_ORG') : 100,
    slackConnectionsPerOrg: env.FIXLOOP_SLACK_CONNECTIONS_PER_ORG === '0' ? 0 : env.FIXLOOP_SLACK_CONNECTIONS_PER_ORG ? parseCount(env.FIXLOOP_SLACK_CONNECTIONS_PER_ORG, 'FIXLOOP_SLACK_CONNECTIONS_PER_ORG') : 20,
    bodyBufferBytes: megabytesOrOff(env.FIXLOOP_BODY_BUFFER_MB, 'FIXLOOP_BODY_BUFFER_MB', 256),
    bodyBufferPerAddressBytes: megabytesOrOff(env.FIXLOOP_BODY_BUFFER_PER_ADDRESS_MB, 'FIXLOOP_BODY_BUFFER_PER_ADDRESS_MB', 24),
    metricsToken: env.FIXLOOP_METRICS_TOKEN || undefined,
    minFreeDiskBytes:
      (env.FIXLOOP_MIN_FREE_DISK_MB !== undefined && env.FIXLOOP_MIN_FREE_DISK_MB !== ''
        ? env.FIXLOOP_MIN_FREE_DISK_MB === '0' ? 0 : parsePositive(env.FIXLOOP_MIN_FREE_DISK_MB, 'FIXLOOP_MIN_FREE_DISK_MB')
        : 64) * 1024 * 1024,
    sqliteSynchronous,
    logLevel,
    adminEmail: env.FIXLOOP_ADMIN_EMAIL || undefined,
    adminPasswordFile: env.FIXLOOP_ADMIN_PASSWORD_FILE || undefined,
    eventRetentionDays: env.FIXLOOP_EVENT_RETENTION_DAYS ? parsePositive(env.FIXLOOP_EVENT_RETENTION_DAYS, 'FIXLOOP_EVENT_RETENTION_DAYS') : 30,
    auditRetentionDays: env.FIXLOOP_AUDIT_RETENTION_DAYS ? parseMinutesOrOff(env.FIXLOOP_AUDIT_RETENTION_DAYS, 'FIXLOOP_AUDIT_RETENTION_DAYS', 36500) : 0,
    webhookLogRetentionDays: env.FIXLOOP_WEBHOOK_LOG_RETENTION_DAYS
      ? parsePositive(env.FIXLOOP_WEBHOOK_LOG_RETENTION_DAYS, 'FIXLOOP_WEBHOOK_LOG_RETENTION_DAYS')
      : 14,
    webhookAllowPrivate: env.FIXLOOP_WEBHOOK_ALLOW_PRIVATE ? parseBool(env.FIXLOOP_WEBHOOK_ALLOW_PRIVATE, 'FIXLOOP_WEBHOOK_ALLOW_PRIVATE') : false,
    smtpAllowPrivate: env.FIXLOOP_SMTP_ALLOW_PRIVATE ? parseBool(env.FIXLOOP_SMTP_ALLOW_PRIVATE, 'FIXLOOP_SMTP_ALLOW_PRIVATE') : false,
    webhookTimeoutMs: env.FIXLOOP_WEBHOOK_TIMEOUT_SECONDS
      ? parseInRange(env.FIXLOOP_WEBHOOK_TIMEOUT_SECONDS, 'FIXLOOP_WEBHOOK_TIMEOUT_SECONDS', 0, 15) * 1000
      : 15_000,
    webhookRetryScale: env.FIXLOOP_WEBHOOK_RETRY_SCALE ? parsePositive(env.FIXLOOP_WEBHOOK_RETRY_SCALE, 'FIXLOOP_WEBHOOK_RETRY_SCALE') : 1,
    sseHeartbeatMs: env.FIXLOOP_SSE_HEARTBEAT_SECONDS
      ? parseInRange(env.FIXLOOP_SSE_HEARTBEAT_SECONDS, 'FIXLOOP_SSE_HEARTBEAT_SECONDS', 0, 15) * 1000
      : 10_000,
    sseStreamsPerKey: env.FIXLOOP_SSE_STREAMS_PER_KEY ? parseCount(env.FIXLOOP_SSE_STREAMS_PER_KEY, 'FIXLOOP_SSE_STREAMS_PER_KEY') : 100,
    slackApiUrl: parseHttpUrl(env.FIXLOOP_SLACK_API_URL || 'https://slack.com/api', 'FIXLOOP_SLACK_API_URL'),
    nodeLeaseMs: env.FIXLOOP_NODE_LEASE_SECONDS ? parseInRange(env.FIXLOOP_NODE_LEASE_SECONDS, 'FIXLOOP_NODE_LEASE_SECONDS', 1, 60) * 1000 : 15_000,
    pgStatementTimeoutMs: env.FIXLOOP_PG_STATEMENT_TIMEOUT_SECONDS
      ? parseMinutesOrOff(env.FIXLOOP_PG_STATEMENT_TIMEOUT_SECONDS, 'FIXLOOP_PG_STATEMENT_TIMEOUT_SECONDS', 86_400) * 1000
      : 20_000,
  })
}
