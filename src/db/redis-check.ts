/**
 * FIXLOOP_REDIS_URL at start (cluster mode): proves Valkey/Redis answers and is new enough (7.0+, for the
 * functions and commands cluster mode uses), with an error an operator can act on (exit 2). Bun's own
 * Redis client: nothing to install. The URL's password is never printed.
 */
import { RedisClient } from 'bun'
import { StartupError } from '../core/startup-error'

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
    return { version }
  } catch (e) {
    if (e instanceof StartupError) throw e
    const err = e as { code?: string; message?: string }
    if (/NOAUTH|WRONGPASS|invalid password|AUTH/i.test(err.message ?? '')) {
      throw new StartupError(`Redis at ${where} refused the credentials (check the password in FIXLOOP_REDIS_URL)`)
    }
    throw new StartupError(`cannot reach Redis at ${where} (FIXLOOP_REDIS_URL): ${err.code === 'ETIMEDOUT' ? 'no answer' : (err.message ?? String(e))}; is it running and listening there?`)
  } finally {
    client.close()
  }
}
