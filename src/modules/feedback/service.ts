/**
 * Feedback rules: submission (with idempotency), listing, reading and customer moves.
 * Routes call these with the caller's Org or App already authenticated.
 */
import { ApiError } from '../../core/errors'
import type { Store } from '../../db/store'
import type { SecretBox } from '../../core/crypto'
import type { Clock } from '../../core/clock'
import { isoUtc } from '../../core/clock'
import { LIMITS, jsonByteLength } from '../../core/limits'
import { sha256Hex } from '../../core/secrets'
import type { CustomerTarget, FeedbackStatus } from '../../core/fsm'
import type { KnownApp } from '../../auth/directory'
import type { UserIdentity } from '../../auth/user-token'
import { type FeedbackRepo, type FeedbackRow, type ListRow, type SpamChange, type SubmitResult } from './repo'
import { contentReasons } from '../../abuse/spam-score'
import { learnFrom, parseFactors } from '../../abuse/spam-learn'
import { clearedAfter } from '../../abuse/spam-cleared'
import type { SpamMark } from '../../abuse/spam-intake'
import { suggestedLeadsOf } from './suggested'
import { isMailAddress } from '../mail/address'
import { previewBudget, toFullItem, toListItem } from './present'
import { previewStored, sanitizeStored, type StoredReport } from '../../sanitize/report'
import { issueView } from '../trackers/service'
import type { FeedbackItem, FullFeedbackItem, PatchBody, SpamFilter, SubmitBody } from './model'
import type { UploadsService } from '../uploads/service'
import { UploadGoneError } from '../uploads/repo'
import type { ActedBy } from '../audit/entry'
import { clip } from '../../core/clip'

export interface Submission {
  app: KnownApp
  /** Set in private mode (a verified user token). */
  user: UserIdentity | undefined
  body: SubmitBody
  requestUserAgent: string | null
  idempotencyKey: string | undefined
  /** The client's address (public mode scopes Idempotency-Keys by it). */
  clientIp: string
  /** Classified as spam at intake (src/abuse/spam-intake.ts); stored with the report, answered 201 all the same. */
  spam?: SpamMark | null
}

/** What this service is given: the repositories and values it uses (a Context has them all). */
export interface FeedbackDeps {
  store: Pick<Store, 'feedback' | 'apps' | 'abuse' | 'trackers'>
  box: SecretBox
  clock: Clock
}

/**
 * The hashes an Idempotency-Key's body is compared by. The parsed body re-encoded, so a retry whose JSON
 * differs only in spacing is the same request, and with its members sorted at every level, so one whose
 * members come in another order is too: a JSON object's members have no order (RFC 8259), and a client
 * rebuilding the body for its retry from a map sent {"severity", "text"} where it had sent {"text",
 * "severity"} and was refused 409 idempotency_key_reused (found by an attack on the API). `orderedHash`,
 * the earlier hash, still matches a key stored by an earlier version.
 */
export function requestHashes(body: unknown): { requestHash: string; orderedHash: string } {
  const sorted = JSON.stringify(body, (_key, value: unknown) =>
    // Object.fromEntries defines each member, "__proto__" included, as an ordinary own member.
    value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.fromEntries(Object.keys(value).sort().map((k) => [k, (value as Record<string, unknown>)[k]])) : value,
  )
  return { requestHash: sha256Hex(sorted), orderedHash: sha256Hex(JSON.stringify(body)) }
}

/**
 * Where an Idempotency-Key lives: keys are the submitter's, not the App's, so another user's identical
 * key and body never swallow a report. Private mode: the token's `sub`; public mode: the client address.
 * Stored as a hash prefix of the key (the address itself is not kept), so the table needs no new column.
 */
export function scopedIdempotencyKey(s: Pick<Submission, 'user' | 'clientIp'>, key: string): string {
  const scope = s.user ? `sub:${s.user.sub}` : `ip:${s.clientIp}`
  return `${sha256Hex(scope).slice(0, 32)}:${key}`
}

export type { SubmitResult }

/**
 * The address a `notifyEmail: true` submission will be told at: identity.email (public mode) or the user
 * token's ctx.email (private mode), which must look like one address (no spaces, no second @, no line
 * breaks: it becomes a mail header). Anything else is invalid_body naming where the address was looked for.
 */
