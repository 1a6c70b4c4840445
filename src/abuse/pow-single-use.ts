/**
 * The single use of proof-of-work solutions (issue 27): a verified solution's signature is claimed until
 * its challenge expires, so a second request with it is a replay.
 *
 * One node (SQLite): the database (`pow_spent`). Cluster mode: Redis, `SET NX PX` (one round trip), with
 * the database as its fallback while Redis cannot answer. A claim made in the database during an outage is
 * not in Redis, so once Redis is back its SET NX would succeed once more. To close that gap, a node that
 * fell back remembers the latest expiry of the solutions it claimed there (`dbClaimsUntil`) and, as soon
 * as Redis answers, raises the cluster-wide marker `fixloop:pow:db-until` to it (an atomic max, expiring
 * by itself): on its next claim (in the same script) and from a one-second timer, so an idle node
 * publishes it too. Until the marker's time has passed, every claim that Redis grants is also claimed in
 * the database, and a refusal there is a replay; outside that window the database is not written.
 *
 * What remains (docs/security.md): a Redis restarted without persistence forgets the claims it held, so
 * such a solution can be replayed once within its 10 minutes; and a node killed during an outage, before
 * Redis came back, takes its `dbClaimsUntil` with it (another node that fell back publishes its own).
 * Signatures are never logged.
 */
import type { Clock } from '../core/clock'
import type { Logger } from '../core/logger'
import { echoes, RedisUnavailable, type RedisLink } from '../nodes/redis-link'
import type { AbuseRepo } from './abuse-repo'

const MARKER_KEY = 'fixloop:pow:db-until'
const PUBLISH_EVERY_MS = 1_000

// Raises KEYS[1] (the marker) to ARGV[1] (epoch ms; 0: leave it) with PX ARGV[2], never lowering it.
const RAISE_MARKER = `
local function raise(key, untilMs, ttl)
  if tonumber(untilMs) > tonumber(redis.call('GET', key) or 0) then
    redis.call('SET', key, untilMs, 'PX', ttl)
  end
end
`
// KEYS[1] the marker, KEYS[2] the solution's key. ARGV: the solution's PX, then this node's dbClaimsUntil
// and its PX (0 and 0 when it has none to publish). Answers {1 if the SET NX took the key, else 0; the
// marker; the solution's key}: the key echoed proves the answer is this claim's (claimInRedis checks it).
const CLAIM_SCRIPT = `${RAISE_MARKER}
local claimed = redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[1]) and 1 or 0
if ARGV[2] ~= '0' then raise(KEYS[1], ARGV[2], ARGV[3]) end
return {claimed, tonumber(redis.call('GET', KEYS[1]) or 0), KEYS[2]}
`
const CLAIM_SHA = new Bun.CryptoHasher('sha1').update(CLAIM_SCRIPT).digest('hex')
// KEYS[1] the marker; ARGV: dbClaimsUntil and its PX.
const PUBLISH_SCRIPT = `${RAISE_MARKER}
raise(KEYS[1], ARGV[1], ARGV[2])
return 1
`
const PUBLISH_SHA = new Bun.CryptoHasher('sha1').update(PUBLISH_SCRIPT).digest('hex')

/** A solution to claim: its signature and its challenge's expiry (epoch ms). */
export interface PowClaim {
  signature: string
  expiresAt: number
}

/** `claim(s)`: true the first time a signature is presented (anywhere in the cluster), false for a replay. */
export function createPowSingleUse(deps: { clock: Clock; repo: AbuseRepo; redis?: RedisLink; log?: Logger }) {
  const { clock, repo, redis } = deps
  /** The latest expiry of the solutions this node claimed in the database while Redis was down, not yet published (0: none). */
  let dbClaimsUntil = 0
  let timer: ReturnType<typeof setInterval> | undefined
  let warnedAt = -Infinity

  /** A Redis reply error, logged at most once a minute (per claim or per marker tick, it would flood the log). */
  function warnRefused(msg: string, e: unknown): void {
    const now = clock.now()
    if (now - warnedAt < 60_000) return
    warnedAt = now
    deps.log?.warn(msg, { error: e instanceof Error ? e.message : String(e) })
  }

  function pending(now: number): number {
    if (dbClaimsUntil > now) return dbClaimsUntil
    dbClaimsUntil = 0 // its window passed: every solution it covers has expired
    return 0
  }

  function published(until: number): void {
    if (dbClaimsUntil === until) dbClaimsUntil = 0 // unless a later fallback claim raised it meanwhile
    if (dbClaimsUntil === 0 && timer) {
      clearInterval(timer)
      timer = undefined
    }
  }

  async function publish(link: RedisLink): Promise<void> {
    const now = clock.now()
    const until = pending(now)
    if (until === 0) return published(0)
    try {
      await link.evalScript(PUBLISH_SCRIPT, PUBLISH_SHA, ['1', MARKER_KEY, String(until), String(until - now)])
      published(until)
    } catch (e) {
      // Still down (the link fails fast meanwhile): the next tick or claim tries again.
      if (!(e instanceof RedisUnavailable)) warnRefused('publishing the proof-of-work database-claims marker failed', e)
    }
  }

  function fellBack(link: RedisLink, expiresAt: number): void {
    dbClaimsUntil = Math.max(dbClaimsUntil, expiresAt)
    if (timer) return
    timer = setInterval(() => void publish(link), PUBLISH_EVERY_MS)
    timer.unref?.()
  }

  /** The Redis claim: whether Redis took the key, and whether the marker still asks for the database too. */
  async function claimInRedis(link: RedisLink, s: PowClaim, now: number): Promise<{ claimed: boolean; dbToo: boolean }> {
    const until = pending(now)
    const ttl = Math.max(1, s.expiresAt - now)
    const key = `fixloop:pow:${s.signature}`
    const answer = await link.evalScript(CLAIM_SCRIPT, CLAIM_SHA, ['2', MARKER_KEY, key, String(ttl), String(until), until > 0 ? String(until - now) : '0'])
    // An answer that is not this claim's (a client that lost step with its connection once handed a
    // claim a flood meter's counts, and a replay went through): the link reconnects, and the solution is
    // refused. Not the database instead: a solution spent in Redis alone is not there, so it would pass
    // again; and this claim's own command may have taken the key. The widget asks for a new challenge.
    if (!echoes(answer, 2, key)) {
      warnRefused('a Redis answer out of step with its proof-of-work claim; the solution is refused and the link reconnects', link.desynchronized('proof-of-work claim'))
      return { claimed: false, dbToo: false }
    }
    if (until > 0) published(until)
    return { claimed: Number(answer[0]) === 1, dbToo: Number(answer[1]) > now }
  }

  return {
    async claim(s: PowClaim): Promise<boolean> {
      if (redis) {
        const now = clock.now()
        let answer: { claimed: boolean; dbToo: boolean } | undefined
        try {
          answer = await claimInRedis(redis, s, now)
        } catch (e) {
          // A reply error from a Redis that works (a fixloop key another writer gave another type: WRONGTYPE)
          // answered every submission with proof of work 500. The claim goes to the database, as in an
          // outage, and the marker asks the other nodes to check it there too.
          if (!(e instanceof RedisUnavailable)) warnRefused('Redis refused the proof-of-work claim; claiming in the database', e)
        }
        if (answer) return answer.claimed && (!answer.dbToo || (await repo.claimPow(s.signature, s.expiresAt)))
        fellBack(redis, s.expiresAt)
      }
      return repo.claimPow(s.signature, s.expiresAt)
    },
  }
}
