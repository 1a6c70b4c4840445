/**
 * modules/git-hooks/deliveries.ts, pure: what each host's delivery says (a scenario table over real-shaped
 * payloads from test/git-host-webhooks.ts), who may start a review iteration, and the signature checks.
 */
import { describe, expect, test } from 'bun:test'
import { constantTimeEqual, deliveryIdOf, readNews, verifyDelivery } from '../src/modules/git-hooks/deliveries'
import { delivery, type HookHost, type HookKind } from './git-host-webhooks'

const PR = { github: 'https://github.example/acme/shop/pull/7', gitea: 'https://gitea.example/acme/shop/pulls/7', gitlab: 'https://gitlab.example/acme/shop/-/merge_requests/7' }
const news = (host: HookHost, kind: HookKind, opts: Parameters<typeof delivery>[4] = {}) => {
  const d = delivery(host, kind, { url: PR[host], number: 7, head: 'fixloop/abc' }, 's3cret', opts)
  return readNews(host, new Headers(d.headers), JSON.parse(d.body))
}

describe('readNews: each host, each event', () => {
  const ROWS: [HookHost, HookKind, Parameters<typeof delivery>[4], unknown][] = []
  for (const host of ['github', 'gitea', 'gitlab'] as const) {
    ROWS.push([host, 'merged', {}, { kind: 'change', prUrl: PR[host], change: 'merged' }])
    ROWS.push([host, 'closed', {}, { kind: 'change', prUrl: PR[host], change: 'closed' }])
    ROWS.push([host, 'reopened', {}, { kind: 'change', prUrl: PR[host], change: 'reopened' }])
    ROWS.push([host, 'comment', { text: '/fixloop handle the empty cart' }, { kind: 'review', prUrl: PR[host], text: '/fixloop handle the empty cart', author: 'reviewer' }])
    ROWS.push([host, 'comment', { text: 'LGTM, thanks' }, null])
    ROWS.push([host, 'comment', { text: 'please /fixloop this' }, null])
  }
  ROWS.push(['github', 'changes_requested', { text: 'Use a guard clause' }, { kind: 'review', prUrl: PR.github, text: 'Use a guard clause', author: 'reviewer' }])
  ROWS.push(['gitea', 'changes_requested', { text: 'Use a guard clause' }, { kind: 'review', prUrl: PR.gitea, text: 'Use a guard clause', author: 'reviewer' }])
  ROWS.push(['gitlab', 'changes_requested', {}, { kind: 'review', prUrl: PR.gitlab, text: expect.stringContaining('requested changes'), author: 'reviewer' }])
  ROWS.push(['gitea', 'merged', { forgejo: true }, { kind: 'change', prUrl: PR.gitea, change: 'merged' }])
  // GitHub: only people with write access start an iteration.
  ROWS.push(['github', 'changes_requested', { association: 'NONE' }, null])
  ROWS.push(['github', 'comment', { text: '/fixloop do it', association: 'CONTRIBUTOR' }, null])
  ROWS.push(['github', 'comment', { text: '/fixloop do it', association: 'OWNER' }, { kind: 'review', prUrl: PR.github, text: '/fixloop do it', author: 'reviewer' }])
  for (const [host, kind, opts, expected] of ROWS) {
    test(`${host} ${kind} ${JSON.stringify(opts)} → ${expected ? (expected as { kind: string }).kind : 'nothing'}`, () => {
      expect(news(host, kind, opts)).toEqual(expected as never)
    })
  }

  test('malformed and other payloads read as nothing', () => {
    const gh = new Headers({ 'x-github-event': 'pull_request' })
    for (const body of [null, 1, 'x', [], {}, { action: 'closed' }, { action: 'closed', pull_request: [] }, { action: 'closed', pull_request: { html_url: 7 } }, { action: 'opened', pull_request: { html_url: PR.github } }]) {
      expect(readNews('github', gh, body)).toBeNull()
    }
    expect(readNews('github', new Headers({ 'x-github-event': 'push' }), { action: 'closed', pull_request: { html_url: PR.github, merged: true } })).toBeNull()
    expect(readNews('gitlab', new Headers({ 'x-gitlab-event': 'Merge Request Hook' }), { object_attributes: { url: PR.gitlab, action: 'update' } })).toBeNull()
    // An update whose reviewer already requested changes before (another field changed), or junk reviewers.
    const was = { id: 9, username: 'reviewer', state: 'requested_changes' }
    expect(readNews('gitlab', new Headers({ 'x-gitlab-event': 'Merge Request Hook' }), { object_attributes: { url: PR.gitlab, action: 'update' }, changes: { reviewers: { previous: [was], current: [was] } } })).toBeNull()
    for (const reviewers of [null, 'x', { current: 'x' }, { current: [null, 1, { state: 'approved', id: 1 }] }]) {
      expect(readNews('gitlab', new Headers({ 'x-gitlab-event': 'Merge Request Hook' }), { object_attributes: { url: PR.gitlab, action: 'update' }, changes: { reviewers } })).toBeNull()
    }
    expect(readNews('gitlab', new Headers({ 'x-gitlab-event': 'Note Hook' }), { object_attributes: { note: '/fixloop x', noteable_type: 'Issue' }, merge_request: { url: PR.gitlab } })).toBeNull()
  })

  test('review text is bounded', () => {
    const long = `/fixloop ${'a'.repeat(20_000)}`
    expect((news('gitlab', 'comment', { text: long }) as { text: string }).text.length).toBe(8000)
  })
})

describe('verifyDelivery and deliveryIdOf', () => {
  for (const host of ['github', 'gitea', 'gitlab'] as const) {
    test(`${host}: the right secret passes; a wrong one, none, or an altered body fails`, () => {
      const d = delivery(host, 'merged', { url: PR[host], number: 7, head: 'h' }, 's3cret')
      const raw = new TextEncoder().encode(d.body)
      expect(verifyDelivery(host, new Headers(d.headers), raw, 's3cret')).toBe(true)
      expect(verifyDelivery(host, new Headers(d.headers), raw, 's3cret!')).toBe(false)
      expect(verifyDelivery(host, new Headers(delivery(host, 'merged', { url: PR[host], number: 7, head: 'h' }, 's3cret', { sign: false }).headers), raw, 's3cret')).toBe(false)
      if (host !== 'gitlab') expect(verifyDelivery(host, new Headers(d.headers), new TextEncoder().encode(d.body + ' '), 's3cret')).toBe(false)
      expect(deliveryIdOf(host, new Headers(d.headers), raw)).toBe(d.id)
    })
  }
  test('without a delivery id, the body hash stands in; junk ids too', () => {
    const raw = new TextEncoder().encode('{}')
    expect(deliveryIdOf('gitlab', new Headers(), raw)).toMatch(/^sha256:[0-9a-f]{64}$/)
    expect(deliveryIdOf('github', new Headers({ 'x-github-delivery': 'a b\u0001' }), raw)).toMatch(/^sha256:/)
    expect(deliveryIdOf('github', new Headers({ 'x-github-delivery': 'x'.repeat(200) }), raw)).toMatch(/^sha256:/)
  })
  test('constantTimeEqual compares values of any length', () => {
    expect(constantTimeEqual('abc', 'abc')).toBe(true)
    expect(constantTimeEqual('abc', 'abcd')).toBe(false)
    expect(constantTimeEqual('', '')).toBe(true)
  })
})