export function notifyAddress(privateMode: boolean, email: string | null): string {
  const path = privateMode ? 'header:X-Service-User-Token/ctx/email' : '/identity/email'
  if (email === null) {
    throw invalid('/notifyEmail', privateMode ? 'needs an email in the user token\'s ctx (ctx.email)' : 'needs identity.email (the address to tell)')
  }
  if (!isMailAddress(email)) throw invalid(path, 'must be one email address (name@domain) to use notifyEmail')
  return email
}

function invalid(path: string, message: string): ApiError {
  return new ApiError('invalid_body', { issues: [{ path, message }] })
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? clip(v, 320) : null)
const jsonOrNull = (v: unknown): string | null => (v === undefined ? null : JSON.stringify(v))

/** The JSON columns of a report, each encoded once (the size checks measure the same text). */
interface EncodedJson {
  viewport: string | null
  consoleLogs: string | null
  attachments: string | null
  componentTarget: string | null
  metadata: string | null
}

/** Checks the rules TypeBox cannot express (URL syntax, JSON byte sizes, attachment size) and encodes the JSON columns. */
function checkAndEncode(body: SubmitBody): EncodedJson {
  if (body.url !== undefined && !URL.canParse(body.url)) throw invalid('/url', 'must be an absolute URL')
  const metadata = jsonOrNull(body.metadata)
  if (metadata !== null && metadata.length > LIMITS.metadataMaxBytes / 3 && Buffer.byteLength(metadata, 'utf8') > LIMITS.metadataMaxBytes) {
    throw invalid('/metadata', `must be at most ${LIMITS.metadataMaxBytes} bytes of JSON`)
  }
  const meta = body.componentTarget?.meta
  if (meta !== undefined && jsonByteLength(meta) > LIMITS.componentMetaMaxBytes) {
    throw invalid('/componentTarget/meta', `must be at most ${LIMITS.componentMetaMaxBytes} bytes of JSON`)
  }
  body.attachments?.forEach((a, i) => {
    if (a.byteSize > LIMITS.attachmentMaxBytes) {
      throw new ApiError('payload_too_large', { path: `/attachments/${i}/byteSize`, limitBytes: LIMITS.attachmentMaxBytes })
    }
  })
  return {
    viewport: jsonOrNull(body.viewport),
    consoleLogs: jsonOrNull(body.consoleLogs),
    attachments: jsonOrNull(body.attachments),
    componentTarget: jsonOrNull(body.componentTarget),
    metadata,
  }
}

/** Every upload key a submission references, with the body path to name in an error. */
function uploadRefs(body: SubmitBody) {
  const refs: { path: string; key: string; kind?: string; contentType?: string; byteSize?: number }[] = (body.attachments ?? []).map((a, i) => ({
    path: `/attachments/${i}/key`,
    key: a.key,
    kind: a.kind,
    contentType: a.contentType,
    byteSize: a.byteSize,
  }))
  if (body.componentTarget?.screenshotKey) refs.push({ path: '/componentTarget/screenshotKey', key: body.componentTarget.screenshotKey })
  return refs
}

/**
 * A spam report's free-text columns as stored: sanitized at intake by the worker's own rules
 * (docs/sanitizing.md), since a report classified as spam never gets a `process` job, and nothing is kept
 * raw, spam included. A report the sanitizer cannot read is withheld whole, as a preview would be.
 */
function scrubSpam(columns: StoredReport, submitter: { email: string | null; name: string | null; externalUserId: string | null }): { columns: StoredReport; redactions: string } {
  try {
    const { columns: clean, redactions } = sanitizeStored(columns, submitter)
    return { columns: clean, redactions: JSON.stringify(redactions) }
  } catch {
    return { columns: previewStored(columns, submitter), redactions: '{}' }
  }
}

/** What the intake's spam score learns from the service (src/abuse/spam-intake.ts): decisions, spam stored. */
export interface SpamHooks {
  forget(appId: string): void
  confirmedSpam(appId: string, text: string): void
  notSpam(appId: string, text: string): void
}

