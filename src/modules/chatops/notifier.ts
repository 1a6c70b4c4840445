/**
 * Posts an Org's events to its Slack channels. One parent message per lead report (a cluster's lead),
 * created when the lead reaches triage (awaiting_manual or queued) or an agent run starts, and edited in
 * place (chat.update) as its status moves; duplicates joining, agent runs and the PR link go into its
 * thread. Messages carry ids, states, counts and URLs, never report text: Slack is a third party.
 * Each connection has a cursor over the outbox, advanced only after Slack accepted the event's calls,
 * so a crash or a Slack outage delays messages, never loses them.
 *
 * Exactly once across nodes: a notifier drains a connection only while it holds the connection's drain
 * claim (slack_connections.drain_owner/drain_until, compare-and-set), renewed for DRAIN_CLAIM_MS right
 * before every Slack call. At a dispatch handover the new holder's drain finds the old holder's claim
 * live while that one's call is in flight, and waits (the next wake or the 5 s timer) until the old
 * holder has recorded the result and advanced the cursor, or its claim ran out (it died). Only a crash
 * between Slack's answer and the cursor's advance can still repeat a message: Slack has no idempotency key.
 */
import { randomUUID } from 'node:crypto'
import type { Store } from '../../db/store'
import type { SecretBox } from '../../core/crypto'
import type { Clock } from '../../core/clock'
import type { Logger } from '../../core/logger'
import type { EventHub } from '../events/hub'
import { type ChatopsRepo, type SlackConnectionRow } from './repo'
import { CHANNEL_INTERVAL_MS, SlackApi, SlackError } from './slack-api'
import { failureLog, type FailureLog } from '../../db/outage-log'
import { clip } from '../../core/clip'

interface Ev {
  seq: number
  type: string
  app_id: string | null
  data: string
}

/** How long a drain claim lasts from its last renewal: longer than one Slack call (10 s timeout) and the writes after it. */
export const DRAIN_CLAIM_MS = 30_000

/** This notifier no longer holds the connection's drain claim (or the dispatch role): nothing is sent. */
class LostClaim extends Error {}

const PARENT_STATUSES = new Set(['awaiting_manual', 'queued', 'agent_running', 'pr_opened', 'failed'])

/** What this service is given: the repositories and values it uses (a Context has them all). */
export interface SlackNotifierDeps {
  store: Pick<Store, 'chatops'>
  box: SecretBox
  clock: Clock
}


/**
 * Text for Slack that Slack shows as written: `&`, `<` and `>` escaped, as its formatting guide asks. A
 * run's failure reason quotes the agent's last output lines and a guardrail reason its file paths (the
 * agent's, steered by a report): raw, `<!channel>` pinged the whole channel and `<https://…|label>` showed a
 * link under a label of the agent's choosing.
 */
export function slackEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}
export class SlackNotifier {
  private readonly repo: ChatopsRepo
  private readonly busy = new Set<string>()
  private timer: ReturnType<typeof setInterval> | undefined
  private unsubscribe: (() => void) | undefined
  private readonly running = new Set<Promise<void>>()
  /** This notifier as a drain claim's owner (one per process and start). */
  private readonly owner = randomUUID()
  /** A pass failing because the database is away is logged once per 30 s, not every pass (db/outage-log.ts). */
  private readonly failed: FailureLog

  constructor(
    private readonly ctx: SlackNotifierDeps,
    private readonly api: SlackApi,
    private readonly log: Logger,
    private readonly publicUrl?: string,
    /**
     * Cluster mode: true while this node holds the `dispatch` role. Checked before every message: a
     * drain paced at Slack's one write a second can outlast the role, and a node that lost it must not
     * post what the new holder posts too.
     */
    private readonly mayAct: () => boolean = () => true,
  ) {
    this.repo = ctx.store.chatops
    this.failed = failureLog(log)
  }

  start(hub: EventHub): void {
    this.stopped = false
    this.unsubscribe = hub.subscribeAll((orgId) => void this.runOrg(orgId))
    // Retries what Slack refused for a while (rate limit, outage) and catches up after a restart.
    this.timer = setInterval(() => void this.runAll(), 5000)
    void this.runAll()
  }

  /**
   * Waits for the event in hand only: a drain paced at one write a second could take minutes to catch up,
   * and a shutdown (or the dispatch role moving on) would wait for all of it. The cursor stays after the
   * last event sent; the next drain (here after a start, or on the new holder) goes on from there.
   */
  async stop(): Promise<void> {
    this.stopped = true
    clearInterval(this.timer)
    this.unsubscribe?.()
    await Promise.allSettled([...this.running])
  }

