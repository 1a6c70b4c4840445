/**
 * Linear through its GraphQL API (https://linear.app/developers/graphql), at `${apiUrl}/graphql`.
 * docs/trackers.md says what is pushed and how to configure the webhook.
 *
 *   auth        Authorization: <personal API key> (lin_api_…, sent as is); an OAuth access token is sent as
 *               "Bearer <token>" (lin_oauth_…, or a token given with "Bearer " in front)   ("Authentication")
 *   whoAmI      query { viewer { id name } }
 *   createIssue issueCreate(input: { teamId, title, description, labelIds }) { success issue { id identifier url state { name type } } }
 *               label ids are looked up by name with issueLabels (workspace labels and the team's own); a
 *               name with no label is skipped (fixloop does not create labels in a Linear workspace)
 *   updateIssue issueUpdate(id, input: { title, description }) { success }
 *   addComment  commentCreate(input: { issueId, body }) { success }
 *   readIssue   issue(id) { id identifier url state { name type } }
 *   errors      HTTP 200 or 400 with `errors[].extensions.code`: AUTHENTICATION_ERROR / FORBIDDEN →
 *               unauthorized; RATELIMITED → rate_limited, waiting until X-RateLimit-Requests-Reset (epoch ms);
 *               "Entity not found" (INVALID_INPUT) → not_found                           ("Rate limiting", "Errors")
 *   webhooks    Linear-Signature: <hex HMAC-SHA256 of the raw body>; Linear-Delivery: the delivery's id; body
 *               { action: create|update|remove, type: 'Issue', data: { id, identifier, state { name type } },
 *               updatedFrom { stateId? }, actor { id }, webhookTimestamp (epoch ms) }             ("Webhooks")
 *               A delivery whose webhookTimestamp is more than a minute from now is refused as a replay
 *               (Linear's own advice): verifyWebhook checks it, with the clock the adapter is built with,
 *               because parseWebhook is pure by the seam's contract and the seam gives neither a clock.
 */
import { systemClock, type Clock } from '../core/clock'
import { remoteHttpUrl } from '../core/outbound'
import { TrackerError, type IssueDraft, type TrackedIssue, type TrackerAdapter, type TrackerIdentity, type TrackerNews, type TrackerState, type TrackerTarget } from './adapter'
import { constantTimeEqual, deliveryIdOf, detail, hmacHex, obj, send, str, type Obj } from './saas-http'
import { clip } from '../core/clip'

/** How far a delivery's webhookTimestamp may be from our clock (Linear: "within a minute"). */
export const REPLAY_WINDOW_MS = 60_000
/** Linear's issue title and description limits are generous; fixloop stays well under them. */
const TITLE_MAX = 255
const DESCRIPTION_MAX = 100_000
const LABELS_MAX = 20

/**
 * Linear's workflow state type, normalized: completed → done, canceled (and duplicate, Linear's auto-close
 * of a duplicate) → canceled, triage | backlog | unstarted | started → open.
 */
export function linearState(name: string, type: string | null): TrackerState {
  if (type === 'completed') return { name, category: 'done' }
  if (type === 'canceled' || type === 'duplicate') return { name, category: 'canceled' }
  return { name, category: 'open' }
}

function authorization(token: string): string {
  if (/^bearer\s/i.test(token)) return token
  return token.startsWith('lin_oauth_') ? `Bearer ${token}` : token
}

const endpoint = (t: TrackerTarget) => `${t.apiUrl.replace(/\/+$/, '')}/graphql`

/** Reset header (epoch ms) → a wait in ms, bounded to [1 s, 1 h]. */
function resetWait(value: string | null, now: number): number {
  const at = value && /^\d{1,16}$/.test(value.trim()) ? Number(value.trim()) : NaN
  return Number.isFinite(at) ? Math.min(Math.max(at - now, 1000), 3600_000) : 60_000
}

