/**
 * Dashboard credentials under attack: failed sign-ins are throttled per source, per (account, source)
 * and per account without letting a stranger lock the owner out; a TOTP code works once; password
 * re-entry (reveal a secret, TOTP on/off) is throttled and its failures audited. In-process server on
 * a real temp data dir with a hand-moved clock; sources are told apart the way production does behind a
 * proxy (FIXLOOP_TRUST_PROXY=1, last X-Forwarded-For hop).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Reply, type TestServer } from './harness'
import { ManualClock } from '../src/core/clock'
import { FailureThrottle } from '../src/core/failure-throttle'
import { createAdminsService } from '../src/modules/admins/service'
import { passwordHasher } from '../src/modules/admins/password-hash'
import { base32Decode, totpCode } from '../src/modules/admins/totp'
import { SIGN_IN_BACKOFF, sourceKey } from '../src/modules/admin-api/sign-in-throttle'
import { REENTRY_BACKOFF } from '../src/modules/admin-api/password-reentry'
import { dbRow, dbRows } from './sqlite-of'

const OWNER = 'owner@example.com'
const PASSWORD = 'owner password 1'
const ATTACKER = '203.0.113.66'
const HOME = '198.51.100.7'

interface World {
  server: TestServer
  clock: ManualClock
}

async function world(env: Record<string, string> = {}): Promise<World> {
  const clock = new ManualClock(Date.UTC(2026, 5, 1, 12, 0, 10))
  const server = await startTestServer({ FIXLOOP_TRUST_PROXY: '1', ...env }, { clock })
  await createAdminsService(server.ctx.store.admins, server.ctx.box, clock, passwordHasher(server.ctx.config.passwordHashMib)).create(OWNER, PASSWORD)
  return { server, clock }
}

function signIn(w: World, from: string, password: string, extra: Record<string, unknown> = {}, email = OWNER): Promise<Reply> {
  return call(w.server.url, 'POST', '/admin/api/session', { body: { email, password, ...extra }, headers: { 'x-forwarded-for': from } })
}

interface Session {
  cookie: string
  csrf: string
}

async function session(w: World, from = HOME): Promise<Session> {
  const r = await signIn(w, from, PASSWORD)
  expect(r.status).toBe(200)
  return { cookie: r.headers.get('set-cookie')!.split(';')[0], csrf: r.body.csrfToken }
}

function as(w: World, s: Session, method: string, path: string, body?: unknown): Promise<Reply> {
  return call(w.server.url, method, path, { body, headers: { cookie: s.cookie, 'x-csrf-token': s.csrf, 'x-forwarded-for': HOME } })
}

const auditRows = async (w: World, action: string) =>
  (await dbRows(w.server.ctx, 'SELECT actor, target_id AS targetId, org_id AS orgId, data, ip FROM audit_log WHERE action = ? ORDER BY id', [action])) as {
    actor: string
    targetId: string
    orgId: string | null
    data: string
    ip: string
  }[]

/** Each password check costs an argon2id hash: the throttling tests run at a quarter of the ceilings. */
const M = 0.25
const free = (n: number, m = M) => Math.max(1, Math.round(n * m))
const PAIR_FREE = free(SIGN_IN_BACKOFF.pair.freeFailures)
const SOURCE_FREE = free(SIGN_IN_BACKOFF.source.freeFailures)

