/**
 * Signing out of a single sign-on session asks the provider's discovery document for its logout endpoint
 * (src/modules/admins/oidc.ts `endSessionUrl`). The session is already ended by then; when the document is
 * not at hand (the server restarted while the provider is down, or slow), the sign-out waits at most
 * SIGN_OUT_DISCOVERY_WAIT_MS and signs out locally, instead of the 10 s discovery timeout.
 */
import { afterAll, expect, test } from 'bun:test'
import { createServer, type Server, type Socket } from 'node:net'
import { createOidcRelyingParty, SIGN_OUT_DISCOVERY_WAIT_MS } from '../src/modules/admins/oidc'
import { systemClock } from '../src/core/clock'
import { startIdp, type TestIdp } from './oidc-idp'

let silent: Server | undefined
const held: Socket[] = []
let idp: TestIdp | undefined

afterAll(async () => {
  for (const s of held) s.destroy()
  silent?.close()
  await idp?.close()
})

const ssoAt = (issuer: string) => ({
  issuer,
  clientId: 'fixloop',
  clientSecret: 'a client secret of the test',
  redirectUri: 'http://127.0.0.1:9/admin/oidc/callback',
  postLogoutRedirectUri: 'http://127.0.0.1:9/admin',
})

test('a provider that accepts the connection and never answers: the sign-out is local after the short wait, not the discovery timeout', async () => {
  let asked = 0
  silent = createServer((socket) => {
    asked++
    held.push(socket) // read nothing, answer nothing
  })
  await new Promise<void>((r) => silent!.listen(0, '127.0.0.1', r))
  const port = (silent.address() as { port: number }).port
  const rp = createOidcRelyingParty(ssoAt(`http://127.0.0.1:${port}`), systemClock)
  const started = performance.now()
  expect(await rp.endSessionUrl('an id token')).toBeUndefined()
  const took = performance.now() - started
  expect(asked).toBe(1) // it did ask the provider
  expect(took).toBeGreaterThanOrEqual(SIGN_OUT_DISCOVERY_WAIT_MS - 50)
  expect(took).toBeLessThan(8_000) // the discovery's own timeout is 10 s
  // A second sign-out meanwhile waits on the same discovery (no second request), again only the short wait.
  expect(await rp.endSessionUrl('another id token')).toBeUndefined()
  expect(asked).toBe(1)
}, 30_000)

test('a provider that answers: the logout URL is its end_session_endpoint with the hint, the return address and the client', async () => {
  idp = await startIdp('http://127.0.0.1:9/admin/oidc/callback')
  const rp = createOidcRelyingParty({ ...ssoAt(idp.issuer), clientId: idp.clientId, clientSecret: idp.clientSecret }, systemClock)
  const url = new URL((await rp.endSessionUrl('the id token'))!)
  const discovery = (await (await fetch(idp.issuer + '/.well-known/openid-configuration')).json()) as { end_session_endpoint: string }
  expect(url.origin + url.pathname).toBe(discovery.end_session_endpoint)
  expect(url.searchParams.get('id_token_hint')).toBe('the id token')
  expect(url.searchParams.get('post_logout_redirect_uri')).toBe('http://127.0.0.1:9/admin')
  expect(url.searchParams.get('client_id')).toBe(idp.clientId)
}, 30_000)
