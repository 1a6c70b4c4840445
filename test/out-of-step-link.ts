/**
 * A real RedisLink that hands one script call another reply: how a client that lost step with its
 * connection behaves (Bun's, with auto-pipelining on, under load: each command got the next one's
 * reply). The command itself still runs on the real server.
 */
import { RedisLink } from '../src/nodes/redis-link'

export class OutOfStepLink extends RedisLink {
  private next: { reply: unknown; keyMatches: RegExp } | undefined

  /**
   * The next script call whose keys include one matching `keyMatches` gets `reply` instead of its own
   * (the background ticks of the meters use the same link: they must not take it).
   */
  swap(reply: unknown, keyMatches: RegExp): void {
    this.next = { reply, keyMatches }
  }

  override async evalScript(script: string, sha: string, keysAndArgs: string[]): Promise<unknown> {
    const own = await super.evalScript(script, sha, keysAndArgs)
    const next = this.next
    const keys = keysAndArgs.slice(1, 1 + Number(keysAndArgs[0]))
    if (!next || !keys.some((k) => next.keyMatches.test(k))) return own
    this.next = undefined
    return next.reply
  }
}