describe('sign-in throttling', () => {
  let w: World
  beforeAll(async () => {
    w = await world({ FIXLOOP_RATE_LIMIT_MULTIPLIER: String(M) })
  })
  afterAll(() => w?.server.close())

  test('an attacker spends many wrong tries; the owner from another address signs in at once', async () => {
    const statuses: number[] = []
    for (let i = 0; i < 40; i++) statuses.push((await signIn(w, ATTACKER, `wrong guess ${i}`)).status)
    // The first few are checked (401), then the attacker waits (429) without the password being tried.
    expect(statuses.slice(0, PAIR_FREE)).toEqual(Array(PAIR_FREE).fill(401))
    expect(statuses.slice(PAIR_FREE)).toEqual(Array(40 - PAIR_FREE).fill(429))
    // Even the right password waits on the attacker's address...
    const blocked = await signIn(w, ATTACKER, PASSWORD)
    expect([blocked.status, blocked.body.error.code]).toEqual([429, 'rate_limited'])
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0)
    // ...but not on the owner's.
    expect((await signIn(w, HOME, PASSWORD)).status).toBe(200)
  })

  test('a burst of parallel guesses gets no more password checks than the free failures', async () => {
    const from = '192.0.2.60'
    const replies = await Promise.all(Array.from({ length: 12 }, (_, i) => signIn(w, from, `parallel guess ${i}`)))
    const statuses = replies.map((r) => r.status)
    expect(statuses.filter((s) => s === 401).length).toBe(PAIR_FREE)
    expect(statuses.filter((s) => s === 429).length).toBe(12 - PAIR_FREE)
    expect((await signIn(w, HOME, PASSWORD)).status).toBe(200)
  })

  test('the wait doubles with every further failure, up to 15 minutes', async () => {
    const from = '192.0.2.10'
    const waits: number[] = []
    for (let i = 0; i < PAIR_FREE; i++) expect((await signIn(w, from, 'wrong')).status).toBe(401)
    for (let i = 0; i < 12; i++) {
      const r = await signIn(w, from, 'wrong')
      expect(r.status).toBe(429)
      const wait = Number(r.headers.get('retry-after'))
      waits.push(wait)
      w.clock.advance(wait * 1000)
      expect((await signIn(w, from, 'wrong')).status).toBe(401)
    }
    expect(waits).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900])
    // After the wait, the right password from that address is accepted, and the address starts over.
    w.clock.advance(900_000)
    expect((await signIn(w, from, PASSWORD)).status).toBe(200)
    expect((await signIn(w, from, 'wrong')).status).toBe(401)
  })

  test('one address guessing at many accounts is slowed down too', async () => {
    const from = '192.0.2.20'
    const statuses: number[] = []
    for (let i = 0; i < SOURCE_FREE + 3; i++) statuses.push((await signIn(w, from, 'wrong', {}, `user${i}@example.com`)).status)
    expect(statuses.slice(0, SOURCE_FREE)).toEqual(Array(SOURCE_FREE).fill(401))
    expect(statuses.slice(SOURCE_FREE)).toEqual([429, 429, 429])
    expect((await signIn(w, HOME, PASSWORD)).status).toBe(200)
  })

  test('an IPv6 source counts as its /64: rotating through it does not buy more tries', async () => {
    const statuses: number[] = []
    for (let i = 0; i < PAIR_FREE + 3; i++) statuses.push((await signIn(w, `2001:db8:aa:bb::${(i + 1).toString(16)}`, 'wrong')).status)
    expect(statuses).toEqual([...Array(PAIR_FREE).fill(401), 429, 429, 429])
    expect((await signIn(w, '2001:db8:aa:bc::1', PASSWORD)).status).toBe(200)
  })

  test.each([
    ['192.0.2.1', '192.0.2.1'],
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['2001:db8:aa:bb::1', '2001:db8:aa:bb::/64'],
    ['2001:0db8:00aa:00bb:1:2:3:4', '2001:db8:aa:bb::/64'],
    ['2001:DB8:AA:BB:ffff::', '2001:db8:aa:bb::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['unknown', 'unknown'],
    ['1::2::3', '1::2::3'],
  ])('source key of %s is %s', (address, key) => {
    expect(sourceKey(address)).toBe(key)
  })

  test('successes never count: the owner signs in again and again from one address', async () => {
    for (let i = 0; i < SOURCE_FREE + PAIR_FREE + 5; i++) expect((await signIn(w, '192.0.2.30', PASSWORD)).status).toBe(200)
  })

  test('a missing TOTP code is not a failure', async () => {
    const s = await session(w, '192.0.2.40')
    const { secret } = (await as(w, s, 'POST', '/admin/api/me/totp/secret')).body
    const code = totpCode(base32Decode(secret), w.clock.now())
    expect((await as(w, s, 'PUT', '/admin/api/me/totp', { secret, code, password: PASSWORD })).status).toBe(200)
    for (let i = 0; i < PAIR_FREE + SOURCE_FREE + 1; i++) {
      const r = await signIn(w, '192.0.2.41', PASSWORD)
      expect([r.status, r.body.error.details.totpRequired]).toEqual([401, true])
    }
    expect((await as(w, s, 'DELETE', '/admin/api/me/totp', { password: PASSWORD })).status).toBe(200)
  })
})

