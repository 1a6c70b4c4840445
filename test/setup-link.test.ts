/**
 * The first start's setup link (fixloop serve with no admin): built from FIXLOOP_PUBLIC_URL, else from the
 * listening address, which for a server listening on every address (the container image's 0.0.0.0) is no
 * address a browser can open: the link names loopback instead, and serve prints a hint beside it.
 */
import { describe, expect, test } from 'bun:test'
import { setupLinkBase } from '../src/modules/admins/bootstrap'

describe('where the setup link points', () => {
  test('FIXLOOP_PUBLIC_URL wins, whatever the listening address', () => {
    expect(setupLinkBase('https://feedback.example.com', 'http://0.0.0.0:8080')).toEqual({ base: 'https://feedback.example.com', wildcard: false })
  })

  test('a loopback or named listening address is used as it is', () => {
    expect(setupLinkBase(undefined, 'http://127.0.0.1:18080')).toEqual({ base: 'http://127.0.0.1:18080', wildcard: false })
    expect(setupLinkBase(undefined, 'http://[::1]:8080')).toEqual({ base: 'http://[::1]:8080', wildcard: false })
    expect(setupLinkBase(undefined, 'http://10.0.0.5:8080')).toEqual({ base: 'http://10.0.0.5:8080', wildcard: false })
  })

  test('every address (0.0.0.0, ::) becomes loopback on the same port, flagged for the hint', () => {
    expect(setupLinkBase(undefined, 'http://0.0.0.0:8080')).toEqual({ base: 'http://127.0.0.1:8080', wildcard: true })
    expect(setupLinkBase(undefined, 'http://[::]:9000')).toEqual({ base: 'http://[::1]:9000', wildcard: true })
  })
})