  /** Set by stop(): drains end after the event in hand, and none starts. */
  private stopped = false

  /**
   * Starts draining every connection that is behind; resolves once they are started (a read failure is
   * logged, retried by the timer). One read finds them: each connection read, claimed and released on
   * every pass made an idle pass cost every connection of every Org, two writes each.
   */
  async runAll(): Promise<void> {
    try {
      this.drainEach(await this.repo.behind())
    } catch (e) {
      this.failed('warn', 'slack notifier failed', e)
    }
  }

  /** Resolves when every connection has caught up (tests). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running])
  }

  private async runOrg(orgId: string): Promise<void> {
    let behind: SlackConnectionRow[]
    try {
      behind = await this.repo.behindInOrg(orgId)
    } catch (e) {
      return this.failed('warn', 'slack notifier failed', e, { orgId })
    }
    this.drainEach(behind)
  }

  /** Starts a drain of each connection not being drained by this notifier already. */
  private drainEach(connections: SlackConnectionRow[]): void {
    for (const c of connections) {
      if (this.busy.has(c.id)) continue
      this.busy.add(c.id)
      const p = this.drain(c.id)
        .catch((e) => this.failed('warn', 'slack notifier failed', e, { connectionId: c.id }))
        .finally(() => {
          this.busy.delete(c.id)
          this.running.delete(p)
        })
      this.running.add(p)
    }
  }

  /** Claims or renews the connection's drain claim for this notifier. */
  private claim(connectionId: string): Promise<boolean> {
    const now = this.ctx.clock.now()
    return this.repo.claimDrain(connectionId, this.owner, now, now + DRAIN_CLAIM_MS)
  }

  private async drain(connectionId: string): Promise<void> {
    // Another notifier (node) is posting this connection's events: it goes on, this one comes back later.
    if (this.stopped || !this.mayAct() || !(await this.claim(connectionId))) return
    const calls = { made: false }
    try {
      await this.drainClaimed(connectionId, calls)
    } finally {
      // Each node paces its own writes; the claim carries the pace across a handover: another node may
      // write to the channel only a pacing interval after this drain's last call (this node at once).
      const now = this.ctx.clock.now()
      await this.repo.releaseDrain(connectionId, this.owner, calls.made ? now + CHANNEL_INTERVAL_MS : now)
    }
  }

  private async drainClaimed(connectionId: string, calls: { made: boolean }): Promise<void> {
    // Right before each Slack call (after the wait for the channel's turn): still ours, or nothing is sent.
    const guard = async () => {
      if (!this.mayAct() || !(await this.claim(connectionId))) throw new LostClaim('the drain claim moved to another node')
      calls.made = true
    }
    for (;;) {
      const c = await this.repo.getAny(connectionId)
      if (!c) return
      const rows = await this.repo.eventsAfter(c.org_id, c.cursor_seq, 50)
      if (rows.length === 0) return
      // Catching up (after an outage, a restart, a burst): a parent about to be edited again later in this
      // page skips the intermediate edits, which only spend the channel's one write per second.
      const lastMove = new Map<string, number>()
      for (const e of rows) if (e.type === 'feedback.status_changed') lastMove.set(String(JSON.parse(e.data).feedbackId), e.seq)
      for (const e of rows) {
        // Stopped, or the role moved on: the cursor stays for the next drain (the node that has the role now).
        if (this.stopped || !this.mayAct()) return
        const fresh = await this.repo.getAny(connectionId)
        if (!fresh) return
        try {
          await this.handle(fresh, e, lastMove, guard)
          await this.repo.advance(connectionId, e.seq, null)
        } catch (err) {
          if (err instanceof LostClaim) return // the cursor stays for the notifier that holds the claim now
          if (err instanceof SlackError && err.transient) {
            await this.repo.setError(connectionId, err.code)
            return // the cursor stays: retried on the next wake or timer
          }
          // A permanent refusal (channel_not_found, invalid_auth, …): recorded, and this event is skipped
          // so one bad message cannot block the channel forever.
          await this.repo.advance(connectionId, e.seq, err instanceof SlackError ? err.code : String(err))
          this.log.warn('slack refused a message', { connectionId, seq: e.seq, error: err instanceof Error ? err.message : String(err) })
        }
      }
    }
  }

