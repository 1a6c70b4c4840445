/**
 * Following the pull/merge requests fixloop opened, from the git host's webhooks: each delivery is
 * authenticated with the App's webhook secret (its host's scheme, constant time), recorded by its
 * delivery id and its body's hash (a replay, under the same id or a new one, is acknowledged and ignored), and its news applied: merged, closed, reopened
 * (modules/git-hooks/repo.ts), or a review asking for changes queued for the review iteration. A delivery
 * about a pull request fixloop did not open changes nothing. docs/agents.md "Following the pull request".
 */
import type { Clock } from '../../core/clock'
import { ApiError } from '../../core/errors'
import { parseDeliveryJson } from '../../core/nul'
import { newId } from '../../core/ids'
import type { Lifecycle } from '../../lifecycle/lifecycle'
import type { ConnectionsService } from '../connections/service'
import { deliveryIdOf, readNews, verifyDelivery, type GitHookHost, type HostNews } from './deliveries'
import { deliveryKeys, type DeliveryKeys, type GitHooksRepo, type PrReport, type Received } from './repo'

/** A review asking for changes on a report's pull request (the text is hostile input, bounded). */
export interface ReviewRequest {
  report: PrReport
  text: string
  author: string | null
}

/**
 * What a delivery did, as the host is answered (the host only looks at the 2xx): `moved`, `unchanged`
 * (fixloop's PR, but its report is not where the news applies), `deferred` (a review iteration of the
 * report is running: the merge or close is held and applied when the run ends), `replayed`, `ignored` (not about a PR
 * fixloop opened for this App), `review_queued` (with its position and whether it waits),
 * `review_refused` (with the reason: a cap reached, …).
 */
export interface DeliveryResult {
  outcome: Received['outcome'] | 'ignored' | 'review_queued' | 'review_refused'
  reason?: string
  /** review_queued: how many reviews of this pull request wait (this one included; they run as one iteration). */
  position?: number
}

/** What the review iteration needs from the agent runner (src/agent/runner.ts). */
export interface ReviewQueue {
  /** Why a review of the report's request is refused (a cap reached, no run possible), or null: queue it. */
  reviewRefusal(feedbackId: string): Promise<string | null>
  /** Why a run of the App would wait now, or null: the reply's reason for a queued review. */
  busyReason(appId: string): Promise<string | null>
  /** The review as stored: sanitized and bounded like report text. */
  sanitize(review: { text: string; author: string | null }): { text: string; author: string | null }
}

const unauthenticated = () => new ApiError('invalid_authorization', undefined, 'The webhook signature (or GitLab token) is missing or does not match this App\'s webhook secret.')

export function createGitHooksService(deps: {
  repo: GitHooksRepo
  lifecycle: Lifecycle
  clock: Clock
  connections: Pick<ConnectionsService, 'load'>
  /**
   * Review iterations (src/agent/): a review is refused with the reason, or stored and queued (a `review`
   * job starts the iteration when the App's slot is free, after a restart too).
   */
  reviews?: ReviewQueue
}) {
  const repo = deps.repo

  /**
   * A review asking for changes on fixloop's pull request: refused with the reason (a cap reached, …),
   * or stored with the delivery and queued; the iteration starts as soon as the App's slot is free.
   */
  async function queueReview(appId: string, delivery: DeliveryKeys, r: ReviewRequest): Promise<DeliveryResult> {
    const reviews = deps.reviews
    const refused = reviews ? await reviews.reviewRefusal(r.report.id) : 'review iterations are not enabled on this server'
    if (refused) {
      const received = await repo.receive(appId, delivery, null)
      return received.outcome === 'replayed' ? { outcome: 'replayed' } : { outcome: 'review_refused', reason: refused }
    }
    const clean = reviews!.sanitize({ text: r.text, author: r.author })
    const queued = await repo.queueReview(appId, delivery, { id: newId(deps.clock), report: r.report, ...clean })
    if (queued.outcome !== 'review_queued') return queued
    const busy = await reviews!.busyReason(r.report.appId)
    return { outcome: 'review_queued', position: queued.position, reason: busy ? `waiting: ${busy}; the iteration starts when it ends` : 'starting now' }
  }

  return {
    repo,
    /**
     * One delivery for `appId`: 401 invalid_authorization unless the App has a git host and a webhook secret
     * and the delivery is signed with it (so an unknown App and a wrong signature look alike); 400
     * invalid_body when the signed body is not a JSON object.
     */
    async receive(appId: string, headers: Headers, raw: Uint8Array): Promise<DeliveryResult> {
      const conn = await deps.connections.load(appId)
      if (!conn || conn.hostKind === 'none' || !conn.webhookSecret) throw unauthenticated()
      const host = conn.hostKind as GitHookHost
      if (!verifyDelivery(host, headers, raw, conn.webhookSecret)) throw unauthenticated()
      let body: unknown
      try {
        // NUL stripped, not refused: the host would redeliver a refused delivery forever (core/nul.ts).
        body = parseDeliveryJson(raw)
      } catch {
        throw new ApiError('invalid_body', { issues: [{ path: '/', message: 'not JSON (or not UTF-8)' }] }, 'The delivery is not JSON: set the webhook\'s content type to application/json.')
      }
      // Its id and its body's hash: a signed body replayed under a new (unsigned) id is still a replay.
      const delivery = deliveryKeys(deliveryIdOf(host, headers, raw), raw)
      const news: HostNews | null = readNews(host, headers, body)
      const report = news ? await repo.reportOfPr(appId, news.prUrl) : undefined
      if (news?.kind === 'review' && report) return queueReview(appId, delivery, { report, text: news.text, author: news.author })
      const received = await repo.receive(appId, delivery, news?.kind === 'change' && report ? { report, change: news.change } : null)
      if (received.outcome === 'replayed') return { outcome: 'replayed' }
      // Not about a pull request fixloop opened for this App (or not news fixloop follows): nothing changes.
      if (!news || !report) return { outcome: 'ignored' }
      return { outcome: received.outcome }
    },
  }
}
export type GitHooksService = ReturnType<typeof createGitHooksService>
