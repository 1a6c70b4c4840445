/**
 * Standard Webhooks 1.0 signing: HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<body>", keyed with
 * the bytes the base64 part of the `whsec_` secret decodes to, sent as "v1,<base64>". During a rotation
 * window both the new and the old secret sign, space-separated, so receivers can switch at their pace.
 */
import { createHmac, randomBytes } from 'node:crypto'

/** 32 random bytes (the spec asks for 24-64), base64, with the `whsec_` prefix receivers expect. */
export function newWebhookSecret(): string {
  return 'whsec_' + randomBytes(32).toString('base64')
}

export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.replace(/^whsec_/, ''), 'base64')
}

export function signatureHeader(secrets: readonly string[], id: string, timestampSeconds: number, body: string): string {
  return secrets
    .map((s) => 'v1,' + createHmac('sha256', secretKey(s)).update(`${id}.${timestampSeconds}.${body}`).digest('base64'))
    .join(' ')
}
