/** The port setting is read as decimal digits only (src/config.ts parsePort); Number() took "0x1F90" and "8e3". */
import { expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '../src/config'
import { tempDir } from './temp-dirs'

test('--port and FIXLOOP_PORT: decimal 0-65535 only; hex, exponents, signs, spaces and fractions are refused by name', () => {
  const dataDir = tempDir('fixloop-port-')
  expect(loadConfig({ port: '8080', dataDir }, {}).port).toBe(8080)
  expect(loadConfig({ dataDir }, { FIXLOOP_PORT: '0' }).port).toBe(0)
  expect(loadConfig({ dataDir }, { FIXLOOP_PORT: '65535' }).port).toBe(65535)
  for (const bad of ['0x1F90', '8e3', '+80', '-1', ' 80', '80.0', '65536', '1_000', '']) {
    expect(() => loadConfig({ port: bad, dataDir }, {}), bad).toThrow(ConfigError)
    expect(() => loadConfig({ port: bad, dataDir }, {}), bad).toThrow(`--port: port must be an integer 0-65535, got "${bad}"`)
  }
  expect(() => loadConfig({ dataDir }, { FIXLOOP_PORT: '8e3' })).toThrow('FIXLOOP_PORT: port must be an integer 0-65535, got "8e3"')
  // Empty (FIXLOOP_PORT=${PORT} with PORT unset) is refused too: it quietly listened on 8080.
  expect(() => loadConfig({ dataDir }, { FIXLOOP_PORT: '' })).toThrow('FIXLOOP_PORT: port must be an integer 0-65535, got ""')
  // A flag given wins over the variable, empty or not.
  expect(loadConfig({ port: '9000', dataDir }, { FIXLOOP_PORT: '' }).port).toBe(9000)
})

test('--host and FIXLOOP_HOST: an empty one is refused by name before anything starts; unset is 127.0.0.1', () => {
  const dataDir = tempDir('fixloop-host-')
  expect(loadConfig({ dataDir }, {}).host).toBe('127.0.0.1')
  expect(loadConfig({ dataDir }, { FIXLOOP_HOST: '0.0.0.0' }).host).toBe('0.0.0.0')
  expect(loadConfig({ host: '::1', dataDir }, { FIXLOOP_HOST: '' }).host).toBe('::1')
  expect(() => loadConfig({ dataDir }, { FIXLOOP_HOST: '' })).toThrow('FIXLOOP_HOST is empty (an unset shell variable?)')
  expect(() => loadConfig({ host: ' ', dataDir }, {})).toThrow('--host is empty (an unset shell variable?)')
})

test('FIXLOOP_REDIS_URL: the path is a database number or nothing; anything else is refused by name (Bun\'s client threw a TypeError: exit 1 with a stack)', () => {
  const dataDir = tempDir('fixloop-redis-url-')
  for (const ok of ['redis://127.0.0.1:6379', 'redis://127.0.0.1:6379/', 'redis://:pw@127.0.0.1:6379/1', 'rediss://u:pw@redis.internal/15']) {
    expect(loadConfig({ dataDir }, { FIXLOOP_REDIS_URL: ok }).redisUrl).toBe(ok)
  }
  for (const bad of ['redis://127.0.0.1:6379/abc', 'redis://127.0.0.1/1/2', 'redis://127.0.0.1/-1', 'redis://127.0.0.1/1.5', 'redis://127.0.0.1/%31']) {
    expect(() => loadConfig({ dataDir }, { FIXLOOP_REDIS_URL: bad }), bad).toThrow('FIXLOOP_REDIS_URL: the path is a database number (redis://host:6379/1) or nothing')
  }
})

test('number settings read plain decimal only: hex, exponents, spaces, signs and underscores are refused by name, never read as another value', () => {
  const dataDir = tempDir('fixloop-numbers-')
  // Whole numbers (seconds, counts, minutes-or-off) and decimals (multipliers, days) as written.
  const ok = loadConfig({ dataDir }, { FIXLOOP_OUTBOUND_TIMEOUT: '12', FIXLOOP_AGENT_CONCURRENCY: '3', FIXLOOP_TRACKER_POLL_MINUTES: '0', FIXLOOP_RATE_LIMIT_MULTIPLIER: '0.5', FIXLOOP_WEBHOOK_TIMEOUT_SECONDS: '.5', FIXLOOP_EVENT_RETENTION_DAYS: '7' })
  expect(ok.outboundTimeoutMs).toBe(12_000)
  expect(ok.agentConcurrency).toBe(3)
  expect(ok.trackerPollMinutes).toBe(0)
  expect(ok.rateLimitMultiplier).toBe(0.5)
  expect(ok.webhookTimeoutMs).toBe(500)
  expect(ok.eventRetentionDays).toBe(7)
  // Number() read each of these as a value: "1e1" as 10, "0x10" as 16, " 5 " as 5, "0b11" as 3.
  const cases: [string, string, string][] = [
    ['FIXLOOP_OUTBOUND_TIMEOUT', '1e1', 'must be a whole number of seconds from 1 to 20'],
    ['FIXLOOP_OUTBOUND_TIMEOUT', '0x10', 'must be a whole number of seconds from 1 to 20'],
    ['FIXLOOP_OUTBOUND_TIMEOUT', ' 5 ', 'must be a whole number of seconds from 1 to 20'],
    ['FIXLOOP_AGENT_CONCURRENCY', '0b11', 'must be a whole number of at least 1'],
    ['FIXLOOP_AGENT_CONCURRENCY', '+2', 'must be a whole number of at least 1'],
    ['FIXLOOP_TRACKER_POLL_MINUTES', '1_0', 'must be a whole number from 0 (off)'],
    ['FIXLOOP_TRACKER_POLL_MINUTES', '5.0', 'must be a whole number from 0 (off)'],
    ['FIXLOOP_RATE_LIMIT_MULTIPLIER', '2e0', 'must be a positive number'],
    ['FIXLOOP_RATE_LIMIT_MULTIPLIER', 'Infinity', 'must be a positive number'],
    ['FIXLOOP_WEBHOOK_TIMEOUT_SECONDS', '0x5', 'must be a positive number of at most 15'],
    ['FIXLOOP_EVENT_RETENTION_DAYS', '7 days', 'must be a positive number'],
  ]
  for (const [name, value, message] of cases) {
    expect(() => loadConfig({ dataDir }, { [name]: value }), `${name}=${value}`).toThrow(`${name}: ${message}`)
  }
})
