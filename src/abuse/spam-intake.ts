/**
 * The spam classification at intake (issue 27): the signals known when a report arrives (the widget's
 * honeypot and form time, the address's rate, the same text from many addresses, a proof of work solved
 * at a raised difficulty, the text) weighed by src/abuse/spam-score.ts, in memory: no statement on the
 * submission's hot path (the App's learned factors are read only when a signal fired, and cached).
 *
 * A spec client on an App without proof of work (no clientSignals, `proofOfWork: off`) is never
 * classified at intake: fixloop cannot tell its ordinary traffic (one backend, one address, many reports)
 * from a flood, and the App's owner has not asked for the defence. Private mode is never classified.
 *
 * `like_spam` compares the text with the spam a person confirmed (marked spam by hand) in the last hour
 * (src/abuse/spam-ring.ts), and only when it can decide: a behavioural signal of the report itself fired
 * (content alone, a spam phrase or many links, never counts: "buy now" is an everyday word in a shop's
 * bug report), the report is not spam without it, and the App holds confirmed spam (an App nobody floods
 * pays one map lookup; a report that trips nothing pays nothing). Spam classified at intake never feeds
 * the ring: a bot could otherwise teach it, e.g. send look-alikes of a genuine complaint with the honeypot
 * filled and have the genuine ones follow them into the spam folder. "Not spam" by hand takes the text
 * out (`notSpam`).
 */
import type { Clock } from '../core/clock'
import type { AbuseRepo } from './abuse-repo'
import { POW_MAXNUMBER } from './difficulty'
import type { Meter } from './flood-meter'
import type { SolvedChallenge } from './pow'
import { levelOf, type PowApp } from './pow-service'
import { RepeatTracker } from './repeat-tracker'
import { SpamRing } from './spam-ring'
import { parseFactors, type SpamFactors } from './spam-learn'
import { CONTENT_REASONS, spamScore } from './spam-score'

export interface ClientSignals {
  honeypot?: string
  formMs?: number
}

export interface SpamMark {
  score: number
  reasons: string[]
}

const FACTORS_TTL_MS = 30_000

export function createSpamIntake(deps: { clock: Clock; repo: AbuseRepo; meter: Meter; repeats?: RepeatTracker; ring?: SpamRing }) {
  const { clock, repo, meter } = deps
  const repeats = deps.repeats ?? new RepeatTracker(clock)
  const ring = deps.ring ?? new SpamRing(clock)
  const cache = new Map<string, { at: number; factors: SpamFactors }>()

  async function factorsOf(appId: string): Promise<SpamFactors> {
    const hit = cache.get(appId)
    if (hit && clock.now() - hit.at < FACTORS_TTL_MS) return hit.factors
    const factors = parseFactors((await repo.learning(appId))?.factors)
    if (cache.size > 10_000) cache.clear()
    cache.set(appId, { at: clock.now(), factors })
    return factors
  }

  return {
    /** Forget an App's cached factors (after a decision by hand on this node). */
    forget: (appId: string) => void cache.delete(appId),
    factorsOf,

    /**
     * A person marked a report of the App spam: its rewordings are `like_spam` from now on, on this node at
     * once (a cluster's other nodes once they read the mark: `marksOf`).
     */
    confirmedSpam: (appId: string, text: string) => ring.add(appId, text),
    /** A report of the App was declared "not spam" by hand: its text no longer makes others `like_spam`. */
    notSpam: (appId: string, text: string) => void ring.remove(appId, text),
    /**
     * Cluster mode: the App's marks by hand as the database has them, made on any node, less what "not spam"
     * cleared (spam-share.ts); in slices, between which this thread serves. Resolves with the ms it worked.
     */
    marksOf: (appId: string, marks: readonly { at: number; text: string }[], cleared: readonly { at: number; text: string }[]): Promise<number> => ring.replaceInSlices(appId, marks, cleared),

    /** A public submission's classification, or null when it is not spam (or not classified). */
    /** `ownSites`: the host names of the App's own pages (its allowed origins, the report's page URL). */
    async classify(app: PowApp, ip: string, text: string, signals: ClientSignals | undefined, solved: SolvedChallenge | undefined, ownSites: ReadonlySet<string> = new Set()): Promise<SpamMark | null> {
      const level = levelOf(app)
      // Before any work: the intake path of a spec client on an App without the defence costs nothing more.
      if (!signals && level === 'off') return null
      const addressPerMinute = meter.hit(`sub:${app.id}|${ip}`)
      const repeatAddresses = repeats.note(app.id, ip, text)
      const linkFloodAddresses = repeats.noteLinks(app.id, ip, text, ownSites)
      const input = {
        honeypot: signals?.honeypot,
        formMs: signals?.formMs,
        addressPerMinute,
        repeatAddresses,
        powRaised: solved !== undefined && level !== 'off' && solved.maxnumber > POW_MAXNUMBER[level],
        // The widget sends clientSignals whenever the App asks for proof of work; a script rarely does.
        noWidgetSignals: level !== 'off' && !signals,
        linkFloodAddresses,
        text,
      }
      const plain = spamScore(input)
      if (plain.reasons.length === 0) return null
      const factors = await factorsOf(app.id)
      let verdict = spamScore(input, factors)
      // Spam already: like_spam would only lengthen the reasons. Content alone never lets it count (a
      // genuine report that shares a held pitch's words and says "buy now" is still genuine): it needs a
      // behavioural fact of this report. Else compared if the App holds confirmed spam.
      const behaved = plain.reasons.some((r) => !CONTENT_REASONS.has(r))
      const like = verdict.spam || !behaved ? null : ring.likeness(app.id, text)
      if (like) verdict = spamScore({ ...input, likeSpam: like.best }, factors)
      return verdict.spam ? { score: verdict.score, reasons: verdict.reasons } : null
    },
  }
}
export type SpamIntake = ReturnType<typeof createSpamIntake>
