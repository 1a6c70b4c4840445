/**
 * Valkey/Redis up but refusing the work: at `maxmemory` with `noeviction` (every write refused with OOM), a
 * replica after a failover (READONLY), loading its dataset after a restart (LOADING). It answers PING, so
 * the link did not count it as down, and its refusal came back as an ordinary reply error: a submission to
 * an App with proof of work answered 500 (the single-use claim rethrew it), and every rate-limited request
 * wrote an error line. It is Redis unavailable for the work (src/nodes/redis-link.ts): the same fallbacks
 * as Redis down (limits in memory, the claim in the database), warnings at most once a minute, and the
 * shared state again once Redis takes writes. The compiled binary on real PostgreSQL, redis-server, s3rver.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { openSync, readFileSync, rmSync } from 'node:fs'
import { RedisClient } from 'bun'
import { BINARY, call, eventually, freePort, runBinary, tempDir } from './harness'
import { clusterEnv, startRedis, type RedisServer } from './cluster-env'
import { powHeaderOf, solvePowChallenge } from '../src/abuse/pow'

const dirs: string[] = []
const dir = (prefix: string) => {
  const d = tempDir(prefix)
  dirs.push(d)
  return d
}
let redis: RedisServer
let env: Record<string, string>
beforeAll(async () => {
  redis = await startRedis()
  env = { ...(await clusterEnv(undefined, { migrated: true })), FIXLOOP_REDIS_URL: redis.url }
})
afterAll(async () => {
  await redis?.stop()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

async function cli(args: string[]): Promise<any> {
  const r = await runBinary([...args, '--json', '--data-dir', dir('fixloop-redis-cli-')], env)
  if (r.code !== 0) throw new Error(`fixloop ${args.join(' ')}: exit ${r.code}: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

test('Redis refusing writes (OOM at maxmemory, a read-only replica): submissions 201 with and without proof of work, warnings not error lines, shared limits again once it takes writes', async () => {
  const org = await cli(['org', 'create', '--name', 'Acme'])
  const plain = await cli(['app', 'create', '--org', org.id, '--name', 'Plain'])
  const guarded = await cli(['app', 'create', '--org', org.id, '--name', 'Guarded', '--proof-of-work', 'normal'])
  const logFile = `${dir('fixloop-redis-log-')}/serve.log`
  const port = await freePort()
  const proc = Bun.spawn([BINARY, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dir('fixloop-redis-node-')], {
    env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn', ...env },
    // The JSON log lines go to stdout.
    stdout: openSync(logFile, 'a'),
    stderr: 'inherit',
  })
  const url = `http://127.0.0.1:${port}`
  const admin = new RedisClient(redis.url)
  try {
    await eventually(async () => (await fetch(url + '/healthz').catch(() => null))?.status === 200, 15_000)
    const submit = async (app: { publicKey: string }, text: string, proofOfWork: boolean) => {
      const headers: Record<string, string> = {}
      if (proofOfWork) {
        const { challenge } = (await call(url, 'GET', '/v1/widget/challenge', { auth: app.publicKey })).body
        headers['X-Fixloop-Proof-Of-Work'] = powHeaderOf(challenge, solvePowChallenge(challenge)!)
      }
      const r = await call(url, 'POST', '/v1/feedback', { auth: app.publicKey, body: { text }, headers })
      return { status: r.status, code: r.body?.error?.code }
    }
    expect(await submit(guarded, 'before: the save button does nothing', true)).toEqual({ status: 201, code: undefined })

    const refusals: [string, () => Promise<unknown>, () => Promise<unknown>][] = [
      [
        'OOM',
        async () => {
          await admin.send('CONFIG', ['SET', 'maxmemory-policy', 'noeviction'])
          await admin.send('CONFIG', ['SET', 'maxmemory', '1'])
        },
        () => admin.send('CONFIG', ['SET', 'maxmemory', '0']),
      ],
      // A replica of a primary that is not there: every write answers READONLY.
      ['READONLY', () => admin.send('REPLICAOF', ['127.0.0.1', '1']), () => admin.send('REPLICAOF', ['NO', 'ONE'])],
    ]
    for (const [name, refuse, restore] of refusals) {
      await refuse()
      expect(String(await admin.send('SET', ['probe', '1']).catch((e) => e))).toContain(name)
      for (let i = 0; i < 3; i++) {
        expect({ name, ...(await submit(plain, `${name} ${i}: the export hangs`, false)) }).toEqual({ name, status: 201, code: undefined })
        expect({ name, ...(await submit(guarded, `${name} ${i}: the export hangs`, true)) }).toEqual({ name, status: 201, code: undefined })
      }
      await restore()
    }
    // Taking writes again: the shared buckets are in Redis again (noticed within the link's retry).
    await admin.send('FLUSHALL', [])
    await eventually(async () => {
      await submit(plain, 'after: the export works', false)
      return ((await admin.send('KEYS', ['fixloop:rl:*'])) as string[]).length > 0
    }, 10_000)
    expect(await submit(guarded, 'after: the save button works', true)).toEqual({ status: 201, code: undefined })
    const errors = readFileSync(logFile, 'utf8').split('\n').filter((l) => l.includes('"level":"error"'))
    expect(errors).toEqual([])
  } finally {
    admin.close()
    proc.kill('SIGTERM')
    await proc.exited
  }
}, 90_000)

/** `serve` killed after 15 s if it has not exited by then (it started: code 143). */
async function serveBriefly(environment: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([BINARY, 'serve', '--host', '127.0.0.1', '--port', String(await freePort()), '--data-dir', dir('fixloop-redis-acl-')], { env: { PATH: process.env.PATH ?? '', ...environment }, stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => proc.kill('SIGTERM'), 15_000)
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  clearTimeout(timer)
  return { code, stdout, stderr }
}

test('a Redis whose user may not run what the nodes run (an ACL without scripting or the wake-up channel, a script command denied): serve refuses to start (exit 2) naming what is needed, never the password', async () => {
  const admin = new RedisClient(redis.url)
  const port = new URL(redis.url).port
  try {
    const users: [string, string[]][] = [
      ['noscript', ['~*', '&*', '+@all', '-@scripting']],
      ['nochannel', ['~*', 'resetchannels', '+@all']],
      ['nokeys', ['~other:*', '&*', '+@all']],
      ['nozset', ['~*', '&*', '+@all', '-@sortedset']],
    ]
    for (const [user, rules] of users) {
      await admin.send('ACL', ['SETUSER', user, 'reset', 'on', '>Secret-Pw-9f3a', ...rules])
      const r = await serveBriefly({ ...env, FIXLOOP_REDIS_URL: `redis://${user}:Secret-Pw-9f3a@127.0.0.1:${port}` })
      expect({ user, code: r.code }).toEqual({ user, code: 2 })
      expect(r.stderr).toContain('refuses a command fixloop needs')
      expect(r.stderr).toContain('on keys ~fixloop:* and the channel &fixloop:wake')
      expect(r.stderr + r.stdout).not.toContain('Secret-Pw-9f3a')
    }
    // The least a node needs, as the message says: it starts.
    await admin.send('ACL', ['SETUSER', 'fixloop', 'reset', 'on', '>Secret-Pw-9f3a', '~fixloop:*', '&fixloop:wake', '+eval', '+evalsha', '+publish', '+subscribe', '+ping', '+info', '+time', '+get', '+set', '+del', '+hset', '+hmget', '+pexpire', '+zadd', '+zrem', '+zcard', '+zremrangebyscore'])
    const proc = Bun.spawn([BINARY, 'serve', '--host', '127.0.0.1', '--port', String(await freePort()), '--data-dir', dir('fixloop-redis-acl-')], {
      env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn', ...env, FIXLOOP_REDIS_URL: `redis://fixloop:Secret-Pw-9f3a@127.0.0.1:${port}` },
      stdout: 'ignore',
      stderr: 'pipe',
    })
    const stderr = new Response(proc.stderr).text()
    await Bun.sleep(4_000)
    const exited = proc.exitCode
    proc.kill('SIGTERM')
    await proc.exited
    expect({ exited, stderr: exited === null ? '' : await stderr }).toEqual({ exited: null, stderr: '' })
  } finally {
    for (const user of ['noscript', 'nochannel', 'nokeys', 'nozset', 'fixloop']) await admin.send('ACL', ['DELUSER', user]).catch(() => {})
    admin.close()
  }
}, 90_000)

test('an ACL that loses scripting under a running node: submissions with proof of work 201 (the claim in the database), not 500; warnings, no error line per request', async () => {
  const org = await cli(['org', 'create', '--name', 'Acl'])
  const guarded = await cli(['app', 'create', '--org', org.id, '--name', 'Guarded', '--proof-of-work', 'normal'])
  const admin = new RedisClient(redis.url)
  const redisPort = new URL(redis.url).port
  await admin.send('ACL', ['SETUSER', 'node', 'reset', 'on', '>Node-Pw-71c2', '~*', '&*', '+@all'])
  const logFile = `${dir('fixloop-redis-log-')}/serve.log`
  const port = await freePort()
  const proc = Bun.spawn([BINARY, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dir('fixloop-redis-node-')], {
    env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn', ...env, FIXLOOP_REDIS_URL: `redis://node:Node-Pw-71c2@127.0.0.1:${redisPort}` },
    stdout: openSync(logFile, 'a'),
    stderr: 'inherit',
  })
  const url = `http://127.0.0.1:${port}`
  try {
    await eventually(async () => (await fetch(url + '/healthz').catch(() => null))?.status === 200, 15_000)
    const submit = async (text: string) => {
      const { challenge } = (await call(url, 'GET', '/v1/widget/challenge', { auth: guarded.publicKey })).body
      const r = await call(url, 'POST', '/v1/feedback', { auth: guarded.publicKey, body: { text }, headers: { 'X-Fixloop-Proof-Of-Work': powHeaderOf(challenge, solvePowChallenge(challenge)!) } })
      return { status: r.status, code: r.body?.error?.code }
    }
    expect(await submit('before: the save button does nothing')).toEqual({ status: 201, code: undefined })
    // The operator tightens the ACL (or renames EVALSHA away) while the node runs.
    await admin.send('ACL', ['SETUSER', 'node', '-@scripting'])
    for (let i = 0; i < 4; i++) expect(await submit(`during ${i}: the export hangs`)).toEqual({ status: 201, code: undefined })
    await admin.send('ACL', ['SETUSER', 'node', '+@all'])
    await eventually(async () => (await submit('after: the export works')).status === 201 && ((await admin.send('KEYS', ['fixloop:rl:*'])) as string[]).length > 0, 10_000)
    const lines = readFileSync(logFile, 'utf8').split('\n')
    expect(lines.filter((l) => l.includes('"level":"error"'))).toEqual([])
    expect(lines.some((l) => l.includes('"level":"warn"') && l.includes('NOPERM'))).toBe(true)
    expect(lines.some((l) => l.includes('Node-Pw-71c2'))).toBe(false)
  } finally {
    await admin.send('ACL', ['DELUSER', 'node']).catch(() => {})
    admin.close()
    proc.kill('SIGTERM')
    await proc.exited
  }
}, 90_000)

test('a fixloop key another writer gave another type (WRONGTYPE): submissions with proof of work 201 with the claim in the database, a replay still refused, limits in memory; warnings once a minute, no error line', async () => {
  const org = await cli(['org', 'create', '--name', 'WrongType'])
  const guarded = await cli(['app', 'create', '--org', org.id, '--name', 'Guarded', '--proof-of-work', 'normal'])
  const admin = new RedisClient(redis.url)
  const logFile = `${dir('fixloop-redis-log-')}/serve.log`
  const port = await freePort()
  const proc = Bun.spawn([BINARY, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dir('fixloop-redis-node-')], {
    env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn', ...env },
    stdout: openSync(logFile, 'a'),
    stderr: 'inherit',
  })
  const url = `http://127.0.0.1:${port}`
  const solved = async () => {
    const { challenge } = (await call(url, 'GET', '/v1/widget/challenge', { auth: guarded.publicKey })).body
    return powHeaderOf(challenge, solvePowChallenge(challenge)!)
  }
  const submit = async (text: string, pow: string) => {
    const r = await call(url, 'POST', '/v1/feedback', { auth: guarded.publicKey, body: { text }, headers: { 'X-Fixloop-Proof-Of-Work': pow } })
    return { status: r.status, reason: r.body?.error?.details?.reason }
  }
  try {
    await eventually(async () => (await fetch(url + '/healthz').catch(() => null))?.status === 200, 15_000)
    expect(await submit('before: the save button does nothing', await solved())).toEqual({ status: 201, reason: undefined })
    // The marker every claim reads, written as a hash by something else on this Redis database.
    await admin.send('DEL', ['fixloop:pow:db-until'])
    await admin.send('HSET', ['fixloop:pow:db-until', 'x', '1'])
    // And the rate limits' buckets (an error line per request before: "shared rate limit failed").
    const buckets = (await admin.send('KEYS', ['fixloop:rl:*'])) as string[]
    expect(buckets.length).toBeGreaterThan(0)
    for (const k of buckets) {
      await admin.send('SET', [k, 'not a bucket'])
    }
    const pows: string[] = []
    for (let i = 0; i < 4; i++) {
      pows.push(await solved())
      expect(await submit(`during ${i}: the export hangs`, pows[i]!)).toEqual({ status: 201, reason: undefined })
    }
    // Single use holds in the database meanwhile.
    expect(await submit('during: a replay', pows[0]!)).toEqual({ status: 403, reason: 'replayed' })
    await admin.send('DEL', ['fixloop:pow:db-until', ...buckets])
    expect(await submit('after: the export works', await solved())).toEqual({ status: 201, reason: undefined })
    // Claimed in the database during the refusal: still a replay once Redis takes the claims again.
    expect(await submit('after: a replay', pows[1]!)).toEqual({ status: 403, reason: 'replayed' })
    const lines = readFileSync(logFile, 'utf8').split('\n')
    expect(lines.filter((l) => l.includes('"level":"error"'))).toEqual([])
    const warnings = lines.filter((l) => l.includes('"level":"warn"') && l.includes('WRONGTYPE'))
    // Once a minute each: the claim's, the marker's, one per rate-limit scope; not one per request.
    expect(warnings.some((l) => l.includes('proof-of-work'))).toBe(true)
    expect(warnings.some((l) => l.includes('Redis refused the shared rate limit')), lines.join('\n')).toBe(true)
    expect(warnings.length).toBeLessThanOrEqual(6)
  } finally {
    await admin.send('DEL', ['fixloop:pow:db-until']).catch(() => {})
    admin.close()
    proc.kill('SIGTERM')
    await proc.exited
  }
}, 90_000)

test('FIXLOOP_REDIS_URL naming a database the server does not have, or a path that is no database number: exit 2 saying so (was "Connection closed", or a TypeError with exit 1)', async () => {
  const missing = await serveBriefly({ ...env, FIXLOOP_REDIS_URL: `${redis.url}/99` })
  expect({ code: missing.code, stderr: missing.stderr }).toEqual({ code: 2, stderr: `fixloop: Redis at 127.0.0.1:${redis.port} has no database 99 (FIXLOOP_REDIS_URL's path): its "databases" setting (16 by default) is lower\n` })
  const junk = await serveBriefly({ ...env, FIXLOOP_REDIS_URL: `${redis.url}/abc` })
  expect({ code: junk.code, stderr: junk.stderr }).toEqual({ code: 2, stderr: 'fixloop: FIXLOOP_REDIS_URL: the path is a database number (redis://host:6379/1) or nothing, got "/abc"\n' })
}, 60_000)