describe('a sign-in waiting for its TOTP code', () => {
  // At the real ceilings (pair 5, address 20): a quarter of them leaves the pair one free failure, after
  // which a code-less request is refused before it could clear anything. The cheapest hash keeps it quick.
  let w: World
  beforeAll(async () => {
    w = await world({ FIXLOOP_PASSWORD_HASH_MIB: '19' })
  })
  afterAll(() => w?.server.close())

  test('nor a success: code-less requests between wrong codes do not buy more code guesses', async () => {
    const s = await session(w, '192.0.2.42')
    const { secret } = (await as(w, s, 'POST', '/admin/api/me/totp/secret')).body
    const key = base32Decode(secret)
    expect((await as(w, s, 'PUT', '/admin/api/me/totp', { secret, code: totpCode(key, w.clock.now()), password: PASSWORD })).status).toBe(200)
    const wrong = () => String((Number(totpCode(key, w.clock.now())) + 1) % 1_000_000).padStart(6, '0')
    /** Wrong codes checked (401) from `from` before the first 429, with a code-less request before each when `interleave`. */
    const guessesBefore429 = async (from: string, interleave: boolean): Promise<number> => {
      for (let checked = 0; checked < 30; checked++) {
        if (interleave) await signIn(w, from, PASSWORD)
        const r = await signIn(w, from, PASSWORD, { totp: wrong() })
        if (r.status === 429) return checked
        expect([r.status, r.body.error.code]).toEqual([401, 'invalid_credentials'])
      }
      return 30
    }
    const plain = await guessesBefore429('192.0.2.43', false)
    expect(plain).toBe(SIGN_IN_BACKOFF.pair.freeFailures)
    // The password without a code answered "totpRequired" and cleared the pair's failures: the source's
    // ceiling (20 a source) was the only one left.
    expect(await guessesBefore429('192.0.2.44', true)).toBe(plain)
    const r = await as(w, s, 'DELETE', '/admin/api/me/totp', { password: PASSWORD })
    expect(r.status).toBe(200)
  })
})

describe('FailureThrottle', () => {
  const spec = { freeFailures: 2, baseDelayMs: 1000, maxDelayMs: 8000, forgetAfterMs: 60_000 }

  test('memory stays bounded under many keys; the oldest key goes first', () => {
    const clock = new ManualClock(0)
    const t = new FailureThrottle(spec, clock, 1, 100)
    for (let i = 0; i < 1000; i++) t.fail(`k${i}`)
    expect(t.size).toBe(100)
    t.fail('k999')
    t.fail('k999')
    expect(t.waitMs('k999')).toBe(2000)
    expect(t.waitMs('k0')).toBe(0)
  })

  test('a key quiet for forgetAfterMs starts over; swept keys free their memory', () => {
    const clock = new ManualClock(0)
    const t = new FailureThrottle(spec, clock)
    for (let i = 0; i < 3; i++) t.fail('a')
    expect(t.waitMs('a')).toBe(2000)
    clock.advance(61_000)
    expect(t.waitMs('a')).toBe(0)
    t.fail('b')
    expect(t.size).toBe(1)
    t.fail('a')
    expect(t.waitMs('a')).toBe(0)
  })
})

describe('the per-account ceiling', () => {
  test('failures spread over many addresses lock the account for everyone, for a while', async () => {
    // A fiftieth of the ceilings, so the "distributed attack" is 10 addresses rather than 500.
    const w = await world({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '0.02' })
    try {
      const ceiling = free(SIGN_IN_BACKOFF.account.freeFailures, 0.02)
      for (let i = 0; i < ceiling; i++) expect((await signIn(w, `10.1.${i >> 8}.${i & 255}`, 'wrong')).status).toBe(401)
      const r = await signIn(w, HOME, PASSWORD)
      expect(r.status).toBe(429)
      w.clock.advance(Number(r.headers.get('retry-after')) * 1000)
      expect((await signIn(w, HOME, PASSWORD)).status).toBe(200)
    } finally {
      await w.server.close()
    }
  })
})