export function createFeedbackService(ctx: FeedbackDeps, uploads: UploadsService, spamHooks?: SpamHooks) {
  const { clock } = ctx
  const repo = ctx.store.feedback
  const apps = ctx.store.apps
  const abuse = ctx.store.abuse
  const trackerIssues = ctx.store.trackers

  /** The tracker issue of each report: its own as a lead, its lead's as a duplicate (one read per page). */
  async function withTrackerIssues<T extends { id: string; duplicateOfId: string | null; trackerIssue: unknown }>(items: T[]): Promise<T[]> {
    if (items.length === 0) return items
    const rows = new Map((await trackerIssues.issuesOf([...new Set(items.map((i) => i.duplicateOfId ?? i.id))])).map((r) => [r.feedback_id, r]))
    for (const i of items) {
      const r = rows.get(i.duplicateOfId ?? i.id)
      i.trackerIssue = r ? issueView(r) : null
    }
    return items
  }

  /** Why a report waits where it is, when nothing will move it on by itself. */
  async function statusReasonOf(row: FeedbackRow): Promise<string | null> {
    if (row.duplicateOfId) return null
    if (row.status === 'queued' && !(await repo.hasRepoConnection(row.appId))) {
      return 'waiting for a repository: this App has none connected (fixloop app connect-repo); the agent run starts once one is'
    }
    if (row.status === 'sanitized') {
      const closesAt = await repo.batchClosesAt(row.appId)
      if (closesAt !== null) return `held in the App's batch window until ${isoUtc(closesAt)}; then it moves on with its cluster`
    }
    return null
  }

  const suggestedLeads = (orgId: string, rows: ListRow[]) => suggestedLeadsOf(repo, orgId, rows)

  /**
   * A spam decision by hand (issue 27): marks or clears, and teaches the App's score (src/abuse/spam-learn.ts):
   * "not spam" weighs the reasons that fired less, "spam" weighs the report's content reasons more.
   */
  async function setSpam(orgId: string, id: string, spam: boolean): Promise<{ id: string; status: FeedbackStatus; spam: FeedbackItem['spam'] }> {
    let change: SpamChange
    let taught: string[] = []
    const row = await repo.get(orgId, id)
    if (!row) throw new ApiError('not_found')
    if (spam) {
      const content = contentReasons(row.text)
      taught = [...(content.phrases > 0 ? ['spam_phrases'] : []), ...(content.linkDensity ? ['link_density'] : [])]
      change = { spam: true, score: 1, reasons: JSON.stringify(['marked_by_hand', ...taught]) }
    } else {
      // feedback.received was recorded at intake when the App asked for spam events then; else now.
      const app = await apps.getForOrg(orgId, row.appId)
      change = { spam: false, emitEvent: !(app?.spamEvents ?? false) }
    }
    const now = clock.now()
    const outcome = await repo.setSpam(orgId, id, change, now)
    if (outcome.kind === 'not_found') throw new ApiError('not_found')
    if (outcome.kind === 'duplicate') throw new ApiError('invalid_target', { leadFeedbackId: outcome.leadId })
    if (outcome.kind === 'not_allowed') throw new ApiError('invalid_transition', { from: outcome.status, spam: true, reason: 'only an undecided lead with no duplicates can be marked spam' })
    if (outcome.kind === 'changed') {
      if (!spam) taught = outcome.reasons ? (JSON.parse(outcome.reasons) as string[]) : []
      const learned = await abuse.learning(outcome.appId)
      // A "not spam" is kept an hour with the lesson: a cluster's other nodes drop what it resembles too (spam-cleared.ts).
      const cleared = clearedAfter(learned?.cleared, now, spam ? undefined : id)
      await abuse.saveLearning(outcome.appId, JSON.stringify(learnFrom(parseFactors(learned?.factors), taught, spam ? 'spam' : 'not_spam')), spam ? 'spam' : 'not_spam', now, cleared)
      spamHooks?.forget(outcome.appId)
      // like_spam (this node at once, a cluster's others once told): only a text a person marked spam makes
      // its rewordings suspect (never one the intake classified: a bot could teach that); "not spam" clears it.
      if (spam) spamHooks?.confirmedSpam(outcome.appId, row.text)
      else spamHooks?.notSpam(outcome.appId, row.text)
    }
    if (outcome.kind === 'unchanged') return { id, status: outcome.status as FeedbackStatus, spam: toListItem(row).spam }
    return { id, status: outcome.status as FeedbackStatus, spam: spam ? { score: 1, reasons: JSON.parse((change as { reasons: string }).reasons), markedAt: isoUtc(now) } : null }
  }

  return {
    /**
     * Stores a report, its `feedback.received` event and its first job in one transaction; resolves only after COMMIT, so an
     * acknowledged report survives kill -9.
     */
    async submit(s: Submission): Promise<SubmitResult> {
      const json = checkAndEncode(s.body)
      const refs = uploadRefs(s.body)
      if (refs.length > 0) await uploads.seal(await uploads.checkReferences(s.app.row.id, refs))
      const { app, user, body } = s
      const identity = user
        ? { mode: 'private' as const, externalUserId: user.sub, email: str(user.ctx?.email), name: str(user.ctx?.name) }
        : { mode: 'public' as const, externalUserId: str(body.identity?.externalUserId), email: str(body.identity?.email), name: str(body.identity?.name) }
      const notifyEmailSealed = body.notifyEmail === true ? ctx.box.seal(Buffer.from(notifyAddress(user !== undefined, identity.email))) : null
      const idempotency = s.idempotencyKey ? { key: scopedIdempotencyKey(s, s.idempotencyKey), ...requestHashes(body) } : null
      const free: StoredReport = {
        text: body.text,
        url: body.url ?? null,
        userAgent: body.userAgent ?? s.requestUserAgent?.slice(0, LIMITS.userAgentMax) ?? null,
        consoleLogs: json.consoleLogs,
        metadata: json.metadata,
        componentTarget: json.componentTarget,
      }
      const scrubbed = s.spam ? scrubSpam(free, { email: identity.email, name: identity.name, externalUserId: identity.externalUserId }) : null
      const outcome = await repo
        .submit(
          {
            orgId: app.row.orgId,
            appId: app.row.id,
            severity: body.severity ?? null,
            ...json,
            ...(scrubbed ? scrubbed.columns : free),
            submittedMode: identity.mode,
            externalUserId: identity.externalUserId,
            email: identity.email,
            submitterName: identity.name,
            userContext: jsonOrNull(user?.ctx),
            notifyEmailSealed,
            spam: s.spam && scrubbed ? { score: s.spam.score, reasons: JSON.stringify(s.spam.reasons), emitEvent: app.row.spamEvents, redactions: scrubbed.redactions } : null,
          },
          refs.map((r) => r.key),
          idempotency,
        )
        .catch((e: unknown) => {
          // Checked above, then removed before the transaction ran (an erasure, a retention, the collection).
          if (!(e instanceof UploadGoneError)) throw e
          const path = refs.find((r) => e.keys.includes(r.key))?.path ?? '/attachments'
          throw new ApiError('invalid_body', { issues: [{ path, message: 'this upload was removed while the report was being filed: upload the file again' }] })
        })
      if (outcome.kind === 'key_reused') throw new ApiError('idempotency_key_reused', { idempotencyKey: s.idempotencyKey })
      if (!outcome.result.replayed && body.attachments?.some((a) => a.kind === 'replay')) await uploads.replayReferenced()
      return outcome.result
    },

    /** A page of the Org's reports; an `appId` never in the Org is 404 app_not_found (a deleted App's reports stay listable). */
    async list(orgId: string, q: { appId?: string; status?: string; cursor?: string; limit?: number; includeDuplicates?: boolean; spam?: SpamFilter }) {
      if (q.appId && !(await apps.everInOrg(orgId, q.appId))) throw new ApiError('app_not_found')
      const limit = q.limit ?? LIMITS.listLimitDefault
      const rows = await repo.list({ orgId, appId: q.appId, status: q.status, cursor: q.cursor, includeDuplicates: q.includeDuplicates ?? false, spam: q.spam ?? 'exclude', limit })
      const more = rows.length > limit
      const page = more ? rows.slice(0, limit) : rows
      const budget = previewBudget()
      const leads = await suggestedLeads(orgId, page)
      const data: FeedbackItem[] = await withTrackerIssues(page.map((row) => toListItem(row, budget, leads.get(row.id) ?? null)))
      return { data, nextCursor: more ? page[page.length - 1].id : null }
    },

    /** The full item; attachments and the component screenshot get short-lived download URLs. */
    async get(orgId: string, id: string, base: string): Promise<FullFeedbackItem> {
      const row = await repo.get(orgId, id)
      if (!row) throw new ApiError('not_found')
      const dups = row.duplicateCount > 0 ? await repo.duplicatesOf(orgId, id, LIMITS.duplicatesInItemMax) : []
      const [item] = await withTrackerIssues([toFullItem(row, dups, await statusReasonOf(row), (await suggestedLeads(orgId, [row])).get(row.id) ?? null)])
      for (const a of item.attachments) {
        if (a.kind === 'replay') Object.assign(a, await uploads.replayView(a.key, base))
        else a.url = await uploads.downloadUrl(a.key, base)
      }
      if (item.componentTarget?.screenshotKey) item.componentTarget.screenshotUrl = await uploads.downloadUrl(item.componentTarget.screenshotKey, base)
      return item
    },

    /** The App's spam folder size and what its decisions taught (GET /v1/apps/:id/triage; the App's Org is checked by the caller). */
    async spamState(appId: string) {
      const learned = await abuse.learning(appId)
      return { inFolder: await repo.spamCount(appId), notSpam: learned?.notSpam ?? 0, markedSpam: learned?.markedSpam ?? 0, factors: parseFactors(learned?.factors) as Record<string, number> }
    },

    setSpam,

    /** A customer move (spec part 3) applied with compare-and-set on the row's version. */
    async patch(orgId: string, id: string, body: PatchBody): Promise<{ id: string; status: FeedbackStatus; spam?: FeedbackItem['spam'] }> {
      if (body.spam !== undefined && body.status !== undefined) throw invalid('/spam', 'spam and status cannot be changed in one request')
      if (body.spam !== undefined) return setSpam(orgId, id, body.spam)
      if (body.status === undefined) throw new ApiError('no_op')
      const to: CustomerTarget = body.status
      const outcome = await repo.customerMove(orgId, id, to)
      if (outcome.kind === 'not_found') throw new ApiError('not_found')
      if (outcome.kind === 'duplicate') throw new ApiError('invalid_target', { leadFeedbackId: outcome.leadId })
      if (outcome.kind === 'lost') throw new ApiError('concurrent_update', { id })
      return { id, status: to }
    },

    /** "Mark as fixed" by `by` (resolveByHand, below). */
    resolve: (orgId: string, id: string, by: ActedBy): Promise<void> => resolveByHand(repo, orgId, id, by),
  }
}
export type FeedbackService = ReturnType<typeof createFeedbackService>