/** Runs one GraphQL operation; returns `data`, or throws the mapped TrackerError. */
async function graphql(clock: Clock, t: TrackerTarget, doing: string, query: string, variables: Obj, signal?: AbortSignal): Promise<Obj> {
  const secrets = [t.token]
  // GraphQL errors come with 200 or 400 (and 401/403 from the edge): read those bodies ourselves.
  const a = await send(
    { vendor: 'Linear', doing, url: endpoint(t), method: 'POST', headers: { authorization: authorization(t.token) }, body: { query, variables }, secrets, signal, addresses: t.addresses, timeoutMs: t.timeoutMs, budget: t.budget },
    (s) => (s >= 200 && s < 300) || s === 400 || s === 401 || s === 403,
  )
  const body = obj(a.json)
  const errors = Array.isArray(body?.errors) ? body.errors.slice(0, 10).map(obj) : []
  const first = errors.find(Boolean) ?? null
  if (first || a.status >= 300) {
    const ext = obj(first?.extensions)
    const code = String(ext?.code ?? '').toUpperCase()
    const type = String(ext?.type ?? '').toLowerCase()
    const message = str(first?.message, 2000) ?? a.text
    const msg = detail(`Linear API answered ${a.status} while ${doing}: ${message}`, secrets)
    if (code === 'RATELIMITED' || type === 'ratelimited') {
      throw new TrackerError('rate_limited', msg, a.status, resetWait(a.headers.get('x-ratelimit-requests-reset'), clock.now()))
    }
    if (code === 'AUTHENTICATION_ERROR' || code === 'FORBIDDEN' || type === 'authentication error' || type === 'forbidden' || a.status === 401 || a.status === 403) {
      throw new TrackerError('unauthorized', msg, a.status)
    }
    if (/entity not found|could not find/i.test(`${message} ${str(ext?.userPresentableMessage, 2000) ?? ''}`)) throw new TrackerError('not_found', msg, a.status)
    throw new TrackerError('rejected', msg, a.status)
  }
  const data = obj(body?.data)
  if (!data) throw new TrackerError('rejected', `Linear API answered ${a.status} without data while ${doing}`, a.status)
  return data
}

const oneLine = (s: string, max: number) => {
  const line = s.replace(/[\x00-\x1f\x7f]+/g, ' ').trim()
  return line.length > max ? `${clip(line, max - 1)}…` : line || 'fixloop report'
}
const description = (s: string) => (s.length > DESCRIPTION_MAX ? `${clip(s, DESCRIPTION_MAX)}\n\n…(cut: the full text is on the fixloop dashboard)` : s)

function trackedOf(issue: Obj | null, doing: string): TrackedIssue {
  const id = str(issue?.id)
  const identifier = str(issue?.identifier)
  const url = remoteHttpUrl(issue?.url)
  if (!id || !identifier || !url) throw new TrackerError('rejected', `Linear API answered without the issue while ${doing}`)
  const state = obj(issue?.state)
  return { id, key: identifier, url, state: linearState(str(state?.name) ?? '', str(state?.type)) }
}

const ISSUE_FIELDS = 'id identifier url state { name type }'
/** A Linear issue id: a UUID, or an identifier (ENG-7), which issue(id:) accepts too. */
const ISSUE_ID = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[A-Za-z0-9]{1,16}-\d{1,12})$/i

function checkedId(issueId: string): string {
  if (!ISSUE_ID.test(issueId)) throw new TrackerError('not_found', 'not a Linear issue id')
  return issueId
}

/** The ids of the labels named `names` usable in team `teamId` (workspace labels and the team's); missing names are skipped. */
async function labelIds(clock: Clock, t: TrackerTarget, names: string[], signal?: AbortSignal): Promise<string[]> {
  const wanted = [...new Set(names.map((n) => n.trim()).filter(Boolean))].slice(0, LABELS_MAX)
  if (!wanted.length) return []
  const data = await graphql(
    clock,
    t,
    'looking up labels',
    'query FixloopLabels($names: [String!]) { issueLabels(first: 100, filter: { name: { in: $names } }) { nodes { id name team { id } } } }',
    { names: wanted },
    signal,
  )
  const nodes = obj(data.issueLabels)?.nodes
  if (!Array.isArray(nodes)) return []
  const ids: string[] = []
  for (const n of nodes.slice(0, 100).map(obj)) {
    const team = str(obj(n?.team)?.id)
    const id = str(n?.id)
    if (id && (team === null || team === t.project) && !ids.includes(id)) ids.push(id)
  }
  return ids
}

