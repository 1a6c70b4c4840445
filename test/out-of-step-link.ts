/**
 * A real RedisLink that hands the next script call `swap` instead of its own reply (once): how a client
 * that lost step with its connection behaves (Bun's, with auto-pipelining on, under load: each command
 * got the next one's reply). The command itself still runs on the real server.
 */
import { RedisLink } from '../src/nodes/redis-link'

export class OutOfStepLink extends RedisLink {
  swap: unknown
  override async evalScript(script: string, sha: string, keysAndArgs: string[]): Promise<unknown> {
    const own = await super.evalScript(script, sha, keysAndArgs)
    const swap = this.swap
    this.swap = undefined
    return swap === undefined ? own : swap
  }
}
