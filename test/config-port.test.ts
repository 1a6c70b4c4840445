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
