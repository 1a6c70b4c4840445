/**
 * The outbound address rule shared by webhook targets and SMTP servers (src/core/address-guard.ts):
 * which addresses are public, how a host resolves (IP literals in every spelling the resolver accepts),
 * and which address a refusal names.
 */
import { describe, expect, test } from 'bun:test'
import { isPublicAddress, refusedAddress, resolveHost } from '../src/core/address-guard'

describe('isPublicAddress', () => {
  test.each([
    ['127.0.0.1', false],
    ['10.1.2.3', false],
    ['172.16.0.1', false],
    ['192.168.1.1', false],
    ['100.64.0.1', false],
    ['169.254.169.254', false],
    ['0.0.0.0', false],
    ['255.255.255.255', false],
    ['224.0.0.1', false],
    ['::1', false],
    ['::', false],
    ['fe80::1', false],
    ['fd00:ec2::254', false],
    ['fc00::1', false],
    ['::ffff:127.0.0.1', false],
    ['::ffff:7f00:1', false],
    ['::ffff:169.254.169.254', false],
    ['64:ff9b::a00:1', false],
    // IPv4-compatible (::a.b.c.d, what http://[::127.0.0.1]/ parses to), public or not: deprecated, refused.
    ['::7f00:1', false],
    ['::127.0.0.1', false],
    ['::a9fe:a9fe', false],
    ['::808:808', false],
    ['0:0:0:0:0:0:7f00:1', false],
    // IPv4-translated (RFC 6145) and the other IPv4-mapped spellings.
    ['::ffff:0:7f00:1', false],
    ['0:0:0:0:0:ffff:a00:1', false],
    ['::ffff:808:808', true],
    // NAT64 well-known prefix: judged on the embedded IPv4 host (an IPv6-only network reaches public hosts so).
    ['64:ff9b::7f00:1', false],
    ['64:ff9b::a9fe:a9fe', false],
    ['64:ff9b::c0a8:101', false],
    ['64:ff9b::808:808', true],
    ['64:ff9b:1::a00:1', false],
    // 6to4 and Teredo embed an IPv4 relay or host: refused whole.
    ['2002:7f00:1::1', false],
    ['2002:a00:1::1', false],
    ['2002:808:808::1', false],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', false],
    ['2001:db8::1', false],
    ['100::1', false],
    ['8.8.8.8', true],
    ['1.1.1.1', true],
    ['2606:4700:4700::1111', true],
  ])('%s public: %s', (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected)
  })

})

describe('resolveHost and refusedAddress', () => {
  test.each([
    // IPv4 in the forms inet_aton and ipaddr.js read: decimal, hex, octal, short; all stand for a private host.
    ['127.0.0.1', '127.0.0.1'],
    ['2130706433', '127.0.0.1'],
    ['0x7f.1', '127.0.0.1'],
    ['0x7f000001', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'],
    ['127.1', '127.0.0.1'],
    ['10.1', '10.0.0.1'],
    ['169.254.169.254', '169.254.169.254'],
    ['[::1]', '::1'],
    ['::1', '::1'],
    ['[::ffff:127.0.0.1]', '::ffff:7f00:1'],
    ['[0:0:0:0:0:0:0:1]', '::1'],
  ])('%s resolves to %s and is refused unless private addresses are allowed', async (host, address) => {
    const addresses = await resolveHost(host)
    expect(addresses.map((a) => a.address)).toContain(address)
    expect(refusedAddress(addresses, false)).toBeDefined()
    expect(refusedAddress(addresses, true)).toBeUndefined()
  })

  test('a name resolving to loopback (localhost) is refused', async () => {
    const addresses = await resolveHost('localhost')
    expect(addresses.length).toBeGreaterThan(0)
    expect(refusedAddress(addresses, false)).toBeDefined()
  })

  test('a public literal passes; a name that does not resolve gives no addresses', async () => {
    expect(refusedAddress(await resolveHost('8.8.8.8'), false)).toBeUndefined()
    expect(refusedAddress(await resolveHost('[2606:4700:4700::1111]'), false)).toBeUndefined()
    expect(await resolveHost('does-not-exist.invalid')).toEqual([])
  })
})
