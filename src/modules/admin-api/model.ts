/** TypeBox schemas of the dashboard's own routes (/admin/api/…), closed like every other body. */
import { PROOF_OF_WORK_LEVELS } from '../../abuse/difficulty'
import { t } from 'elysia'
import { ID_PATTERN } from '../../core/ids'
import { oneOf, int } from '../../core/schema'
import { REAUTH_PURPOSES } from '../admins/sessions'
import { PROCESSING_MODES, REPLAY_MODES, REPLAY_SECONDS_MAX, REPLAY_SECONDS_MIN } from '../apps/model'
import { FOLDERS } from './inbox-repo'
import { AGENT_PROVIDERS, HOST_KINDS, PR_MODES } from '../connections/service'

const closed = { additionalProperties: false } as const
const Id = t.String({ pattern: ID_PATTERN })
const Email = t.String({ minLength: 3, maxLength: 320 })
const Password = t.String({ minLength: 1, maxLength: 1024 })

export const ADMIN_SESSION = [{ adminSession: [] }]
export const OrgParams = t.Object({ orgId: Id }, closed)
export const AppParams = t.Object({ orgId: Id, appId: Id }, closed)
export const KeyParams = t.Object({ orgId: Id, keyId: Id }, closed)
export const SessionParams = t.Object({ id: Id }, closed)

export const LoginBody = t.Object({ email: Email, password: Password, totp: t.Optional(t.String({ maxLength: 12 })) }, closed)
export const SetupBody = t.Object({ token: t.String({ minLength: 1, maxLength: 200 }), email: Email, password: Password }, closed)
/** Without `password`: the session's step-up re-authentication at the identity provider is used instead (password-reentry.ts). */
export const PasswordBody = t.Object({ password: t.Optional(Password) }, closed)
/** A confirmation by password, recorded on the session for one action sent without it (REAUTH_PASSWORD_PATH). */
export const ReauthPasswordBody = t.Object({ purpose: t.Union(REAUTH_PURPOSES.map((p) => t.Literal(p))), password: Password }, closed)
export const TotpEnableBody = t.Object({ secret: t.String({ minLength: 16, maxLength: 128 }), code: t.String({ maxLength: 12 }), password: t.Optional(Password) }, closed)

export const Me = t.Object(
  {
    id: Id,
    email: t.String(),
    isOwner: t.Boolean({ description: 'Instance owner: sees every Org' }),
    totpEnabled: t.Boolean(),
    csrfToken: t.String({ description: 'Send in X-CSRF-Token on every mutation' }),
    sessionId: Id,
  },
  closed,
)

export const Org = t.Object({ id: Id, name: t.String(), createdAt: t.String(), role: oneOf(['owner', 'member']) }, closed)
export const OrgList = t.Object({ data: t.Array(Org) }, closed)
export const OrgBody = t.Object({ name: t.String({ minLength: 1, maxLength: 200 }) }, closed)

const settings = {
  slug: t.Optional(t.String({ maxLength: 64 })),
  description: t.Optional(t.String({ maxLength: 2000 })),
  publicSubmissionEnabled: t.Optional(t.Boolean()),
  allowedOrigins: t.Optional(t.Array(t.String({ maxLength: 300 }), { maxItems: 100 })),
  processingMode: t.Optional(oneOf(PROCESSING_MODES)),
  batchEnabled: t.Optional(t.Boolean()),
  batchWindowHours: t.Optional(int({ minimum: 1, maximum: 720 })),
  proofOfWork: t.Optional(oneOf(PROOF_OF_WORK_LEVELS)),
  spamEvents: t.Optional(t.Boolean()),
  spamRetentionDays: t.Optional(int({ minimum: 0, maximum: 3650 })),
  retentionDays: t.Optional(int({ minimum: 0, maximum: 3650 })),
  replay: t.Optional(
    t.Object(
      { mode: t.Optional(oneOf(REPLAY_MODES)), seconds: t.Optional(int({ minimum: REPLAY_SECONDS_MIN, maximum: REPLAY_SECONDS_MAX })) },
      { ...closed, description: 'Session replay (docs/api.md); a part left out keeps its value' },
    ),
  ),
}
export const AppCreateBody = t.Object({ name: t.String({ minLength: 1, maxLength: 200 }), ...settings }, closed)
export const AppUpdateBody = t.Object({ name: t.Optional(t.String({ minLength: 1, maxLength: 200 })), ...settings }, closed)
export const SecretResponse = t.Object({ signingSecret: t.String({ description: 'hex' }) }, closed)