  private feedbackLink(id: string): string {
    return this.publicUrl ? `${this.publicUrl}/v1/feedback/${id}` : id
  }

  private parentText(leadId: string, status: string, duplicates: number): string {
    const dup = duplicates > 0 ? ` · ${duplicates} duplicate${duplicates === 1 ? '' : 's'}` : ''
    return `:memo: fixloop report ${leadId} — *${status}*${dup}\n${this.feedbackLink(leadId)}`
  }

  private async handle(c: SlackConnectionRow, e: Ev, lastMove: Map<string, number>, guard: () => Promise<void>): Promise<void> {
    const types = JSON.parse(c.event_types) as string[]
    if (!types.includes(e.type)) return
    if (c.app_id !== null && e.app_id !== c.app_id) return
    const d = JSON.parse(e.data) as Record<string, unknown>
    const token = this.ctx.box.open(c.bot_token_sealed).toString()
    const feedbackId = String(d.feedbackId ?? '')
    const now = this.ctx.clock.now()

    const ensureParent = async (leadId: string, status: string) => {
      const existing = await this.repo.thread(c.id, leadId)
      if (existing) return existing
      const dupCount = await this.repo.duplicateCount(leadId)
      const posted = await this.api.post(token, c.channel, this.parentText(leadId, status, dupCount), undefined, guard)
      const row = { connection_id: c.id, lead_feedback_id: leadId, channel: posted.channel, ts: posted.ts, status, duplicate_count: dupCount, updated_at: now }
      await this.repo.saveThread(row)
      return row
    }

    switch (e.type) {
      case 'feedback.status_changed': {
        const to = String(d.to)
        const thread = await this.repo.thread(c.id, feedbackId)
        if (!thread) {
          if (PARENT_STATUSES.has(to)) await ensureParent(feedbackId, to)
          return
        }
        if ((lastMove.get(feedbackId) ?? e.seq) > e.seq) return
        await this.api.update(token, thread.channel, thread.ts, this.parentText(feedbackId, to, thread.duplicate_count), guard)
        await this.repo.saveThread({ ...thread, status: to, updated_at: now })
        return
      }
      case 'feedback.duplicate_attached':
      case 'feedback.unmerged': {
        const leadId = String(d.leadFeedbackId)
        // A report that had its own parent (a lead merged into another by hand) points at its new lead.
        const own = e.type === 'feedback.duplicate_attached' ? await this.repo.thread(c.id, feedbackId) : null
        if (own) {
          await this.api.update(token, own.channel, own.ts, `:link: fixloop report ${feedbackId} — merged into ${leadId}\n${this.feedbackLink(leadId)}`, guard)
          await this.repo.saveThread({ ...own, status: 'merged', updated_at: now })
        }
        const thread = await this.repo.thread(c.id, leadId)
        if (!thread) return
        const count = Number(d.duplicateCount)
        await this.api.update(token, thread.channel, thread.ts, this.parentText(leadId, thread.status, count), guard)
        const verb = e.type === 'feedback.unmerged' ? 'was split off from' : 'joined'
        await this.api.post(token, thread.channel, `Report ${feedbackId} ${verb} this cluster (${count} duplicate${count === 1 ? '' : 's'} now).`, thread.ts, guard)
        await this.repo.saveThread({ ...thread, duplicate_count: count, updated_at: now })
        return
      }
      case 'agent_run.started':
      case 'agent_run.succeeded':
      case 'agent_run.failed':
      case 'agent_run.guardrailed': {
        const thread = await ensureParent(feedbackId, e.type === 'agent_run.started' ? 'agent_running' : 'queued')
        const text =
          e.type === 'agent_run.started'
            ? `Agent run ${d.runId} started (${d.provider}).`
            : e.type === 'agent_run.succeeded'
              ? `:white_check_mark: Agent run ${d.runId} succeeded on branch \`${d.branch}\`${d.prUrl ? `: ${d.prUrl}` : ''}`
              : e.type === 'agent_run.failed'
                ? `:x: Agent run ${d.runId} failed: ${slackEscape(clip(String(d.error), 300))}`
                : `:warning: Agent run ${d.runId} was stopped by a guardrail: ${slackEscape(clip(String(d.guardrailReason), 300))}`
        await this.api.post(token, thread.channel, text, thread.ts, guard)
        return
      }
      default:
        return
    }
  }
}