export function createLinearAdapter(clock: Clock = systemClock): TrackerAdapter {
  return {
    kind: 'linear',

    async whoAmI(t, signal): Promise<TrackerIdentity> {
      const data = await graphql(clock, t, 'reading the token\u2019s user', 'query FixloopViewer { viewer { id name } }', {}, signal)
      const viewer = obj(data.viewer)
      const id = str(viewer?.id)
      if (!id) throw new TrackerError('rejected', 'Linear API answered without the viewer')
      return { actor: id, displayName: str(viewer?.name) ?? id }
    },

    async createIssue(t, draft: IssueDraft, signal): Promise<TrackedIssue> {
      const labels = await labelIds(clock, t, draft.labels, signal)
      const input: Obj = { teamId: t.project, title: oneLine(draft.title, TITLE_MAX), description: description(draft.body) }
      if (labels.length) input.labelIds = labels
      const data = await graphql(
        clock,
        t,
        'creating the issue',
        `mutation FixloopIssueCreate($input: IssueCreateInput!) { issueCreate(input: $input) { success issue { ${ISSUE_FIELDS} } } }`,
        { input },
        signal,
      )
      const payload = obj(data.issueCreate)
      if (payload?.success !== true) throw new TrackerError('rejected', 'Linear API did not create the issue (success: false)')
      return trackedOf(obj(payload.issue), 'creating the issue')
    },

    async updateIssue(t, issueId, draft, signal) {
      const data = await graphql(
        clock,
        t,
        `updating issue ${checkedId(issueId)}`,
        'mutation FixloopIssueUpdate($id: String!, $input: IssueUpdateInput!) { issueUpdate(id: $id, input: $input) { success } }',
        { id: issueId, input: { title: oneLine(draft.title, TITLE_MAX), description: description(draft.body) } },
        signal,
      )
      if (obj(data.issueUpdate)?.success !== true) throw new TrackerError('rejected', 'Linear API did not update the issue (success: false)')
    },

    async addComment(t, issueId, body, signal) {
      const data = await graphql(
        clock,
        t,
        `commenting on issue ${checkedId(issueId)}`,
        'mutation FixloopCommentCreate($input: CommentCreateInput!) { commentCreate(input: $input) { success } }',
        { input: { issueId, body: description(body) } },
        signal,
      )
      if (obj(data.commentCreate)?.success !== true) throw new TrackerError('rejected', 'Linear API did not add the comment (success: false)')
    },

    async readIssue(t, issueId, signal): Promise<TrackedIssue> {
      const doing = `reading issue ${checkedId(issueId)}`
      const data = await graphql(clock, t, doing, `query FixloopIssue($id: String!) { issue(id: $id) { ${ISSUE_FIELDS} } }`, { id: issueId }, signal)
      const issue = obj(data.issue)
      if (!issue) throw new TrackerError('not_found', `Linear has no issue ${issueId}`)
      return trackedOf(issue, doing)
    },

    verifyWebhook(headers, raw, secret) {
      const given = headers.get('linear-signature')
      if (given === null || !secret || !constantTimeEqual(given.trim().toLowerCase(), hmacHex(secret, raw))) return false
      // Signed: the body is Linear's own, so reading its timestamp is safe (and bounded by the receiver's body limit).
      let at: unknown
      try {
        at = obj(JSON.parse(Buffer.from(raw).toString('utf8')))?.webhookTimestamp
      } catch {
        return false
      }
      return typeof at === 'number' && Number.isFinite(at) && Math.abs(clock.now() - at) <= REPLAY_WINDOW_MS
    },

    parseWebhook(headers, body, raw): TrackerNews | null {
      try {
        return linearNews(headers, body, raw)
      } catch {
        return null
      }
    },
  }
}

function linearNews(headers: Headers, body: unknown, raw: Uint8Array): TrackerNews | null {
  const b = obj(body)
  if (b?.type !== 'Issue') return null
  const data = obj(b.data)
  const id = str(data?.id)
  if (!id || !ISSUE_ID.test(id)) return null
  const actor = str(obj(b.actor)?.id)
  const deliveryId = deliveryIdOf(headers.get('linear-delivery'), raw)
  const state = obj(data?.state)
  const current = str(state?.name) ? linearState(str(state?.name)!, str(state?.type)) : null
  // The team: data.teamId (Linear's issue payload), or data.team.id.
  const projects = [...new Set([str(data?.teamId), str(obj(data?.team)?.id)].filter((p): p is string => !!p))]
  if (b.action === 'remove') return { issueId: id, state: current ?? { name: '', category: 'open' }, actor, deliveryId, deleted: true, projects }
  if (b.action !== 'update' || !current) return null
  // An update matters when it moved the state (updatedFrom names the changed fields' old values).
  const from = obj(b.updatedFrom)
  if (from && !('stateId' in from)) return null
  return { issueId: id, state: current, actor, deliveryId, projects }
}

export const linearAdapter: TrackerAdapter = createLinearAdapter()