/**
 * "Mark as fixed" (an addition to the spec: POST /v1/feedback/:id/resolve, `fixloop feedback resolve`, the
 * dashboard): a person says the lead was fixed outside fixloop's agent. It ends like a merged pull request
 * (resolved, its duplicates following, `feedback.resolved` for each, the reporters who asked mailed) and is
 * audited as `feedback.marked_fixed` in the same transaction. A duplicate is 409 invalid_target naming its
 * lead (mark the lead fixed); a status the FSM does not allow, 409 invalid_transition.
 */
export async function resolveByHand(repo: Pick<FeedbackRepo, 'resolveByHand'>, orgId: string, id: string, by: ActedBy): Promise<void> {
  const outcome = await repo.resolveByHand(orgId, id, (c) => ({
    orgId,
    actor: by.actor,
    ip: by.ip,
    action: 'feedback.marked_fixed',
    targetId: id,
    data: { appId: c.appId, from: c.from, duplicatesResolved: c.followed.length },
  }))
  if (outcome.kind === 'not_found') throw new ApiError('not_found')
  if (outcome.kind === 'duplicate') throw new ApiError('invalid_target', { leadFeedbackId: outcome.leadId })
  if (outcome.kind === 'lost') throw new ApiError('concurrent_update', { id })
}
