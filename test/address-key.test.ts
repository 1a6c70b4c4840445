/**
 * The address key (src/http/client-address.ts `addressKey`): one IPv6 /64 counts as one address everywhere
 * a limit counts addresses, and an IPv4-mapped IPv6 address is its IPv4 address. Over HTTP behind a trusted
 * proxy: the public rate limit and the proof-of-work flood meter. Runs on PostgreSQL + Redis too
 * (scripts/test-pg.sh), where the rate limit is shared through Redis.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { addressKey } from '../src/http/client-address'
import { ADDRESS_FLOOD_PER_MINUTE, POW_MAXNUMBER } from '../src/abuse/difficulty'
import { powHeaderOf, solvePowChallenge } from '../src/abuse/pow'
import { ManualClock } from '../src/core/clock'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'

describe('addressKey', () => {
  test.each([
    ['192.0.2.1', '192.0.2.1'],
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['::FFFF:c000:201', '192.0.2.1'],
    ['0:0:0:0:0:ffff:192.0.2.1', '192.0.2.1'],
    ['[2001:db8::1]', '2001:db8:0:0::/64'],
    ['2001:db8:aa:bb::1', '2001:db8:aa:bb::/64'],
    ['2001:db8:aa:bb:ffff:ffff:ffff:ffff', '2001:db8:aa:bb::/64'],
    ['2001:0db8:00aa:00bb:1:2:3:4', '2001:db8:aa:bb::/64'],
    ['2001:DB8:AA:BB:ffff::', '2001:db8:aa:bb::/64'],
    ['2001:db8:aa:bb::192.0.2.1', '2001:db8:aa:bb::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['unknown', 'unknown'],
    ['1::2::3', '1::2::3'],
    ['::ffff:999.0.0.1', '::ffff:999.0.0.1'],
    ['2001:db8:aa:bb::/64', '2001:db8:aa:bb::/64'],
  ])('%s counts as %s', (address, key) => {
    expect(addressKey(address)).toBe(key)
  })
})

describe('over HTTP, behind a trusted proxy', () => {
  let server: TestServer
  let open: Tenant
  let guarded: Tenant
  beforeAll(async () => {
    // A clock that stands still: no bucket refills while the test runs, however slow the machine.
    server = await startTestServer({ FIXLOOP_TRUST_PROXY: '1' }, { clock: new ManualClock(Date.UTC(2026, 5, 1, 12)) })
    open = await seedTenant(server.admin, {}, 'Open')
    guarded = await seedTenant(server.admin, { proofOfWork: 'normal' }, 'Guarded')
  })
  afterAll(() => server?.close())

  const submit = (from: string) => call(server.url, 'POST', '/v1/feedback', { auth: open.pub, body: { text: 'The save button does nothing' }, headers: { 'X-Forwarded-For': from } })

  test('one /64 gets the public submission limit of one address (60), however many of its addresses it uses', async () => {
    const statuses: number[] = []
    for (let i = 1; i <= 61; i++) statuses.push((await submit(`2001:db8:1:2:${i.toString(16)}:${(i * 79).toString(16)}::1`)).status)
    expect(statuses.slice(0, 60).every((s) => s === 201)).toBe(true)
    expect(statuses[60]).toBe(429)
    expect((await submit('2001:db8:1:2::abcd')).status).toBe(429)
    expect((await submit('2001:db8:1:3::1')).status).toBe(201) // the next /64 is someone else
  })

  test('an IPv4-mapped IPv6 address shares its IPv4 address\'s limit', async () => {
    for (let i = 0; i < 30; i++) expect((await submit('::ffff:198.51.100.9')).status).toBe(201)
    for (let i = 0; i < 30; i++) expect((await submit('198.51.100.9')).status).toBe(201)
    expect((await submit('::ffff:c633:6409')).status).toBe(429)
  })

  test('the proof-of-work flood meter counts a /64 as one address', async () => {
    const challenge = async (from: string) => (await call(server.url, 'GET', '/v1/widget/challenge', { auth: guarded.pub, headers: { 'X-Forwarded-For': from } })).body.challenge
    const body = { contentType: 'image/png', byteSize: 10, kind: 'screenshot' }
    for (let i = 1; i <= ADDRESS_FLOOD_PER_MINUTE + 1; i++) {
      const from = `2001:db8:5:6:${i.toString(16)}::${i.toString(16)}`
      const c = await challenge(from)
      const r = await call(server.url, 'POST', '/v1/feedback/upload-url', { auth: guarded.pub, body, headers: { 'X-Forwarded-For': from, 'X-Fixloop-Proof-Of-Work': powHeaderOf(c, solvePowChallenge(c)!) } })
      expect(r.status).toBe(200)
    }
    expect((await challenge('2001:db8:5:6:ffff::1')).maxnumber).toBe(POW_MAXNUMBER.normal * 4)
    expect((await challenge('2001:db8:5:7::1')).maxnumber).toBe(POW_MAXNUMBER.normal)
  })
})
