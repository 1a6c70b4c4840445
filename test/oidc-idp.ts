/**
 * A real OpenID provider for the single sign-on tests: `oidc-provider` (the certified Node.js
 * implementation) on loopback, with one confidential client and three users. Its dev interactions
 * (a login form taking any password) stand in for the provider's own sign-in page.
 *
 * `clockOffsetMs`: the provider's clock, ahead (or behind, negative) of this machine's while it answers a
 * request: a sign-in made with -10 minutes leaves a provider session (and a later `auth_time` from it)
 * ten minutes old, as a person who signed in at the provider earlier has. Only while the provider
 * answers: the browser's cookie jar (Playwright, in this process) keeps the real time.
 *
 * Logout: RP-initiated logout (oidc-provider's `rpInitiatedLogout`, on by default: `end_session_endpoint`
 * in discovery, a "Do you want to sign-out" page, then back to a registered `post_logout_redirect_uri`),
 * with fixloop's sign-in page (the redirect URI's origin + /admin) registered; `{ endSession: false }`
 * turns it off, for a provider without one.
 *
 * `tamper`: when set, the ID token of the next token responses is re-signed with the provider's own key
 * after `tamper` changed its claims: a token the provider could have issued (valid signature) with a
 * wrong audience, an expiry in the past or another nonce.
 */
import Provider from 'oidc-provider'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { decodeJwt, exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose'
import { freePort } from './harness'

export interface TestIdp {
  issuer: string
  clientId: string
  clientSecret: string
  tamper: ((claims: JWTPayload) => JWTPayload) | undefined
  /** With `tamper`: sign with a key of the same kid that is not the provider's (a forged signature). */
  forgeSignature: boolean
  /** The provider's clock offset from this machine's (ms), while it answers a request. */
  clockOffsetMs: number
  /** Token requests (code redemptions) the provider was sent. */
  tokenRequests: number
  /**
   * Closes, unanswered, a connection that brings a second back-channel request (discovery, token, JWKS:
   * what the relying party fetches): a provider or proxy whose idle timeout ended a kept-alive connection
   * as the client sent its next request down it. The browser's requests are left alone.
   */
  dropReusedBackChannel: boolean
  close(): Promise<void>
}

/**
 * login → claims. `alice` matches the admin the tests create; `unverified` has that email unverified; `stranger` is no admin;
 * `bob` is another admin (the re-authentication tests: someone else's login at the provider).
 */
export const IDP_USERS: Record<string, { email: string; email_verified: boolean; name: string }> = {
  alice: { email: 'Alice@Example.com', email_verified: true, name: 'Alice' },
  unverified: { email: 'alice@example.com', email_verified: false, name: 'Mallory' },
  stranger: { email: 'stranger@example.com', email_verified: true, name: 'Stranger' },
  bob: { email: 'bob@example.com', email_verified: true, name: 'Bob' },
}

const REAL_DATE_NOW = Date.now

export async function startIdp(redirectUri: string, options: { endSession?: boolean } = {}): Promise<TestIdp> {
  const port = await freePort()
  const issuer = `http://127.0.0.1:${port}`
  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  const { privateKey: foreignKey } = await generateKeyPair('RS256')
  const kid = 'test-key-1'
  const jwk = { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' }
  const clientId = 'fixloop-test'
  const clientSecret = 'a-client-secret-for-tests-only-0123456789'
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        post_logout_redirect_uris: [new URL('/admin', redirectUri).href],
        response_types: ['code'],
        grant_types: ['authorization_code'],
        token_endpoint_auth_method: 'client_secret_post',
        // auth_time in every ID token, as Keycloak and Entra ID send it: a flow that does not force a new
        // login then carries the time of the earlier one (test/sso-reauth.test.ts).
        require_auth_time: true,
      },
    ],
    jwks: { keys: [jwk as never] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    // The email claims go in the ID token itself, as Keycloak, Authentik and Google send them.
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: options.endSession ?? true } },
    async findAccount(_ctx: unknown, id: string) {
      const user = IDP_USERS[id]
      return user ? { accountId: id, claims: async () => ({ sub: id, ...user }) } : undefined
    },
    // Consent is given once and for all (the tests are about fixloop, not the provider's consent page).
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async loadExistingGrant(ctx: any) {
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client!.clientId, accountId: ctx.oidc.session!.accountId! })
      grant.addOIDCScope('openid email profile')
      await grant.save()
      return grant
    },
  })
  // Quiet: a refused code or a bad request is what several tests are about.
  provider.on('server_error', () => {})
  const handle = provider.callback()
  const idp: TestIdp = { issuer, clientId, clientSecret, tamper: undefined, forgeSignature: false, clockOffsetMs: 0, tokenRequests: 0, dropReusedBackChannel: false, close: async () => {} }
  // Date.now is this process's, shared with the test files a `bun test --no-isolate` worker runs after
  // this one: a response whose 'finish' or 'close' never came left it shifted, and restored later (its
  // socket closing) it jumped under another file's deadlines (a CI run's agent-outage saw its 30 s wait
  // end at once: the clock had come 10 minutes forward). Setting the offset back to 0, and closing the
  // provider, put the real clock back at once.
  let clockOffset = 0
  Object.defineProperty(idp, 'clockOffsetMs', {
    get: () => clockOffset,
    set: (ms: number) => {
      clockOffset = ms
      if (ms === 0) Date.now = REAL_DATE_NOW
    },
    enumerable: true,
  })

  const usedSockets = new WeakSet<object>()
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const reused = usedSockets.has(req.socket)
    usedSockets.add(req.socket)
    if (idp.dropReusedBackChannel && reused && /^\/(\.well-known\/|token|jwks)/.test(req.url ?? '')) return void req.socket.destroy()
    const offset = idp.clockOffsetMs
    if (offset !== 0) {
      // oidc-provider reads Date.now() for every time it writes (the session's login time, iat, exp).
      Date.now = () => REAL_DATE_NOW() + offset
      const restore = () => void (Date.now = REAL_DATE_NOW)
      res.once('finish', restore)
      res.once('close', restore)
    }
    if (req.method === 'POST' && req.url?.startsWith('/token')) idp.tokenRequests++
    const tamper = idp.tamper
    if (!tamper || req.method !== 'POST' || !req.url?.startsWith('/token')) return void handle(req, res)
    // Re-sign the ID token of this token response with the provider's key after changing its claims.
    const end = res.end.bind(res)
    let body = ''
    res.write = ((chunk: unknown) => ((body += String(chunk)), true)) as never
    res.end = ((chunk?: unknown) => {
      if (chunk) body += String(chunk)
      void (async () => {
        try {
          const json = JSON.parse(body) as { id_token?: string }
          if (json.id_token) {
            const claims = tamper(decodeJwt(json.id_token))
            json.id_token = await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' }).sign(idp.forgeSignature ? foreignKey : privateKey)
            body = JSON.stringify(json)
          }
        } catch {
          // not JSON: pass it on
        }
        res.setHeader('content-length', Buffer.byteLength(body))
        end(body)
      })()
      return res
    }) as never
    handle(req, res)
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  idp.close = () => {
    Date.now = REAL_DATE_NOW
    return new Promise<void>((resolve) => server.close(() => resolve()))
  }
  return idp
}
