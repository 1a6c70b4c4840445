/**
 * FIXLOOP_REDIS_URL at start (cluster mode): proves Valkey/Redis answers, is new enough (7.0+, for the
 * functions and commands cluster mode uses), and lets this URL's user run what the nodes run (Lua scripts
 * by EVAL and EVALSHA with the commands inside them, PUBLISH and SUBSCRIBE on the wake-up channel), with an
 * error an operator can act on (exit 2). Without the last check an ACL user without `+@scripting` (or a
 * Redis with EVALSHA renamed away) answered PING, so the node started ready, and then every submission with
 * proof of work answered 500 and every rate-limited request wrote an error line. Bun's own Redis client:
 * nothing to install. The URL's password is never printed.
 */
import { RedisClient } from 'bun'
import { randomBytes } from 'node:crypto'
import { StartupError } from '../core/startup-error'

/** The pub/sub channel of cross-node wake-ups (src/nodes/wake-bus.ts), checked here at start. */
export const WAKE_CHANNEL = 'fixloop:wake'

// Every command the nodes' scripts call (shared-rate-limit.ts, shared-failure-throttle.ts, pow-single-use.ts),
// on a key of their namespace that expires by itself even if the DEL is never reached.
const PROBE_SCRIPT = `
local k = KEYS[1]
redis.call('TIME')
redis.call('SET', k, '1', 'NX', 'PX', 10000)
redis.call('GET', k)
redis.call('DEL', k)
redis.call('HSET', k, 'a', '1')
redis.call('HMGET', k, 'a')
redis.call('PEXPIRE', k, 10000)
redis.call('DEL', k)
redis.call('ZADD', k, 1, 'a')
redis.call('ZREMRANGEBYSCORE', k, '-inf', 0)
redis.call('ZCARD', k)
redis.call('ZREM', k, 'a')
redis.call('PEXPIRE', k, 10000)
redis.call('DEL', k)
return 1
`
const PROBE_SHA = new Bun.CryptoHasher('sha1').update(PROBE_SCRIPT).digest('hex')
const NEEDS = `PING, INFO, EVAL, EVALSHA, PUBLISH and SUBSCRIBE, and within scripts TIME, GET, SET, DEL, HSET, HMGET, PEXPIRE, ZADD, ZREM, ZCARD and ZREMRANGEBYSCORE, on keys ~fixloop:* and the channel &${WAKE_CHANNEL}`

/** host:port of a redis:// URL, without credentials. */
export function describeRedis(url: string): string {
  const u = new URL(url)
  return `${u.hostname}:${u.port || '6379'}`
}

/** Connects, PINGs and reads the server version; a StartupError saying what is wrong otherwise. */
export async function checkRedis(url: string, timeoutMs = 3000): Promise<{ version: string }> {
  const where = describeRedis(url)
  const client = new RedisClient(url, { connectionTimeout: timeoutMs, autoReconnect: false, maxRetries: 0 })
  try {
    const pong = await Promise.race([
      client.send('PING', []),
      Bun.sleep(timeoutMs).then(() => {
        throw Object.assign(new Error('no answer'), { code: 'ETIMEDOUT' })
      }),
    ])
    if (pong !== 'PONG') throw new StartupError(`Redis at ${where} answered PING with ${JSON.stringify(pong)}`)
    const info = String(await client.send('INFO', ['server']))
    const version = info.match(/(?:valkey|redis)_version:(\S+)/)?.[1] ?? '0'
    if (Number(version.split('.')[0]) < 7) throw new StartupError(`Redis at ${where} is version ${version}; fixloop needs Valkey or Redis 7.0 or newer`)
    await probeCommands(client, url, where, timeoutMs)
    return { version }
  } catch (e) {
    if (e instanceof StartupError) throw e
    const err = e as { code?: string; message?: string }
    if (/NOAUTH|WRONGPASS|invalid password|AUTH/i.test(err.message ?? '')) {
      throw new StartupError(`Redis at ${where} refused the credentials (check the password in FIXLOOP_REDIS_URL)`)
    }
    // A database number past the server's `databases` (16 by default): SELECT refused.
    const db = /^\/(\d+)$/.exec(new URL(url).pathname)?.[1]
    if (db !== undefined && /DB index is out of range/i.test(err.message ?? '')) {
      throw new StartupError(`Redis at ${where} has no database ${db} (FIXLOOP_REDIS_URL's path): its "databases" setting (16 by default) is lower`)
    }
    throw new StartupError(`cannot reach Redis at ${where} (FIXLOOP_REDIS_URL): ${err.code === 'ETIMEDOUT' ? 'no answer' : (err.message ?? String(e))}; is it running and listening there?`)
  } finally {
    client.close()
  }
}

