/**
 * Which ID-token claims vouch for the email (src/modules/admins/oidc.ts `emailVerified`): `email_verified`
 * true from any provider; Entra ID's `xms_edov` (it sends no email_verified) from Entra ID's issuers only.
 * Entra cannot run here, so its side is this rule's; test/sso.test.ts proves through a real provider
 * (oidc-provider) that `xms_edov` from anything else signs nobody in.
 */
import { describe, expect, test } from 'bun:test'
import { emailVerified } from '../src/modules/admins/oidc'

const TENANT = '72f988bf-86f1-41af-91ab-2d7cd011db47'
const ENTRA = [`https://login.microsoftonline.com/${TENANT}/v2.0`, `https://login.microsoftonline.us/${TENANT}/v2.0`, `https://login.partner.microsoftonline.cn/${TENANT}/v2.0`]

describe('emailVerified', () => {
  test('email_verified true counts from any issuer; anything but a JSON true does not', () => {
    for (const iss of ['https://keycloak.example.com/realms/x', ENTRA[0]]) {
      expect(emailVerified({ iss, email_verified: true })).toBe(true)
      for (const v of ['true', 1, false, null, {}]) expect(emailVerified({ iss, email_verified: v })).toBe(false)
    }
  })

  test("Entra ID's xms_edov true counts, without email_verified, from Entra ID's issuers (the global, US Government and China clouds)", () => {
    for (const iss of ENTRA) {
      expect(emailVerified({ iss, xms_edov: true })).toBe(true)
      expect(emailVerified({ iss })).toBe(false)
      for (const v of [false, 'true', 1, null]) expect(emailVerified({ iss, xms_edov: v })).toBe(false)
      // An explicit email_verified false is not overridden.
      expect(emailVerified({ iss, email_verified: false, xms_edov: true })).toBe(false)
    }
  })

  test('xms_edov from any other issuer counts for nothing, including look-alikes of Entra ID', () => {
    for (const iss of [
      undefined,
      42,
      'http://127.0.0.1:4000',
      'https://keycloak.example.com/realms/x',
      'https://accounts.google.com',
      `http://login.microsoftonline.com/${TENANT}/v2.0`,
      `https://login.microsoftonline.com.evil.example/${TENANT}/v2.0`,
      `https://evil.example/login.microsoftonline.com/${TENANT}/v2.0`,
      `https://login.microsoftonline.com/${TENANT}/v2.0/`,
      `https://login.microsoftonline.com/${TENANT}/v2.0?x`,
      `https://login.microsoftonline.com/${TENANT}/`,
      `https://sts.windows.net/${TENANT}/`,
      'https://login.microsoftonline.com/common/v2.0',
      'https://login.microsoftonline.com/{tenantid}/v2.0',
      `https://login.microsoftonline.com/${TENANT}/v2.0\n`,
      `https://xlogin.microsoftonline.com/${TENANT}/v2.0`,
      `https://tenant.b2clogin.com/${TENANT}/v2.0`,
    ]) {
      expect(emailVerified({ iss, xms_edov: true })).toBe(false)
    }
  })
})
