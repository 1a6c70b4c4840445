/**
 * Sends one message through an App's SMTP server with nodemailer. A transport per message (mails are rare:
 * one per resolved report) so changed settings apply at once and no connection idles between them.
 * Timeouts are short and one message has an overall deadline: a hung or trickling server costs one
 * attempt, never a stuck mailer. Every connection first passes
 * the SMTP address guard (smtp-guard.ts) and then goes to the very address it checked: nodemailer is
 * given that IP as its host (so it resolves nothing itself) and the configured name as the TLS server
 * name (SNI and certificate verification still use the real host name).
 */
import type { CheckedAddress } from '../../core/address-guard'
import { checkSmtpHost, smtpGuardRefusal, SMTP_HOST_UNRESOLVED } from './smtp-guard'
import type { SecretBox } from '../../core/crypto'
import type { SmtpRow } from './repo'
import { fromMailbox } from './address'

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
    /** The connection itself failed (refused, timed out): nothing reached the server, another address may be tried. */
    readonly notConnected = false,
  ) {
    super(message)
  }
}

const TIMEOUT_MS = 15_000
/**
 * The most one message may take, all addresses tried included. nodemailer's timeouts are idle timeouts: a
 * server that answers a line every few seconds and never finishes (an audit's did, for 150 s) kept the
 * instance's mailer, every App's mail, waiting on it. At the deadline the socket is destroyed: a failed
 * attempt, retried on the backoff like a server that is down.
 */
export const SEND_DEADLINE_MS = 45_000
/**
 * Errors of a connection that was never made, or of a server that never greeted: nothing was said to it.
 * A later socket error or timeout might follow a delivered message, so it never moves on to another address.
 */
const NOT_CONNECTED = /ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|EADDRNOTAVAIL/
const SETUP_TIMEOUTS = new Set(['CONNECT_TIMEOUT', 'GREETING_TIMEOUT'])

/**
 * Sends `mail`; throws MailError. A host the guard refuses is a failed attempt that is not permanent (the
 * settings or the DNS answer may be fixed, and a refused attempt connects nowhere): the mailer retries it
 * on its backoff, like a server that is down. The checked addresses are tried in resolver order, moving
 * on only when a connection could not be made (nothing was said to that server yet).
 */
export async function sendMail(box: SecretBox, smtp: SmtpRow, mail: OutgoingMail, { allowPrivate, deadlineMs = SEND_DEADLINE_MS }: { allowPrivate: boolean; deadlineMs?: number }): Promise<void> {
  const checked = await checkSmtpHost(smtp.host, allowPrivate)
  if (!checked.ok) throw new MailError(checked.why === 'refused' ? smtpGuardRefusal() : SMTP_HOST_UNRESOLVED, false)
  const name = smtp.host.replace(/^\[|\]$/g, '')
  // An IP literal has no name to verify a certificate against (Node's default); a name is kept for TLS.
  // node:net loaded here, not with the module: every command and server start paid ~4 ms CPU for it (core/node-http.ts).
  const { isIP } = await import('node:net')
  await sendVia(checked.addresses, isIP(name) ? undefined : name, box, smtp, mail, Date.now() + deadlineMs)
}

/** Tries the checked addresses in order, moving on only when nothing was said to the previous one. */
export async function sendVia(addresses: CheckedAddress[], servername: string | undefined, box: SecretBox, smtp: SmtpRow, mail: OutgoingMail, deadlineAt = Date.now() + SEND_DEADLINE_MS): Promise<void> {
  let last: MailError | undefined
  for (const { address } of addresses) {
    try {
      return await sendTo(address, servername, box, smtp, mail, deadlineAt)
    } catch (e) {
      last = e as MailError
      if (!(e instanceof MailError) || !e.notConnected) throw e
    }
  }
  throw last ?? new MailError('mail failed', false)
}

/**
 * nodemailer, loaded when the first mail is sent: evaluating it takes ~40 ms, which every CLI command and
 * server start paid although most never send a mail.
 */
const loadNodemailer = () => import('nodemailer').then((m) => m.default)

async function sendTo(address: string, servername: string | undefined, box: SecretBox, smtp: SmtpRow, mail: OutgoingMail, deadlineAt: number): Promise<void> {
  const left = deadlineAt - Date.now()
  if (left <= 0) throw new MailError(deadlineMessage(), false)
  const nodemailer = await loadNodemailer()
  // nodemailer's timeouts are idle ones; its abort signal closes the connection whatever the server does.
  const deadline = AbortSignal.timeout(left)
  const transport = nodemailer.createTransport({
    // The checked IP: nodemailer resolves nothing itself, so no second DNS answer is used.
    host: address,
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
    // The one mailbox of the setting, as an object: a string would be parsed as a list (address.ts fromMailbox).
    await transport.sendMail({ from: fromMailbox(smtp.from_address) ?? smtp.from_address, to: mail.to, subject: mail.subject, text: mail.text, headers: mail.headers, signal: deadline })
  } catch (e) {
    if (deadline.aborted) throw new MailError(deadlineMessage(), false)
    const err = e as { responseCode?: number; code?: string; command?: string; message?: string; timeoutType?: string }
    const permanent = refusedForGood(err)
    const notConnected = err.command === 'CONN' && (NOT_CONNECTED.test(`${err.code} ${err.message}`) || SETUP_TIMEOUTS.has(err.timeoutType ?? ''))
    throw new MailError(describe(err), permanent, notConnected)
  } finally {
    transport.close()
  }
}

/** SMTP commands whose answer is about this message: its recipient (RCPT TO) or its content (DATA). */
const ABOUT_THE_MESSAGE = new Set(['RCPT TO', 'DATA'])
/** Reply codes that ask for authentication (530 required, 535 refused, 538 needs encryption): settings, not the message. */
const AUTH_CODES = new Set([530, 535, 538])

/**
 * Whether retrying cannot help: a 5xx answer about the recipient or the message (550 no such mailbox, 552
 * too large, 554 refused as spam). A 5xx to the connection (a 554 greeting: too many connections, a
 * blocklisted address), to EHLO or MAIL FROM (the App's sender setting), or asking for authentication is
 * about the server or the App's settings, which change: those are failed attempts on the backoff like a
 * server that is down, so a reporter's mail is not given up at the first try while they are wrong.
 */
function refusedForGood(err: { responseCode?: number; code?: string; command?: string }): boolean {
  const code = err.responseCode
  if (typeof code !== 'number' || code < 500 || code >= 600) return false
  if (err.code === 'EAUTH' || AUTH_CODES.has(code)) return false
  return ABOUT_THE_MESSAGE.has(err.command ?? '')
}

const deadlineMessage = () => 'the SMTP server did not finish the message before its overall deadline'

/** A short reason for the outbox row and the dashboard: the code and SMTP answer, never the message. */
function describe(err: { responseCode?: number; code?: string; message?: string }): string {
  const parts = [err.code, err.responseCode ? String(err.responseCode) : undefined, err.message?.split('\n')[0]?.slice(0, 200)].filter(Boolean)
  return parts.join(' ') || 'mail failed'
}