export const KeyBody = t.Object({ name: t.String({ maxLength: 200 }), password: t.Optional(Password) }, closed)
export const ApiKeyView = t.Object(
  {
    id: Id,
    name: t.String(),
    prefix: t.String(),
    createdBy: t.String({ description: 'Email of the admin who created it, or "cli"' }),
    createdAt: t.String(),
    lastUsedAt: t.Union([t.String(), t.Null()]),
    revokedAt: t.Union([t.String(), t.Null()]),
  },
  closed,
)
export const ApiKeyList = t.Object({ data: t.Array(ApiKeyView) }, closed)
export const CreatedKey = t.Object({ id: Id, key: t.String({ description: 'sk_…, shown this once' }), name: t.String(), prefix: t.String() }, closed)

const BoolText = oneOf(['true', 'false'])
export const InboxQuery = t.Object(
  {
    folder: t.Optional(oneOf(Object.keys(FOLDERS) as (keyof typeof FOLDERS)[])),
    appId: t.Optional(Id),
    severity: t.Optional(oneOf(['low', 'medium', 'high'])),
    mode: t.Optional(oneOf(['public', 'private'])),
    hasScreenshot: t.Optional(BoolText),
    hasConsole: t.Optional(BoolText),
    urlContains: t.Optional(t.String({ maxLength: 500 })),
    from: t.Optional(t.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}', maxLength: 30 })),
    to: t.Optional(t.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}', maxLength: 30 })),
    q: t.Optional(t.String({ maxLength: 500 })),
    cursor: t.Optional(Id),
    limit: t.Optional(t.Numeric({ minimum: 1, maximum: 200, multipleOf: 1 })),
  },
  closed,
)
export const IdsBody = t.Object({ ids: t.Array(Id, { minItems: 1, maxItems: 200 }), read: t.Optional(t.Boolean()) }, closed)
export const AuditQuery = t.Object({ cursor: t.Optional(Id), limit: t.Optional(t.Numeric({ minimum: 1, maximum: 200, multipleOf: 1 })) }, closed)

export const CostList = t.Object(
  {
    days: t.Number(),
    data: t.Array(t.Object({ appId: Id, runs: t.Number(), tokensIn: t.Number(), tokensOut: t.Number(), costUsd: t.Number() }, closed)),
  },
  closed,
)

const optStr = (max: number) => t.Optional(t.String({ maxLength: max }))
export const RepoBody = t.Object(
  {
    gitUrl: t.String({ minLength: 1, maxLength: 2000 }),
    baseBranch: optStr(200),
    host: t.Optional(oneOf(HOST_KINDS)),
    hostApiUrl: optStr(2000),
    hostRepo: optStr(300),
    hostToken: t.Optional(t.String({ maxLength: 4000, description: 'Stored encrypted, never returned; empty keeps the stored token' })),
    agent: t.Optional(oneOf(AGENT_PROVIDERS)),
    agentCommand: optStr(4000),
    model: optStr(200),
    timeoutSeconds: t.Optional(int({ minimum: 1, maximum: 86400 })),
    prMode: t.Optional(oneOf(PR_MODES)),
    verifyCommand: optStr(4000),
    maxFiles: t.Optional(int({ minimum: 1, maximum: 10000 })),
    maxLines: t.Optional(int({ minimum: 1, maximum: 1000000 })),
    denyPaths: t.Optional(t.Array(t.String({ maxLength: 300 }), { maxItems: 100 })),
    runsPerDay: t.Optional(int({ minimum: 1, maximum: 10000 })),
    maxCostUsdPerMonth: t.Optional(t.Number({ exclusiveMinimum: 0, maximum: 1000000 })),
    password: t.Optional(Password),
  },
  closed,
)
export const RepoView = t.Object({ connection: t.Union([t.Record(t.String(), t.Unknown()), t.Null()]) }, closed)