describe('TOTP codes work once (RFC 6238 section 5.2)', () => {
  let w: World
  let secret: string
  const code = (offsetMs = 0) => totpCode(base32Decode(secret), w.clock.now() + offsetMs)
  beforeAll(async () => {
    w = await world()
    const s = await session(w)
    secret = (await as(w, s, 'POST', '/admin/api/me/totp/secret')).body.secret
    expect((await as(w, s, 'PUT', '/admin/api/me/totp', { secret, code: code(-30_000), password: PASSWORD })).status).toBe(200)
  })
  afterAll(() => w?.server.close())

  test('the code that turned TOTP on does not sign in', async () => {
    const r = await signIn(w, HOME, PASSWORD, { totp: code(-30_000) })
    expect([r.status, r.body.error.code, r.body.error.details.totpRequired]).toEqual([401, 'invalid_credentials', true])
  })

  test('two sign-ins racing with one code: exactly one is accepted', async () => {
    const c = code()
    const replies = await Promise.all([signIn(w, HOME, PASSWORD, { totp: c }), signIn(w, '192.0.2.50', PASSWORD, { totp: c }), signIn(w, '192.0.2.51', PASSWORD, { totp: c })])
    expect(replies.map((r) => r.status).sort()).toEqual([200, 401, 401])
  })

  test('a used code is refused for the rest of its window, and so is every earlier one', async () => {
    const next = code(30_000)
    expect((await signIn(w, HOME, PASSWORD, { totp: next })).status).toBe(200)
    expect((await signIn(w, HOME, PASSWORD, { totp: next })).status).toBe(401)
    w.clock.advance(30_000)
    // `next` is now the current step's code, still inside the drift window: used, so refused.
    expect((await signIn(w, '192.0.2.52', PASSWORD, { totp: next })).status).toBe(401)
    expect((await signIn(w, '192.0.2.52', PASSWORD, { totp: code(-30_000) })).status).toBe(401)
    expect((await signIn(w, '192.0.2.52', PASSWORD, { totp: code(30_000) })).status).toBe(200)
  })

  test('the step is kept in the database, so a restart does not forget it', async () => {
    const row = (await dbRow(w.server.ctx, 'SELECT totp_last_step AS step FROM admins WHERE email = ?', [OWNER])) as { step: number }
    expect(row.step).toBe(Math.floor(w.clock.now() / 30_000) + 1)
  })
})

describe('password re-entry', () => {
  let w: World
  let s: Session
  let path: string
  beforeAll(async () => {
    w = await world()
    const tenant = await seedTenant(w.server.admin)
    s = await session(w)
    path = `/admin/api/orgs/${tenant.orgId}/apps/${tenant.appId}/secret/reveal`
  })
  afterAll(() => w?.server.close())

  test('failed reveals are audited, then throttled even for the right password; the wait ends', async () => {
    for (let i = 0; i < REENTRY_BACKOFF.freeFailures; i++) {
      const r = await as(w, s, 'POST', path, { password: `wrong ${i}` })
      expect([r.status, r.body.error.code]).toEqual([401, 'invalid_credentials'])
    }
    const rows = await auditRows(w, 'admin.password_reentry_failed')
    expect(rows.length).toBe(REENTRY_BACKOFF.freeFailures)
    expect(rows.every((r) => JSON.parse(r.data).purpose === 'secret_reveal' && r.ip === HOME && r.orgId !== null)).toBe(true)
    expect(JSON.stringify(rows)).not.toContain('wrong 0')

    const blocked = await as(w, s, 'POST', path, { password: PASSWORD })
    expect([blocked.status, blocked.body.error.code]).toEqual([429, 'rate_limited'])
    expect(blocked.text).not.toMatch(/[0-9a-f]{64}/)
    w.clock.advance(Number(blocked.headers.get('retry-after')) * 1000)
    const ok = await as(w, s, 'POST', path, { password: PASSWORD })
    expect(ok.status).toBe(200)
    expect(ok.body.signingSecret).toMatch(/^[0-9a-f]{64}$/)
  })

  test('turning TOTP off or on with a wrong password is audited with what was attempted', async () => {
    const off = await as(w, s, 'DELETE', '/admin/api/me/totp', { password: 'not it at all' })
    expect(off.status).toBe(401)
    const { secret } = (await as(w, s, 'POST', '/admin/api/me/totp/secret')).body
    const on = await as(w, s, 'PUT', '/admin/api/me/totp', { secret, code: totpCode(base32Decode(secret), w.clock.now()), password: 'not it either' })
    expect(on.status).toBe(401)
    const purposes = (await auditRows(w, 'admin.password_reentry_failed')).map((r) => JSON.parse(r.data).purpose)
    expect(purposes.slice(-2)).toEqual(['totp_disable', 'totp_enable'])
  })
})