/**
 * Runs what the nodes run, as this URL's user. A refusal of the user (NOPERM, a command renamed away) is a
 * StartupError naming what is needed; a refusal for now (OOM at maxmemory, a replica, loading) is not: the
 * node starts and takes its fallbacks until Redis takes the work (redis-link.ts), as it would later on.
 */
async function probeCommands(client: RedisClient, url: string, where: string, timeoutMs: number): Promise<void> {
  const refused = (e: unknown): never | undefined => {
    if (refusesTheUser(e)) throw new StartupError(`Redis at ${where} refuses a command fixloop needs (${e instanceof Error ? e.message : String(e)}): the user of FIXLOOP_REDIS_URL needs ${NEEDS} (docs/operations.md, "Cluster")`)
    if (refusesForNow(e)) return undefined
    throw e
  }
  const key = `fixloop:probe:${randomBytes(8).toString('hex')}`
  try {
    await client.send('EVAL', [PROBE_SCRIPT, '1', key])
    await client.send('EVALSHA', [PROBE_SHA, '1', key])
    // A sender no node listens to (wake-bus.ts hears only the nodes of its database), saying nothing.
    await client.send('PUBLISH', [WAKE_CHANNEL, `probe-${randomBytes(4).toString('hex')} hello`])
  } catch (e) {
    refused(e)
  }
  const subscriber = new RedisClient(url, { connectionTimeout: timeoutMs, autoReconnect: false, maxRetries: 0 })
  try {
    await subscriber.subscribe(WAKE_CHANNEL, () => {})
  } catch (e) {
    refused(e)
  } finally {
    subscriber.close()
  }
}

/**
 * (Here rather than in src/nodes/redis-link.ts, whose RedisLink treats these as Redis away: the start's
 * check needs them too, and this layer may not import the nodes'.)
 * A reply error that says the server cannot do the work now, not that the command was wrong: at `maxmemory`
 * with `noeviction` (OOM: every write refused, the rate-limit and single-use scripts included), a replica
 * (READONLY: a failover pointed the address at one), loading its dataset after a restart (LOADING), a
 * script or replication holding it (BUSY, MASTERDOWN, NOREPLICAS, TRYAGAIN, CLUSTERDOWN), or a failed
 * snapshot refusing writes (MISCONF), or an ACL or rename that denies this user the command (refusesTheUser
 * below). It answers PING meanwhile; treated as away, the callers take the
 * fallbacks they have for Redis down (limits in memory, the proof-of-work claim in the database), where
 * the refusal was rethrown (a 500 for a submission with proof of work) and logged at error per request.
 */
export function refusesForNow(e: unknown): boolean {
  const message = e instanceof Error ? e.message : ''
  return /^(OOM|READONLY|LOADING|BUSY|MASTERDOWN|NOREPLICAS|TRYAGAIN|CLUSTERDOWN|MISCONF)\b/.test(message) || refusesTheUser(e)
}

/**
 * A reply error that says this user may not run the command at all: an ACL without it (NOPERM, or for a
 * command inside a script the script's error), or the command renamed or disabled (`rename-command
 * EVALSHA ""`: ERR unknown command). serve refuses such a Redis at start (probeCommands above); an ACL
 * changed under a running node makes it away for the work too, with the same fallbacks, instead of a 500
 * for every submission with proof of work.
 */
export function refusesTheUser(e: unknown): boolean {
  const message = e instanceof Error ? e.message : ''
  // The ACL refusing a command inside a script: "ERR The user executing the script can't run this command …".
  return /^(NOPERM\b|ERR unknown command|ERR The user executing the script can't run)/.test(message)
}
