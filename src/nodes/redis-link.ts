/**
 * This node's connection to Valkey/Redis (cluster mode), through Bun's own client. A command that cannot
 * be answered within `timeoutMs` (the server down, the network cut) fails fast instead of queueing: the
 * callers have a fallback (src/http/shared-rate-limit.ts) and a request must never wait on Redis. After a
 * failure the link stays down for `retryMs` (callers go straight to their fallback), then connects anew:
 * Redis coming back is noticed without a restart.
 */
import { RedisClient } from 'bun'
import { describeRedis, refusesForNow } from '../db/redis-check'

export class RedisUnavailable extends Error {}

export class RedisLink {
  private client: RedisClient | undefined
  private connecting: Promise<RedisClient> | undefined
  private downUntil = 0
  private lastError: string | undefined
  readonly where: string

  constructor(
    private readonly url: string,
    private readonly timeoutMs = 500,
    private readonly retryMs = 1_000,
  ) {
    this.where = describeRedis(url)
  }

  /** Sends one command; throws RedisUnavailable when the server cannot answer now, or the server's own error. */
  async send(command: string, args: string[]): Promise<unknown> {
    if (performance.now() < this.downUntil) throw new RedisUnavailable(this.lastError ?? 'Redis is unavailable')
    try {
      const client = this.client ?? (await this.connect())
      return await this.bounded(client.send(command, args))
    } catch (e) {
      // A reply error (NOSCRIPT, WRONGTYPE …) comes from a working server: the caller handles it. A server
      // that cannot do the work now (at maxmemory, a replica, loading) is down for it, like no answer.
      if (!(e instanceof RedisUnavailable) && isReplyError(e) && !refusesForNow(e)) throw e
      this.markDown(e)
      throw e instanceof RedisUnavailable ? e : new RedisUnavailable(this.lastError)
    }
  }

  /**
   * Runs a Lua script by its SHA-1 (EVALSHA, one round trip), loading it with EVAL the first time this
   * server sees it (or after a restart or SCRIPT FLUSH answered NOSCRIPT). `keysAndArgs`: the key count,
   * the keys, then the arguments, as EVAL takes them.
   */
  async evalScript(script: string, sha: string, keysAndArgs: string[]): Promise<unknown> {
    try {
      return await this.send('EVALSHA', [sha, ...keysAndArgs])
    } catch (e) {
      if (!(e instanceof Error) || !e.message.startsWith('NOSCRIPT')) throw e
      return this.send('EVAL', [script, ...keysAndArgs])
    }
  }

  /**
   * Drops the connection after a reply that cannot be this command's (a caller that checks an echo):
   * replies could be out of step, so nothing more is read from it; the link is down for `retryMs`.
   */
  desynchronized(what: string): RedisUnavailable {
    this.markDown(new Error(`a reply out of step with its command (${what}); reconnecting`))
    return new RedisUnavailable(this.lastError)
  }

  /** For /readyz: a PING within the timeout. */
  async check(): Promise<{ ok: boolean; reason?: string }> {
    try {
      const pong = await this.send('PING', [])
      return pong === 'PONG' ? { ok: true } : { ok: false, reason: `Redis at ${this.where} answered PING with ${JSON.stringify(pong)}` }
    } catch (e) {
      return { ok: false, reason: `Redis at ${this.where} is unreachable: ${e instanceof Error ? e.message : String(e)}` }
    }
  }

  close(): void {
    this.client?.close()
    this.client = undefined
    this.downUntil = Number.POSITIVE_INFINITY
    this.lastError = 'closed'
  }

  private connect(): Promise<RedisClient> {
    this.connecting ??= (async () => {
      // No auto-pipelining: with it, Bun's client (1.4) now and then handed a command the reply of the
      // next one on a loaded machine (an event-loop stall while replies arrived): a proof-of-work claim
      // read a flood meter's counts [1, 0] as "claimed, no marker" and a replay was accepted (test/pow's
      // Redis-outage case, 1 run in 3 with four CPU hogs; none in 88 without it). Commands still overlap
      // on the connection; only the client's batching of writes is off, at no measured cost.
      const client = new RedisClient(this.url, { connectionTimeout: this.timeoutMs * 2, autoReconnect: false, maxRetries: 0, enableOfflineQueue: false, enableAutoPipelining: false })
      client.onclose = () => {
        if (this.client === client) this.client = undefined
      }
      try {
        await this.bounded(client.connect())
      } catch (e) {
        client.close()
        throw e
      }
      this.client = client
      return client
    })().finally(() => (this.connecting = undefined))
    return this.connecting
  }

  private bounded<T>(p: Promise<T>): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined
    return Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new RedisUnavailable(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs)
      }),
    ]).finally(() => clearTimeout(timer))
  }

  private markDown(e: unknown): void {
    this.lastError = e instanceof Error ? e.message : String(e)
    this.downUntil = performance.now() + this.retryMs
    const c = this.client
    this.client = undefined
    c?.close()
  }
}

/**
 * Whether a script's `answer` carries, at `at`, the `key` it echoes: the proof that the reply is this
 * command's and not another's (RedisLink.desynchronized). Compared as Redis stores the key: UTF-8, so
 * a lone surrogate comes back as U+FFFD.
 */
export function echoes(answer: unknown, at: number, key: string): answer is unknown[] {
  return Array.isArray(answer) && answer[at] === key.toWellFormed()
}

/** An error reply of the server (as opposed to no connection). */
function isReplyError(e: unknown): boolean {
  const message = e instanceof Error ? e.message : ''
  return /^(ERR|NOSCRIPT|WRONGTYPE|BUSY|NOPERM|OOM|READONLY|LOADING|EXECABORT|MOVED|ASK)\b/.test(message)
}
