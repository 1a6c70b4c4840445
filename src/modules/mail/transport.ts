/**
 * Sends one message through an App's SMTP server with nodemailer. A transport per message (mails are rare:
 * one per resolved report) so changed settings apply at once and no connection idles between them.
 * Timeouts are short: a hung server costs one attempt, never a stuck mailer. Every connection first passes
 * the SMTP address guard (smtp-guard.ts) and then goes to the very address it checked: nodemailer is
 * given that IP as its host (so it resolves nothing itself) and the configured name as the TLS server
 * name (SNI and certificate verification still use the real host name).
 */
import net from 'node:net'
import nodemailer from 'nodemailer'
import { checkSmtpHost, SMTP_GUARD_REFUSAL, SMTP_HOST_UNRESOLVED } from './smtp-guard'
import type { SecretBox } from '../../core/crypto'
import type { SmtpRow } from './repo'

export interface OutgoingMail {
  to: string
  subject: string
  text: string
  headers: Record<string, string>
}

/** An SMTP failure; `permanent` for 5xx answers about the recipient or message (retrying cannot help). */
export class MailError extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
  ) {
    super(message)
  }
}

const TIMEOUT_MS = 15_000

/**
 * Sends `mail`; throws MailError. A host the guard refuses is a failed attempt that is not permanent (the
 * settings or the DNS answer may be fixed, and a refused attempt connects nowhere): the mailer retries it
 * on its backoff, like a server that is down.
 */
export async function sendMail(box: SecretBox, smtp: SmtpRow, mail: OutgoingMail, { allowPrivate }: { allowPrivate: boolean }): Promise<void> {
  const checked = await checkSmtpHost(smtp.host, allowPrivate)
  if (!checked.ok) throw new MailError(checked.why === 'refused' ? SMTP_GUARD_REFUSAL : SMTP_HOST_UNRESOLVED, false)
  const name = smtp.host.replace(/^\[|\]$/g, '')
  // An IP literal has no name to verify a certificate against (Node's default); a name is kept for TLS.
  const servername = net.isIP(name) ? undefined : name
  const transport = nodemailer.createTransport({
    host: checked.address.address,
    port: smtp.port,
    servername,
    tls: servername ? { servername } : undefined,
    secure: smtp.tls_mode === 'tls',
    requireTLS: smtp.tls_mode === 'starttls',
    ignoreTLS: smtp.tls_mode === 'none',
    auth: smtp.username ? { user: smtp.username, pass: smtp.password_sealed ? box.open(smtp.password_sealed).toString() : '' } : undefined,
    connectionTimeout: TIMEOUT_MS,
    greetingTimeout: TIMEOUT_MS,
    socketTimeout: TIMEOUT_MS,
    // No pool, no debug logging: the message and credentials never reach a log.
    logger: false,
    debug: false,
  })
  try {
    await transport.sendMail({ from: smtp.from_address, to: mail.to, subject: mail.subject, text: mail.text, headers: mail.headers })
  } catch (e) {
    const err = e as { responseCode?: number; code?: string; message?: string }
    const code = err.responseCode
    // 5xx on the envelope or data is the server refusing this message for good; auth and connection errors may heal.
    const permanent = typeof code === 'number' && code >= 500 && code < 600 && err.code !== 'EAUTH'
    throw new MailError(describe(err), permanent)
  } finally {
    transport.close()
  }
}

/** A short reason for the outbox row and the dashboard: the code and SMTP answer, never the message. */
function describe(err: { responseCode?: number; code?: string; message?: string }): string {
  const parts = [err.code, err.responseCode ? String(err.responseCode) : undefined, err.message?.split('\n')[0]?.slice(0, 200)].filter(Boolean)
  return parts.join(' ') || 'mail failed'
}
