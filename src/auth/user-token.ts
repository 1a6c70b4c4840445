/**
 * Private-mode user tokens (spec 5.1/5.2): HS256 JWTs signed with the App's decoded signing secret.
 * Verification accepts HS256 only, requires sub/app/iat/exp, `app` equal to the App of the public key,
 * exp in the future, iat not in the future (a few seconds of clock skew allowed), lifetime ≤ 24 h and
 * ctx an object of at most 2 KB JSON, no NUL or unpaired surrogate in sub or ctx. Any failure is 401 invalid_user_token.
 */
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose'
import { nulPath, NUL_MESSAGE } from '../core/nul'
import { isWellFormedDeep } from '../core/well-formed'
import { ApiError } from '../core/errors'
import { LIMITS, jsonByteLength } from '../core/limits'

/** Seconds of clock skew tolerated on `iat` between the customer's server and ours. */
export const IAT_SKEW_SECONDS = 5

export interface UserIdentity {
  sub: string
  ctx: Record<string, unknown> | undefined
}

function reject(reason: string): never {
  throw new ApiError('invalid_user_token', { reason })
}

export async function verifyUserToken(token: string, appId: string, secret: Uint8Array, nowMs: number): Promise<UserIdentity> {
  let payload: Record<string, unknown>
  try {
    const result = await jwtVerify(token, secret, {
      algorithms: ['HS256'],
      currentDate: new Date(nowMs),
      requiredClaims: ['sub', 'iat', 'exp'],
    })
    payload = result.payload as Record<string, unknown>
  } catch (e) {
    if (e instanceof joseErrors.JWTExpired) reject('expired')
    if (e instanceof joseErrors.JOSEAlgNotAllowed || e instanceof joseErrors.JOSENotSupported) reject('algorithm not allowed')
    if (e instanceof joseErrors.JWSSignatureVerificationFailed) reject('bad signature')
    if (e instanceof joseErrors.JWTClaimValidationFailed) reject(`claim ${e.claim}: ${e.reason}`)
    reject('malformed token')
  }
  const { sub, app, iat, exp, ctx } = payload
  const nowS = Math.floor(nowMs / 1000)
  if (typeof sub !== 'string' || sub.length === 0) reject('sub must be a non-empty string')
  // The same bound as the mint route's `sub` and a public report's externalUserId: one reporter id, one limit.
  if (sub.length > LIMITS.reporterIdMax) reject(`sub must be at most ${LIMITS.reporterIdMax} characters`)
  if (app !== appId) reject('app claim does not match the App of the public key')
  if (typeof iat !== 'number' || typeof exp !== 'number') reject('iat and exp must be numbers')
  if (iat > nowS + IAT_SKEW_SECONDS) reject('iat is in the future')
  if (exp <= nowS) reject('expired')
  if (exp - iat > LIMITS.tokenLifetimeMax) reject('lifetime exceeds 24 hours')
  if (ctx !== undefined && (ctx === null || typeof ctx !== 'object' || Array.isArray(ctx))) reject('ctx must be a JSON object')
  if (ctx !== undefined && jsonByteLength(ctx) > LIMITS.tokenCtxMaxBytes) reject('ctx exceeds 2 KB')
  // The claims are stored with the report: NUL is refused as in any other input (core/nul.ts).
  if (nulPath(sub) || nulPath(ctx)) reject(`sub and ctx ${NUL_MESSAGE}`)
  // An unpaired surrogate is not made U+FFFD here, as in a body: `sub` names the end user, and "\ud800",
  // "\udfff" and "\ufffd" would become one identity, each seeing the others' reports (core/well-formed.ts).
  if (!isWellFormedDeep(sub) || !isWellFormedDeep(ctx)) reject('sub and ctx must be well-formed Unicode (no unpaired surrogate)')
  return { sub, ctx: ctx as Record<string, unknown> | undefined }
}

export async function mintUserToken(
  appId: string,
  secret: Uint8Array,
  sub: string,
  ctx: Record<string, unknown> | undefined,
  lifetimeSeconds: number,
  nowMs: number,
): Promise<string> {
  const iat = Math.floor(nowMs / 1000)
  const claims: Record<string, unknown> = { app: appId }
  if (ctx !== undefined) claims.ctx = ctx
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(sub)
    .setIssuedAt(iat)
    .setExpirationTime(iat + lifetimeSeconds)
    .sign(secret)
}
